import { WorkflowUpdateStage } from '@temporalio/client';
import { createPublicClient, createWalletClient, http, parseEventLogs, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { attesterChainsFrom, startBridgeAttester, type BridgeAttester } from '../../devnet/bridge-attester';
import { waitUntil } from '../../devnet/process';
import { startRpcProviderDouble, type RpcProviderDouble } from '../../devnet/rpc-provider-double';
import { mainnetDevnetEnv } from '../../devnet/start-topup';
import { BridgeTransfer } from '../../src/db/bridge-transfer';
import { RelayerTransaction, TopUp } from '../../src/db/entities';
import { X402State } from '../../src/temporal/search-attributes';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { OPERATOR_ACTIONS_MEMO, refundTopUpUpdate } from '../../workflows/operator-actions';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { waitForReceipt } from '../support/evm';
import { HOLD_BROADCASTS, heldBroadcast, updateEvents } from '../support/held-broadcasts';
import { opsCli } from '../support/ops-cli';
import { exactPayment } from '../support/payments';
import { startTopupHarness, type TopupHarness } from '../support/topup-harness';
import { facilitatorAbi, tokenAbi } from '../../src/chains/evm/abi';

/**
 * Operator actions on a cross-chain top-up in `needs_review` (README "For operators"), on the real
 * stack: the attester double signs with another key, so the bridge leg's mint would revert and the
 * top-up waits for an operator. `npm run ops` (the CLI, as a process) retries it once the attester is
 * fixed, and a refund accepted and in flight when the worker is SIGKILLed (the provider double holds its
 * broadcast on Base) still pays the payer exactly once.
 */
const FEE_FIXED = 10_000n;
const FEE_BPS = 30n;
const fee = (gross: bigint) => FEE_FIXED + (gross * FEE_BPS) / 10_000n;
/** The bridge's fee of a standard transfer: none (Circle charges fast transfers only; so does the devnet's attester). */
const BRIDGE_FEE = 0n;
/** The quoted bridge fee: TOPUP_BRIDGE_FEE_FALLBACK 50,000 + 20 % buffer. */
const QUOTED_BRIDGE_FEE = 60_000n;
const OPTIMISM_DOMAIN = 2;

describe.each(oneDbKind('sqlite'))('operator actions on a needs_review top-up (%s)', (kind) => {
  let h: TopupHarness;
  let attester: BridgeAttester;
  let op: PublicClient;
  let provider: RpcProviderDouble;

  beforeAll(async () => {
    const stack = (await import('../support/stack-info')).readStackInfo();
    const chains = mainnetDevnetEnv(stack.chains.base.rpcUrl, stack.chains.optimism.rpcUrl);
    attester = await startBridgeAttester({
      chains: attesterChainsFrom({ ...chains, RPC_URLS_BASE_SEPOLIA: 'none', RPC_URLS_OPTIMISM_SEPOLIA: 'none' }),
    });
    provider = await startRpcProviderDouble({ upstream: stack.chains.base.rpcUrl });
    h = await startTopupHarness(kind, {
      relayerIndex: 2,
      env: {
        ...chains,
        RPC_URLS_BASE: provider.url, // Base through the provider double
        TOPUP_SOURCES: 'base,optimism',
        BRIDGE_ATTESTATION_URL: attester.url,
        TOPUP_WAIT_MS: '1500',
        TOPUP_RETRY_AFTER_SECONDS: '2',
        RECEIPT_WAIT_MS: '3000',
      },
    });
    op = createPublicClient({ transport: http(stack.chains.optimism.rpcUrl) }) as PublicClient;
  });
  afterAll(async () => {
    await h?.close();
    await attester?.stop();
    await provider?.stop();
  });
  afterEach(() => {
    attester.attestWith();
    provider.setRules([]);
  });

  const ops = (...args: string[]) => opsCli(h.stack.temporalAddress)(...args);

  /** A fresh payer with USDC on optimism whose top-up ends in needs_review (an attestation the transmitter refuses). */
  const needsReview = async (gross: bigint) => {
    const payer = privateKeyToAccount(generatePrivateKey());
    const opChain = {
      id: 10,
      name: 'optimism-devnet',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [h.stack.chains.optimism.rpcUrl] } },
    } as const;
    const funder = createWalletClient({
      account: TEST_ACCOUNTS.buyers[0],
      chain: opChain,
      transport: http(h.stack.chains.optimism.rpcUrl),
    });
    await waitForReceipt(
      op,
      await funder.writeContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'transfer', args: [payer.address, gross] }),
    );
    const body = await exactPayment({
      buyer: payer,
      network: 'optimism',
      chainId: 10,
      usdc: h.stack.usdc,
      facilitator: h.stack.facilitator,
      value: gross,
      extra: { name: 'USDC', version: '2', destinationChainId: 8453 },
    });
    const header = Buffer.from(JSON.stringify(body.paymentPayload)).toString('base64');
    attester.attestWith(generatePrivateKey());
    const { final, before: interim } = await h.repeatUntil(header, 500, 60_000);
    // Every answer before the final 500 (needs_review) was 503 (bridging).
    expect(interim.filter((s) => s !== 503)).toEqual([]);
    expect(final.body).toMatchObject({ state: 'needs_review', errorReason: 'needs_review', fillTx: null, depositTx: null });
    const id: string = final.body.topupId;
    const settlementId = settleWorkflowId('optimism', payer.address, body.paymentPayload.payload.authorization.nonce);
    return { payer, header, id, settlementId, settlementTx: final.body.settlementTx as string };
  };
  const payoutsOn = async (bridgeNonce: string) => {
    const logs = await h.chain.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'BridgePayout' }).filter(
      (l) => l.args.sourceDomain === OPTIMISM_DOMAIN && l.args.bridgeNonce === bridgeNonce,
    );
  };
  const rowOf = async (id: string) => (await h.tdb.db.em.fork().findOne(TopUp, { id }))!;

  test('ops list shows it; ops retry-deposit after the attester is fixed: one mint, one deposit of the exact net; a repeat is refused (exit 2)', async () => {
    const gross = 3_000_000n;
    const net = gross - fee(gross) - BRIDGE_FEE;
    const t = await needsReview(gross);
    const relayerBefore = await h.usdcOf(h.relayer.address);
    const bridge = (await h.tdb.db.em.fork().findOne(BridgeTransfer, { settlementId: t.settlementId }))!;
    expect(bridge).toMatchObject({ state: 'needs_review', mintTx: null });

    const codes: number[] = [];
    const listed = await waitUntil(
      'ops list to show the top-up',
      async () => {
        const r = await ops('list', '--kind', 'topup');
        codes.push(r.code);
        return r.out.includes(t.id) ? r : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(codes.filter((c) => c !== 0)).toEqual([]); // every listing succeeded, not only the last
    expect(listed.out).toContain(`query: ExecutionStatus = "Running" AND X402State = 'needs_review' AND X402Kind = 'topup'`);
    expect(listed.out).toMatch(new RegExp(`${t.id}\\ttopup\\tneeds_review\\toptimism\\t${t.payer.address.toLowerCase()}\\t`));

    // Missing reason: a usage error, nothing sent.
    const usage = await ops('retry-deposit', '--workflow-id', t.id, '--operator', 'alice');
    expect(usage.code).toBe(1);
    expect(usage.out).toContain('--reason is required');

    attester.attestWith(); // the attester signs with the bridge's key again
    const retried = await ops(
      'retry-deposit',
      '--workflow-id',
      t.id,
      '--operator',
      'alice',
      '--reason',
      'attester key rotated back (INC-7)',
    );
    expect(retried.out).toContain(`${t.id} is needs_review; sending retry-deposit (operator alice: attester key rotated back (INC-7))`);
    expect(retried.out).toContain('accepted (update ');
    expect(retried.out).toContain('done: {"state":"deposited","operatorActions":[{"action":"retry-deposit","operator":"alice"');
    expect(retried.code).toBe(0);

    const record = await h.get(`/v1/demo-merchant/topups/${t.id}`);
    expect(record.body).toMatchObject({
      state: 'deposited',
      netAmount: net.toString(),
      settlementTx: t.settlementTx,
      fillTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      depositTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(await h.depositedEvents(t.payer.address)).toEqual([net]);
    expect(await h.merchantBalance(t.payer.address)).toBe(net);
    expect(await h.usdcOf(h.relayer.address)).toBe(relayerBefore); // delivered and deposited: the relayer keeps nothing
    const payouts = await payoutsOn(bridge.bridgeNonce!);
    expect(payouts.map((p) => [p.transactionHash, p.args.payout])).toEqual([[record.body.fillTx, h.relayer.address]]);
    const row = await rowOf(t.id);
    expect({ operator: row.operator, operatorReason: row.operatorReason }).toEqual({
      operator: 'alice',
      operatorReason: 'retry-deposit: attester key rotated back (INC-7)',
    });

    const again = await ops('retry-deposit', '--workflow-id', t.id, '--operator', 'alice', '--reason', 'again');
    expect(again.code).toBe(2);
    expect(again.out).toContain(`refused: ${t.id} is completed (state deposited): it waits for no action`);
    expect(await h.depositedEvents(t.payer.address)).toEqual([net]);
    expect(await payoutsOn(bridge.bridgeNonce!)).toHaveLength(1);
  });

  test('refund: accepted, the worker SIGKILLed at once, the payer still gets the quoted net on Base exactly once; a repeat is refused', async () => {
    const gross = 2_000_000n;
    const owed = gross - fee(gross) - QUOTED_BRIDGE_FEE;
    const t = await needsReview(gross);
    // The bridge paid the relayer nothing: it advances the refund from its float on Base.
    await waitForReceipt(
      h.chain,
      await h.walletOf(TEST_ACCOUNTS.buyers[0]).writeContract({
        address: h.stack.usdc,
        abi: tokenAbi,
        functionName: 'transfer',
        args: [h.relayer.address, owed],
        chain: undefined,
        account: TEST_ACCOUNTS.buyers[0],
      }),
    );
    const payerBefore = await h.usdcOf(t.payer.address);
    const relayerBefore = await h.usdcOf(h.relayer.address);
    const relayerNonce = await h.chain.getTransactionCount({ address: h.relayer.address, blockTag: 'pending' });

    // The refund's broadcast is held: the worker is killed with the refund signed and recorded, not on the node.
    provider.setRules(HOLD_BROADCASTS);
    const handle = h.temporal.workflow.getHandle(t.id);
    const update = await handle.startUpdate(refundTopUpUpdate, {
      args: [{ operator: 'bob', reason: 'bridge message lost (INC-9)' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    const sent = await heldBroadcast(provider);
    const killed = h.worker.child.pid!;
    await h.restartWorker({
      kill: true,
      whileDown: async () => {
        expect(() => process.kill(killed, 0)).toThrow();
        // The action was unfinished at the kill: accepted, not completed, and nothing moved on chain.
        expect(await updateEvents(handle, update.updateId)).toEqual({ accepted: true, completed: false });
        await expect(h.chain.getTransaction({ hash: sent })).rejects.toThrow();
        expect(await h.chain.getTransactionCount({ address: h.relayer.address, blockTag: 'pending' })).toBe(relayerNonce);
        expect(await h.usdcOf(t.payer.address)).toBe(payerBefore);
        provider.setRules([]);
      },
    });

    expect(await update.result()).toMatchObject({ state: 'refunded', errorReason: 'deposit_failed' });
    const record = await h.get(`/v1/demo-merchant/topups/${t.id}`, { as: t.payer });
    expect(record.body).toMatchObject({
      state: 'refunded',
      errorReason: 'deposit_failed',
      refundTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      depositTx: null,
      fillTx: null,
      error: expect.stringMatching(/refunded to the payer after operator review$/),
    });
    expect(await h.post({}, t.header)).toMatchObject({ status: 409, body: { topupId: t.id, state: 'refunded' } });
    expect(await h.usdcOf(t.payer.address)).toBe(payerBefore + owed);
    expect(await h.usdcOf(h.relayer.address)).toBe(relayerBefore - owed);
    const refunds = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${t.id}:%` } });
    expect(refunds.map((r) => [r.id, r.hash])).toEqual([[`${t.id}:refund`, record.body.refundTx]]);
    expect(record.body.refundTx).toBe(sent); // the refund recorded before the kill, sent by the restarted worker
    const receipt = await h.chain.getTransactionReceipt({ hash: record.body.refundTx });
    expect(receipt.status).toBe('success');
    const row = await rowOf(t.id);
    expect({ operator: row.operator, operatorReason: row.operatorReason }).toEqual({
      operator: 'bob',
      operatorReason: 'refund: bridge message lost (INC-9)',
    });
    const described = await handle.describe();
    expect(described.typedSearchAttributes.get(X402State)).toBe('refunded');
    expect(described.memo?.[OPERATOR_ACTIONS_MEMO]).toEqual([
      { action: 'refund', operator: 'bob', reason: 'bridge message lost (INC-9)', at: expect.any(String) },
    ]);

    const again = await ops('refund', '--workflow-id', t.id, '--operator', 'bob', '--reason', 'again');
    expect(again.code).toBe(2);
    expect(again.out).toContain('refused:');
    expect(await h.usdcOf(t.payer.address)).toBe(payerBefore + owed);
  }, 240_000);
});
