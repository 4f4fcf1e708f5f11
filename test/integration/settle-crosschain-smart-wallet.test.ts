import {
  createPublicClient,
  http,
  isErc6492Signature,
  parseEventLogs,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from 'viem';
import type { SmartAccount } from 'viem/account-abstraction';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { DEVNET_BRIDGE_TRANSMITTER_ADDRESS, DEVNET_WALLET_FACTORY_ADDRESS } from '../../src/chains/devnet-addresses';
import { facilitatorAbi, messageTransmitterV2Abi, tokenAbi } from '../../src/chains/evm/abi';
import { BridgeTransfer } from '../../src/db/bridge-transfer';
import { RelayerTransaction } from '../../src/db/entities';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { smartWallets } from '../support/smart-wallets';

/**
 * Cross-chain EIP-3009 from a counterfactual smart wallet (EIP-6492): the buyer's viem smart account
 * signs on base-sepolia for the seller's optimism-sepolia payout while its wallet has no code. Our
 * relayer deploys the wallet through the listed factory under `<workflowId>:deploy` before the burn
 * (activities/crosschain.ts submitBridgeBurn), then burns under `<workflowId>:burn`; the stack's
 * attester double attests and the destination mints and pays out once, also across a worker SIGKILL
 * taken while the deployment was in the mempool.
 */
jest.setTimeout(240_000);

const OPTIMISM_SEPOLIA = 11155420;
const VALUE = 2_000_000n;
const BRIDGE_FEE = 0n; // a standard transfer: the attester double executes no fee, as Circle's
const PLATFORM_FEE = 20_000n; // the organization's 100 bps of the signed value
const PAYOUT = VALUE - BRIDGE_FEE - PLATFORM_FEE;

describe.each(oneDbKind('sqlite'))('cross-chain settlement from a counterfactual smart wallet (%s)', (kind) => {
  let h: SettleHarness;
  let dest: PublicClient;
  let wallets: ReturnType<typeof smartWallets>;
  let sourceRpc: string;
  const relayer = TEST_ACCOUNTS.relayers[3];

  beforeAll(async () => {
    const stack = (await import('../support/stack-info')).readStackInfo();
    h = await startSettleHarness(kind, {
      relayerIndex: 3,
      platformFeeBps: 100,
      env: { BRIDGE_ATTESTATION_URL: stack.bridgeAttestationUrl!, SETTLE_WAIT_MS: '1500', RECEIPT_WAIT_MS: '5000' },
    });
    dest = createPublicClient({ transport: http(stack.chains['optimism-sepolia'].rpcUrl) });
    wallets = smartWallets(h);
    sourceRpc = stack.chains['base-sepolia'].rpcUrl;
  });
  afterAll(async () => {
    await rpc(sourceRpc, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
  });

  const pay = (account: SmartAccount) =>
    h.pay(account as unknown as LocalAccount, {
      value: VALUE,
      extra: { name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA },
    });
  const destBalance = (who: Address) => dest.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
  /** BridgeBurned events of the source facilitator for this payer's authorization nonce. */
  const burns = async (from: Address, nonce: Hex) => {
    const logs = await h.chain.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'BridgeBurned' }).filter(
      (l) => l.args.from.toLowerCase() === from.toLowerCase() && l.args.nonce === nonce,
    );
  };
  /** Messages the destination's MessageTransmitterV2 received with this bridge nonce, and the payouts of them. */
  const deliveries = async (bridgeNonce: string | null | undefined) => {
    const [received, paid] = await Promise.all([
      dest.getLogs({ address: DEVNET_BRIDGE_TRANSMITTER_ADDRESS, fromBlock: 0n, toBlock: 'latest' }),
      dest.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' }),
    ]);
    return {
      mints: parseEventLogs({ abi: messageTransmitterV2Abi, logs: received, eventName: 'MessageReceived' }).filter(
        (l) => l.args.sourceDomain === 6 && l.args.nonce === bridgeNonce,
      ).length,
      payouts: parseEventLogs({ abi: facilitatorAbi, logs: paid, eventName: 'BridgePayout' }).filter(
        (l) => l.args.sourceDomain === 6 && l.args.bridgeNonce === bridgeNonce,
      ).length,
    };
  };
  const delivered = (settlementId: string) =>
    waitUntil(
      'the bridge leg to be delivered',
      async () => {
        const row = await h.tdb.db.em.fork().findOne(BridgeTransfer, { settlementId });
        return row?.state === 'delivered' ? row : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  const relayerRecords = (workflowId: string) =>
    h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${workflowId}:%` } }, { orderBy: { nonce: 'asc' } });
  const paidAnswer = (payer: Address) => ({
    status: 200,
    body: { success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'base-sepolia', payer },
  });

  test('our relayer deploys the wallet through the listed factory, then burns; the destination mints and pays out once', async () => {
    const { account } = await wallets.fresh();
    const body = await pay(account);
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', account.address, nonce);
    expect(isErc6492Signature(body.paymentPayload.payload.signature)).toBe(true);
    expect(await wallets.hasCode(account.address)).toBe(false);
    const [walletBefore, payoutBefore, relayerNonce, relayerDestNonce] = await Promise.all([
      h.balanceOf(account.address),
      destBalance(h.payout),
      h.chain.getTransactionCount({ address: relayer.address }),
      dest.getTransactionCount({ address: relayer.address }),
    ]);

    const res = await h.settleUntilFinal(body);

    expect({ status: res.status, body: res.body }).toEqual(paidAnswer(account.address));
    expect(await wallets.hasCode(account.address)).toBe(true);
    expect(await h.balanceOf(account.address)).toBe(walletBefore - VALUE);
    const records = await relayerRecords(workflowId);
    expect(records.map((r) => [r.id, r.status])).toEqual([
      [`${workflowId}:deploy`, 'mined'],
      [`${workflowId}:burn`, 'mined'],
    ]);
    expect(records[1]!.hash).toBe(res.body.transaction);
    const deployment = await h.chain.getTransactionReceipt({ hash: records[0]!.hash as Hex });
    expect(deployment.to?.toLowerCase()).toBe(DEVNET_WALLET_FACTORY_ADDRESS.toLowerCase());
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonce + 2);
    expect(await burns(account.address, nonce)).toHaveLength(1);

    const transfer = await delivered(workflowId);
    expect(transfer).toMatchObject({ sourceTx: res.body.transaction, bridgeFee: BRIDGE_FEE.toString(), payoutAmount: PAYOUT.toString() });
    expect(await deliveries(transfer.bridgeNonce)).toEqual({ mints: 1, payouts: 1 });
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
    expect(await dest.getTransactionCount({ address: relayer.address })).toBe(relayerDestNonce + 1);

    const repeat = await h.settle(body);
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: res.body });
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonce + 2);
  });

  test('worker SIGKILLed after the deployment was broadcast: one deployment, one burn, one mint', async () => {
    const { account } = await wallets.fresh();
    const body = await pay(account);
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', account.address, nonce);
    const [walletBefore, payoutBefore, relayerNonce, relayerDestNonce] = await Promise.all([
      h.balanceOf(account.address),
      destBalance(h.payout),
      h.chain.getTransactionCount({ address: relayer.address }),
      dest.getTransactionCount({ address: relayer.address }),
    ]);

    await rpc(sourceRpc, 'evm_setAutomine', [false]);
    const pending = await h.settle(body); // the worker records and broadcasts the deployment, then waits for it
    expect(pending.status).toBe(202);
    const deployTx = await waitUntil(
      'the deployment recorded',
      async () => (await h.tdb.db.em.fork().findOne(RelayerTransaction, { id: `${workflowId}:deploy` })) ?? undefined,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    await waitUntil(
      'the deployment in the mempool',
      async () => (await h.chain.getTransaction({ hash: deployTx.hash as Hex }).catch(() => undefined)) ?? undefined,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(await wallets.hasCode(account.address)).toBe(false);

    const killed = h.worker.child.pid!;
    await h.restartWorker({
      kill: true,
      whileDown: async () => {
        await rpc(sourceRpc, 'evm_mine', []); // the deployment is mined while no worker runs
        await rpc(sourceRpc, 'evm_setAutomine', [true]);
      },
    });
    expect(() => process.kill(killed, 0)).toThrow();
    // The killed attempt of submitBridgeBurn is retried once its start-to-close timeout (60 s) has passed.
    const final = await h.settleUntilFinal(body, 150_000);

    expect({ status: final.status, body: final.body }).toEqual(paidAnswer(account.address));
    const records = await relayerRecords(workflowId);
    expect(records.map((r) => [r.id, r.hash, r.status])).toEqual([
      [`${workflowId}:deploy`, deployTx.hash, 'mined'],
      [`${workflowId}:burn`, final.body.transaction, 'mined'],
    ]);
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonce + 2);
    expect(await burns(account.address, nonce)).toHaveLength(1);
    expect(await h.balanceOf(account.address)).toBe(walletBefore - VALUE);

    const transfer = await delivered(workflowId);
    expect(await deliveries(transfer.bridgeNonce)).toEqual({ mints: 1, payouts: 1 });
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
    expect(await dest.getTransactionCount({ address: relayer.address })).toBe(relayerDestNonce + 1);
  });
});
