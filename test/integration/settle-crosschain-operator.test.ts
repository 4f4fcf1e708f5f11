import { WorkflowUpdateStage } from '@temporalio/client';
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  http,
  numberToHex,
  parseAbi,
  parseEventLogs,
  size,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import type { BridgeAttester } from '../../devnet/bridge-attester';
import { startStackAttester } from '../support/stack-info';
import { getContract } from '../../devnet/contracts';
import { waitUntil } from '../../devnet/process';
import { startRpcProviderDouble, type RpcProviderDouble } from '../../devnet/rpc-provider-double';
import {
  DEVNET_BRIDGE_ATTESTER_KEYS,
  DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
  DEVNET_DEPLOYER_KEY,
  DEVNET_USDC_ISSUER_KEY,
} from '../../src/chains/devnet-addresses';
import { messageTransmitterV2Abi } from '../../src/chains/evm/abi';
import { BridgeTransfer } from '../../src/db/bridge-transfer';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import type { BridgeTransferInput } from '../../src/schemes/eip3009-crosschain/types';
import { X402State } from '../../src/temporal/search-attributes';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { OPERATOR_ACTIONS_MEMO, abandonBridgeLegUpdate, retryMintUpdate } from '../../workflows/operator-actions';
import { PARKED_MEMO } from '../../workflows/park';
import { oneDbKind } from '../support/db';
import { fundUsdc } from '../support/evm';
import { HOLD_BROADCASTS, heldBroadcast, updateEvents } from '../support/held-broadcasts';
import { opsCli } from '../support/ops-cli';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { facilitatorAbi, tokenAbi } from '../../src/chains/evm/abi';

/**
 * Operator actions on the bridge leg of a plain cross-chain settlement (POST /v1/settle, base-sepolia
 * to optimism-sepolia) in `needs_review` (README "For operators"), on the real stack: the attester
 * double signs with another key, so the mint would revert and the settlement waits for an operator.
 * `retry-mint` pays the seller exactly once once the attester is fixed; `abandon-bridge` refunds the
 * payer the gross amount on the source from the revenue wallet exactly once, across a worker SIGKILL
 * while the refund is in flight (the provider double holds its broadcast), and the abandoned leg never
 * mints afterwards; a refund our records do not owe moves nothing.
 */
const OPTIMISM_SEPOLIA = 11155420;
const VALUE = 2_000_000n;
const BRIDGE_FEE = 0n; // a standard transfer: the attester double executes no fee, as Circle's
const PLATFORM_FEE = 20_000n; // the organization's 100 bps
const PAYOUT = VALUE - BRIDGE_FEE - PLATFORM_FEE;
const ZERO = '0x0000000000000000000000000000000000000000' as const;

describe.each(oneDbKind('sqlite'))('operator actions on a cross-chain settlement in needs_review (%s)', (kind) => {
  let h: SettleHarness;
  let attester: BridgeAttester;
  let dest: PublicClient;
  let ops: ReturnType<typeof opsCli>;
  let provider: RpcProviderDouble;
  /** The destination chain (optimism-sepolia) as the worker reaches it: the treasury delivery's broadcast can be held. */
  let destProvider: RpcProviderDouble;
  // BRIDGE_TREASURY_ADDRESS of this file alone, so its deltas are exact.
  const treasury = privateKeyToAccount(generatePrivateKey()).address;
  // The revenue wallet (REVENUE_WALLET_PRIVATE_KEY) of this file alone, so its deltas are exact.
  const revenueKey = generatePrivateKey();
  const revenue = privateKeyToAccount(revenueKey);

  beforeAll(async () => {
    const stack = (await import('../support/stack-info')).readStackInfo();
    attester = await startStackAttester();
    provider = await startRpcProviderDouble({ upstream: stack.chains['base-sepolia'].rpcUrl });
    destProvider = await startRpcProviderDouble({ upstream: stack.chains['optimism-sepolia'].rpcUrl });
    h = await startSettleHarness(kind, {
      relayerIndex: 3,
      platformFeeBps: 100,
      env: {
        RPC_URLS_BASE_SEPOLIA: provider.url, // the source chain through the provider double
        RPC_URLS_OPTIMISM_SEPOLIA: destProvider.url, // and the destination
        BRIDGE_TREASURY_ADDRESS: treasury,
        BRIDGE_ATTESTATION_URL: attester.url,
        SETTLE_WAIT_MS: '5000',
        RECEIPT_WAIT_MS: '3000',
        REVENUE_WALLET_PRIVATE_KEY: revenueKey,
      },
    });
    dest = createPublicClient({ transport: http(stack.chains['optimism-sepolia'].rpcUrl) }) as PublicClient;
    ops = opsCli(stack.temporalAddress);
    await rpc(stack.chains['base-sepolia'].rpcUrl, 'anvil_setBalance', [revenue.address, numberToHex(10n ** 20n)]);
  });
  afterAll(async () => {
    // A failed pause test leaves the shared token unpaused for the next files.
    const stack = (await import('../support/stack-info')).readStackInfo();
    await createWalletClient({ account: privateKeyToAccount(DEVNET_USDC_ISSUER_KEY), transport: http(stack.chains['base-sepolia'].rpcUrl) })
      .writeContract({ chain: null, address: stack.usdc, abi: parseAbi(['function unpause()']), functionName: 'unpause' })
      .catch(() => undefined);
    await h?.close();
    await attester?.stop();
    await provider?.stop();
    await destProvider?.stop();
  });
  afterEach(() => {
    attester.attestWith();
    provider.setRules([]);
    destProvider.setRules([]);
  });

  const fund = (to: Address, amount: bigint) => fundUsdc(h.stack.chains['base-sepolia'], h.stack.usdc, to, amount);
  const destBalance = (who: Address) => dest.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
  const usedNonce = (nonce: Hex) =>
    dest.readContract({
      address: DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
      abi: messageTransmitterV2Abi,
      functionName: 'usedNonces',
      args: [nonce],
    });
  const payouts = async (nonce: string | null | undefined) => {
    const logs = await dest.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'BridgePayout' }).filter(
      (l) => l.args.sourceDomain === 6 && l.args.bridgeNonce === nonce,
    );
  };
  const settlementRow = async (id: string) => (await h.tdb.db.em.fork().findOne(Settlement, { id }))!;
  const legOf = async (id: string) => (await h.tdb.db.em.fork().findOne(BridgeTransfer, { settlementId: id }))!;
  const stateOf = async (id: string) => (await h.temporal.workflow.getHandle(id).describe()).typedSearchAttributes.get(X402State);
  const waitState = (id: string, state: string) =>
    waitUntil(`${id} to be ${state}`, async () => (await stateOf(id)) === state && (await settlementRow(id))?.state === state, {
      timeoutMs: 60_000,
      intervalMs: 200,
    });

  /**
   * A fresh payer's cross-chain payment, answered 200 with the source transaction, whose leg ends in
   * needs_review: the attester signs with `keys` (default an unknown key), an attestation the
   * transmitter refuses, so the mint would revert.
   */
  const needsReview = async (keys: Hex | Hex[] = generatePrivateKey()) => {
    const payer = privateKeyToAccount(generatePrivateKey());
    await fund(payer.address, VALUE);
    attester.attestWith(keys);
    const body = await h.pay(payer, { value: VALUE, extra: { name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA } });
    const res = await h.settle(body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, network: 'base-sepolia', payer: payer.address });
    const id = settleWorkflowId('base-sepolia', payer.address, body.paymentPayload.payload.authorization.nonce);
    await waitState(id, 'needs_review');
    const leg = await legOf(id);
    expect(leg).toMatchObject({ state: 'needs_review', mintTx: null, sourceTx: res.body.transaction });
    expect(await h.balanceOf(payer.address)).toBe(0n);
    return { payer, body, id, leg, source: res.body };
  };

  test('retry-mint: a retry that still fails answers needs_review and waits; once the attester is fixed the seller is paid exactly once', async () => {
    const t = await needsReview();
    const payoutBefore = await destBalance(h.payout);

    const listed = await waitUntil(
      'ops list to show the settlement',
      async () => {
        const r = await ops('list', '--kind', 'settle');
        return r.out.includes(t.id) ? r : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(listed.out).toMatch(new RegExp(`${t.id}\\tsettle\\tneeds_review\\tbase-sepolia\\t${t.payer.address.toLowerCase()}\\t`));

    // Still the wrong attester: the leg runs again, cannot mint, and the settlement waits again.
    const failed = await ops('retry-mint', '--workflow-id', t.id, '--operator', 'alice', '--reason', 'try once more (INC-21)');
    expect(failed.out).toContain(`${t.id} is needs_review; sending retry-mint (operator alice: try once more (INC-21))`);
    expect(failed.out).toContain('done: {"response":');
    expect(failed.out).toContain('"bridge":{"state":"needs_review","error":"mint would revert');
    expect(failed.code).toBe(0);
    await waitState(t.id, 'needs_review');
    expect(await destBalance(h.payout)).toBe(payoutBefore);

    attester.attestWith();
    const retried = await ops('retry-mint', '--workflow-id', t.id, '--operator', 'alice', '--reason', 'attester fixed (INC-21)');
    expect(retried.out).toContain('"bridge":{"state":"delivered"');
    expect(retried.out).toContain('"operatorActions":[{"action":"retry-mint","operator":"alice","reason":"try once more (INC-21)"');
    expect(retried.code).toBe(0);

    const leg = await legOf(t.id);
    expect(leg).toMatchObject({ state: 'delivered', payoutAmount: PAYOUT.toString(), recipient: h.payout.toLowerCase(), refundTx: null });
    expect((await payouts(leg.bridgeNonce)).map((p) => p.transactionHash)).toEqual([leg.mintTx]);
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
    const row = await settlementRow(t.id);
    expect({ state: row.state, operator: row.operator, operatorReason: row.operatorReason }).toEqual({
      state: 'settled',
      operator: 'alice',
      operatorReason: 'retry-mint: attester fixed (INC-21)',
    });
    expect(await h.settle(t.body)).toMatchObject({ status: 200, body: t.source });

    const again = await ops('retry-mint', '--workflow-id', t.id, '--operator', 'alice', '--reason', 'again');
    expect(again.code).toBe(2);
    expect(again.out).toContain(`refused: ${t.id} is completed (state settled): it waits for no action`);
    expect(await payouts(leg.bridgeNonce)).toHaveLength(1);
  });

  test('an attestation with fewer signatures than the transmitter requires: the leg parks in needs_review, nothing minted; the full one pays once', async () => {
    // One signature of an enabled attester: 65 bytes where the devnet transmitters require 2 x 65.
    const t = await needsReview([DEVNET_BRIDGE_ATTESTER_KEYS[0]]);
    expect(t.leg.error).toMatch(/^mint would revert/);
    // Why: the destination transmitter refuses that attestation by its length (as the facilitator calls it).
    const r = await fetch(`${attester.url}/v2/messages/6?transactionHash=${t.source.transaction}`);
    const [m] = ((await r.json()) as { messages: { message: Hex; attestation: Hex }[] }).messages;
    expect(size(m!.attestation)).toBe(65);
    const refused = await dest
      .simulateContract({
        address: DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
        abi: getContract('BridgeMessageTransmitter').abi,
        functionName: 'receiveMessage',
        args: [m!.message, m!.attestation],
        account: h.stack.facilitator,
      })
      .catch((err: BaseError) => err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError);
    expect(refused).toMatchObject({ data: { errorName: 'InvalidAttestationLength', args: [65n, 130n] } });
    expect(await payouts(t.leg.bridgeNonce)).toEqual([]);
    const payoutBefore = await destBalance(h.payout);

    attester.attestWith(); // two of the three attesters again
    const outcome = await h.temporal.workflow
      .getHandle(t.id)
      .executeUpdate(retryMintUpdate, { args: [{ operator: 'carol', reason: 'attestation complete now' }] });
    expect(outcome.bridge).toMatchObject({ state: 'delivered', payoutAmount: PAYOUT.toString() });
    const leg = await legOf(t.id);
    expect((await payouts(leg.bridgeNonce)).map((p) => p.transactionHash)).toEqual([leg.mintTx]);
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
  });

  test('abandon-bridge of a leg whose message was delivered on chain while our records still say needs_review: refused by the used nonce, nothing moves', async () => {
    const t = await needsReview();
    const nonce = t.leg.bridgeNonce as Hex;
    // Delivered by hand with the attester fixed (the seller paid), our records untouched.
    attester.attestWith();
    const r = await fetch(`${attester.url}/v2/messages/6?transactionHash=${t.source.transaction}`);
    const [m] = ((await r.json()) as { messages: { message: Hex; attestation: Hex }[] }).messages;
    // By a relayer of the facilitator's own, allowed by its owner for this delivery only (not the worker's key).
    const destRpc = h.stack.chains['optimism-sepolia'].rpcUrl;
    const byHand = createWalletClient({ account: privateKeyToAccount(generatePrivateKey()), transport: http(destRpc) });
    const owner = createWalletClient({ account: privateKeyToAccount(DEVNET_DEPLOYER_KEY), transport: http(destRpc) });
    const allow = async (allowed: boolean) => {
      const tx = await owner.writeContract({
        chain: null,
        address: h.stack.facilitator,
        abi: facilitatorAbi,
        functionName: 'setRelayer',
        args: [byHand.account.address, allowed],
      });
      expect((await dest.waitForTransactionReceipt({ hash: tx, pollingInterval: 50 })).status).toBe('success');
    };
    await rpc(destRpc, 'anvil_setBalance', [byHand.account.address, numberToHex(10n ** 18n)]);
    await allow(true);
    expect(await usedNonce(nonce)).toBe(0n);
    const hash = await byHand.writeContract({
      chain: null,
      address: h.stack.facilitator,
      abi: facilitatorAbi,
      functionName: 'receiveAndPayout',
      args: [DEVNET_BRIDGE_TRANSMITTER_ADDRESS, m!.message, m!.attestation, h.stack.usdc, h.payout, 0n, ZERO],
    });
    expect((await dest.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success');
    await allow(false);
    expect(await usedNonce(nonce)).toBe(1n);
    expect(await legOf(t.id)).toMatchObject({ state: 'needs_review', mintTx: null });
    const revenueBefore = await h.balanceOf(revenue.address);
    const refused = await ops('abandon-bridge', '--workflow-id', t.id, '--operator', 'dan', '--reason', 'looks lost', '--wait', '30');
    expect(refused.out).toContain(
      `refused: no refund owed for ${t.id}: its message was delivered on optimism-sepolia (nonce ${nonce} is used there)`,
    );
    expect(refused.code).toBe(2);
    await waitState(t.id, 'needs_review');
    expect(await h.balanceOf(t.payer.address)).toBe(0n);
    expect(await h.balanceOf(revenue.address)).toBe(revenueBefore);
    expect(await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${t.id}:bridge-refund%` } })).toEqual([]);
    expect((await legOf(t.id)).state).toBe('needs_review');
  });

  test("abandon-bridge, the worker SIGKILLed with the treasury delivery in flight: the payer refunded once, the leg's message delivered to the treasury exactly once, the seller nothing", async () => {
    const t = await needsReview();
    const nonce = t.leg.bridgeNonce as Hex;
    await fund(revenue.address, VALUE);
    attester.attestWith(); // the attestation is good now: the message can be delivered
    const [payoutBefore, treasuryBefore] = await Promise.all([destBalance(h.payout), destBalance(treasury)]);
    expect(await usedNonce(nonce)).toBe(0n); // precondition: the burned USDC is still in the bridge

    destProvider.setRules(HOLD_BROADCASTS); // the treasury delivery is signed and recorded, never on the node
    const handle = h.temporal.workflow.getHandle(t.id);
    const answered = await handle.executeUpdate(abandonBridgeLegUpdate, { args: [{ operator: 'gil', reason: 'payout lost (INC-27)' }] });
    expect(answered.refund).toMatchObject({ payee: t.payer.address.toLowerCase(), amount: VALUE.toString() });
    expect(answered.treasury).toBeUndefined(); // the update answers once the payer is refunded
    // Written ahead of its broadcast: the held transaction is the recorded treasury delivery.
    const sent = await heldBroadcast(destProvider);
    const record = await h.tdb.db.em.fork().findOneOrFail(RelayerTransaction, { id: `${t.leg.id}:treasury` });
    expect(record.hash).toBe(sent);
    const killed = h.worker.child.pid!;
    await h.restartWorker({
      kill: true,
      whileDown: async () => {
        expect(() => process.kill(killed, 0)).toThrow();
        await expect(dest.getTransaction({ hash: sent })).rejects.toThrow();
        expect(await usedNonce(nonce)).toBe(0n);
        expect(await destBalance(treasury)).toBe(treasuryBefore);
        destProvider.setRules([]);
      },
    });

    const outcome = await handle.result();
    const received = VALUE - BRIDGE_FEE;
    expect(outcome.treasury).toEqual({ treasury: treasury.toLowerCase(), delivered: true, amount: received.toString(), deliveryTx: sent });
    expect(outcome.refund).toEqual(answered.refund);
    expect(await usedNonce(nonce)).toBe(1n);
    const delivered = await payouts(nonce);
    expect(delivered.map((p) => [p.transactionHash, p.args.payout.toLowerCase(), p.args.received, p.args.fee])).toEqual([
      [sent, treasury.toLowerCase(), received, 0n],
    ]);
    expect(await destBalance(treasury)).toBe(treasuryBefore + received);
    expect(await destBalance(h.payout)).toBe(payoutBefore);
    expect(await h.balanceOf(t.payer.address)).toBe(VALUE);
    expect(await h.tdb.db.em.fork().find(RelayerTransaction, { id: `${t.leg.id}:treasury` })).toHaveLength(1);
    expect(await legOf(t.id)).toMatchObject({ state: 'abandoned', treasuryTx: sent, received: received.toString(), mintTx: null });
    expect((await settlementRow(t.id)).state).toBe('refunded');
  }, 240_000);

  test('abandon-bridge our records do not owe (the leg was delivered by hand): refused, nothing moves, the settlement waits', async () => {
    const t = await needsReview();
    const revenueBefore = await h.balanceOf(revenue.address);
    // As if an operator had delivered the message outside the service and recorded it.
    await h.tdb.db.em.fork().nativeUpdate(BridgeTransfer, { id: t.leg.id }, { state: 'delivered' });

    const refused = await ops('abandon-bridge', '--workflow-id', t.id, '--operator', 'bob', '--reason', 'message lost (INC-22)');
    expect(refused.out).toContain(`refused: no refund owed for ${t.id}: its bridge leg is delivered`);
    expect(refused.code).toBe(2);
    await waitState(t.id, 'needs_review');
    expect(await h.balanceOf(t.payer.address)).toBe(0n);
    expect(await h.balanceOf(revenue.address)).toBe(revenueBefore);
    expect(await h.tdb.db.em.fork().find(RelayerTransaction, { id: `${t.id}:bridge-refund` })).toEqual([]);
    expect((await legOf(t.id)).state).toBe('delivered');

    // Still waiting: the mint that is owed is retried and pays the seller.
    await h.tdb.db.em.fork().nativeUpdate(BridgeTransfer, { id: t.leg.id }, { state: 'needs_review' });
    attester.attestWith();
    const handle = h.temporal.workflow.getHandle(t.id);
    const outcome = await handle.executeUpdate(retryMintUpdate, { args: [{ operator: 'bob', reason: 'deliver it after all' }] });
    expect(outcome.bridge).toMatchObject({ state: 'delivered', payoutAmount: PAYOUT.toString() });
    expect(outcome.operatorActions?.map((a) => a.action)).toEqual(['abandon-bridge', 'retry-mint']);
  });

  /** The pending refundBridgePayer activity of a settlement: its attempt and last failure (what an operator sees). */
  const pendingRefund = async (id: string) => {
    const pending = (await h.temporal.workflow.getHandle(id).describe()).raw.pendingActivities ?? [];
    const a = pending.find((p) => p.activityType?.name === 'refundBridgePayer');
    return a ? { attempt: a.attempt ?? 0, lastFailure: a.lastFailure?.message ?? '' } : undefined;
  };

  test('abandon-bridge with a revenue wallet without USDC: waits in refunding (retried, the state says so); funded, it completes once', async () => {
    const t = await needsReview();
    expect(await h.balanceOf(revenue.address)).toBe(0n); // precondition: the wallet that advances the refund has no USDC

    const handle = h.temporal.workflow.getHandle(t.id);
    const update = await handle.startUpdate(abandonBridgeLegUpdate, {
      args: [{ operator: 'erin', reason: 'message lost, wallet empty (INC-24)' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    const retried = await waitUntil(
      'the refund to fail a second time',
      async () => {
        const p = await pendingRefund(t.id);
        return p && p.attempt >= 3 ? p : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(retried.lastFailure).not.toBe('');
    expect(await stateOf(t.id)).toBe('refunding');
    expect((await settlementRow(t.id)).state).toBe('refunding');
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(await h.balanceOf(t.payer.address)).toBe(0n);
    const revenueNonce = await h.chain.getTransactionCount({ address: revenue.address });
    expect(await h.tdb.db.em.fork().find(RelayerTransaction, { id: `${t.id}:bridge-refund` })).toEqual([]); // nothing signed yet

    await fund(revenue.address, VALUE);
    const outcome = await update.result();
    expect(outcome).toMatchObject({
      bridge: { state: 'needs_review' },
      refund: { payee: t.payer.address.toLowerCase(), amount: VALUE.toString(), refundTx: expect.stringMatching(/^0x[0-9a-f]{64}$/) },
    });
    expect(await h.balanceOf(t.payer.address)).toBe(VALUE);
    expect(await h.balanceOf(revenue.address)).toBe(0n);
    expect(await h.chain.getTransactionCount({ address: revenue.address })).toBe(revenueNonce + 1);
    const records = await h.tdb.db.em.fork().find(RelayerTransaction, { id: `${t.id}:bridge-refund` });
    expect(records.map((r) => r.hash)).toEqual([outcome.refund!.refundTx]);
    expect(await stateOf(t.id)).toBe('refunded');
    expect((await settlementRow(t.id)).state).toBe('refunded');
  }, 180_000);

  test('ops exit 3: abandon-bridge accepted but not finished within --wait; the action goes on and refunds once the wallet is funded', async () => {
    const t = await needsReview();
    expect(await h.balanceOf(revenue.address)).toBe(0n); // precondition: the refund cannot finish yet

    const r = await ops('abandon-bridge', '--workflow-id', t.id, '--operator', 'frank', '--reason', 'message lost (INC-26)', '--wait', '2');
    expect(r.out).toContain(`${t.id} is needs_review; sending abandon-bridge (operator frank: message lost (INC-26))`);
    expect(r.out).toMatch(/accepted \(update [^)]+\); waiting up to 2 s for the outcome/);
    expect(r.out).toContain('still running after 2 s: the action goes on; check it with list or the Temporal UI');
    expect(r.out).not.toContain('done:');
    expect(r.code).toBe(3);
    expect(await stateOf(t.id)).toBe('refunding');
    expect((await h.temporal.workflow.getHandle(t.id).describe()).status.name).toBe('RUNNING');
    expect(await h.balanceOf(t.payer.address)).toBe(0n);

    // It goes on: funded, the accepted action refunds the payer exactly once.
    await fund(revenue.address, VALUE);
    await waitState(t.id, 'refunded');
    expect(await h.balanceOf(t.payer.address)).toBe(VALUE);
    expect(await h.balanceOf(revenue.address)).toBe(0n);
    expect(await h.tdb.db.em.fork().find(RelayerTransaction, { id: `${t.id}:bridge-refund` })).toHaveLength(1);
    const row = await settlementRow(t.id);
    expect({ state: row.state, operator: row.operator, operatorReason: row.operatorReason }).toEqual({
      state: 'refunded',
      operator: 'frank',
      operatorReason: 'abandon-bridge: message lost (INC-26)',
    });
  }, 180_000);

  // README "For operators": `temporal workflow describe` "shows its state, pending activities and their
  // last error"; activities/bridge-refund.ts: a refund that cannot be sent is "visible on the activity".
  // viem's error (its request body and cause chain) was once too large for a failure ("Failure exceeds
  // size limit."); src/temporal/redacting-interceptor.ts now bounds it.
  test('abandon-bridge with a revenue wallet without USDC: the pending refund names why it fails', async () => {
    const t = await needsReview();
    expect(await h.balanceOf(revenue.address)).toBe(0n);
    const update = await h.temporal.workflow.getHandle(t.id).startUpdate(abandonBridgeLegUpdate, {
      args: [{ operator: 'erin', reason: 'why does it wait (INC-25)' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    try {
      const retried = await waitUntil(
        'the refund to fail a second time',
        async () => {
          const p = await pendingRefund(t.id);
          return p && p.attempt >= 3 ? p : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      // The token's revert (USDC's own message), with the wallet that lacks the USDC.
      expect(retried.lastFailure).toMatch(/^Execution reverted with reason: ERC20: transfer amount exceeds balance\./);
      expect(retried.lastFailure).toContain(revenue.address.slice(2).toLowerCase());
    } finally {
      await fund(revenue.address, VALUE);
      await update.result();
    }
  }, 180_000);

  test('abandon-bridge accepted, the worker SIGKILLed at once: the payer gets the gross back on the source exactly once, the seller nothing, and the leg never mints', async () => {
    const t = await needsReview();
    await fund(revenue.address, VALUE); // the revenue wallet advances the refund
    const [revenueBefore, revenueNonce, payoutBefore] = await Promise.all([
      h.balanceOf(revenue.address),
      h.chain.getTransactionCount({ address: revenue.address }),
      destBalance(h.payout),
    ]);

    const payerBefore = await h.balanceOf(t.payer.address);

    // The refund's broadcast is held: the worker is killed with the refund signed and recorded, not on the node.
    provider.setRules(HOLD_BROADCASTS);
    const handle = h.temporal.workflow.getHandle(t.id);
    const update = await handle.startUpdate(abandonBridgeLegUpdate, {
      args: [{ operator: 'bob', reason: 'bridge message lost (INC-23)' }],
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
        expect(await h.chain.getTransactionCount({ address: revenue.address, blockTag: 'pending' })).toBe(revenueNonce);
        expect(await h.balanceOf(t.payer.address)).toBe(payerBefore);
        provider.setRules([]);
      },
    });

    const outcome = await update.result();
    expect(outcome).toMatchObject({
      response: t.source,
      bridge: { state: 'needs_review' },
      refund: { payee: t.payer.address.toLowerCase(), amount: VALUE.toString(), refundTx: expect.stringMatching(/^0x[0-9a-f]{64}$/) },
      operatorActions: [{ action: 'abandon-bridge', operator: 'bob', reason: 'bridge message lost (INC-23)', at: expect.any(String) }],
    });
    const refundTx = outcome.refund!.refundTx as Hex;
    expect(refundTx).toBe(sent); // the refund recorded before the kill, sent by the restarted worker
    expect(await h.balanceOf(t.payer.address)).toBe(VALUE);
    expect(await h.balanceOf(revenue.address)).toBe(revenueBefore - VALUE);
    expect(await h.chain.getTransactionCount({ address: revenue.address })).toBe(revenueNonce + 1);
    expect((await h.chain.getTransactionReceipt({ hash: refundTx })).status).toBe('success');
    const records = await h.tdb.db.em.fork().find(RelayerTransaction, { id: `${t.id}:bridge-refund` });
    expect(records.map((r) => [r.signer.toLowerCase(), r.hash])).toEqual([[revenue.address.toLowerCase(), refundTx]]);
    expect(await legOf(t.id)).toMatchObject({ state: 'abandoned', refundTx, mintTx: null });
    const row = await settlementRow(t.id);
    expect({ state: row.state, operator: row.operator, operatorReason: row.operatorReason }).toEqual({
      state: 'refunded',
      operator: 'bob',
      operatorReason: 'abandon-bridge: bridge message lost (INC-23)',
    });
    const described = await handle.describe();
    expect(described.typedSearchAttributes.get(X402State)).toBe('refunded');
    expect(described.memo?.[OPERATOR_ACTIONS_MEMO]).toEqual(outcome.operatorActions);
    expect(await h.settle(t.body)).toMatchObject({ status: 200, body: t.source });

    // Then the run delivers the leg's message to the treasury (once the attestation is good).
    attester.attestWith();
    const final = await handle.result();
    expect(final.treasury).toMatchObject({ treasury: treasury.toLowerCase(), delivered: true, amount: (VALUE - BRIDGE_FEE).toString() });

    // Neither a second abandon nor a retry is taken any more.
    const again = await ops('abandon-bridge', '--workflow-id', t.id, '--operator', 'bob', '--reason', 'again');
    expect(again.code).toBe(2);
    expect(again.out).toContain(`refused: ${t.id} is completed (state refunded): it waits for no action`);
    await expect(handle.executeUpdate(retryMintUpdate, { args: [{ operator: 'bob', reason: 'mint anyway' }] })).rejects.toThrow(
      /completed/,
    );

    // The leg run again by hand, with the attester fixed: the mint refuses an abandoned leg.
    const bridge = h.temporal.workflow.getHandle(t.leg.id);
    const history = await bridge.fetchHistory();
    const started = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
    const legInput = JSON.parse(Buffer.from(started.data!).toString()) as BridgeTransferInput;
    const rerun = await h.temporal.workflow.execute('bridgeTransferWorkflow', {
      workflowId: t.leg.id,
      taskQueue: h.env.TEMPORAL_TASK_QUEUE!,
      args: [legInput],
    });
    expect(rerun).toEqual({ state: 'needs_review', error: 'bridge leg abandoned: its payer was refunded' });
    // Its message was delivered once, to the treasury.
    const delivered = await payouts((await legOf(t.id)).bridgeNonce);
    expect(delivered.map((p) => [p.transactionHash, p.args.payout.toLowerCase()])).toEqual([
      [final.treasury!.deliveryTx, treasury.toLowerCase()],
    ]);
    expect(await destBalance(h.payout)).toBe(payoutBefore);
    expect(await legOf(t.id)).toMatchObject({ state: 'abandoned', refundTx, treasuryTx: final.treasury!.deliveryTx });
    expect(await h.balanceOf(t.payer.address)).toBe(VALUE);
  }, 300_000);

  test("abandon-bridge whose refund is mined and reverted (USDC paused with Circle's pauser key before it was mined): refused with the reason, nothing paid; a worker SIGKILLed while it waits changes nothing; the next abandon-bridge refunds once", async () => {
    const t = await needsReview();
    await fund(revenue.address, VALUE); // the revenue wallet advances the refund
    const rpcUrl = h.stack.chains['base-sepolia'].rpcUrl; // the node itself, not the provider double
    const pauser = createWalletClient({ account: privateKeyToAccount(DEVNET_USDC_ISSUER_KEY), transport: http(rpcUrl) });
    const pausable = parseAbi(['function pause()', 'function unpause()', 'function paused() view returns (bool)']);
    await rpc(rpcUrl, 'anvil_setBalance', [pauser.account.address, numberToHex(10n ** 20n)]);
    const revenueBefore = await h.balanceOf(revenue.address);
    const records = () =>
      h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${t.id}:bridge-refund%` } }, { orderBy: { id: 'asc' } });
    const refundsToPayer = async () => {
      const logs = await h.chain.getLogs({ address: h.stack.usdc, fromBlock: 0n, toBlock: 'latest' });
      return parseEventLogs({ abi: tokenAbi, logs, eventName: 'Transfer' }).filter(
        (l) => l.args.from.toLowerCase() === revenue.address.toLowerCase() && l.args.to.toLowerCase() === t.payer.address.toLowerCase(),
      );
    };

    // The refund is signed and recorded while USDC is not paused, its broadcast held; the pauser's
    // transaction is mined first, then the refund goes out and is mined reverted.
    const heldBefore = provider.calls.filter((c) => c.fault === 'hang' && c.hash !== undefined).map((c) => c.hash!); // other tests'
    provider.setRules(HOLD_BROADCASTS);
    const handle = h.temporal.workflow.getHandle(t.id);
    const update = await handle.startUpdate(abandonBridgeLegUpdate, {
      args: [{ operator: 'bob', reason: 'bridge message lost (INC-31)' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    const sent = await heldBroadcast(provider, heldBefore);
    const pause = await pauser.writeContract({ chain: null, address: h.stack.usdc, abi: pausable, functionName: 'pause' });
    expect((await h.chain.waitForTransactionReceipt({ hash: pause })).status).toBe('success');
    provider.setRules([]);
    const reason = `the refund ${sent} was mined and reverted; nothing was paid`;
    await expect(update.result()).rejects.toMatchObject({ cause: { message: reason } });
    expect((await h.chain.getTransactionReceipt({ hash: sent })).status).toBe('reverted');
    const unpaused = await pauser.writeContract({ chain: null, address: h.stack.usdc, abi: pausable, functionName: 'unpause' });
    expect((await h.chain.waitForTransactionReceipt({ hash: unpaused })).status).toBe('success');
    expect(await h.chain.readContract({ address: h.stack.usdc, abi: pausable, functionName: 'paused' })).toBe(false);

    await waitState(t.id, 'needs_review');
    expect((await handle.describe()).memo?.[PARKED_MEMO]).toEqual({ reason, at: expect.any(String) });
    expect(await legOf(t.id)).toMatchObject({ state: 'abandoned', refundTx: sent, error: reason, mintTx: null });
    // A worker SIGKILLed while it waits: the new one replays the history (it answers the update's
    // validator) and waits on; nothing is sent again.
    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();
    await expect(handle.executeUpdate(abandonBridgeLegUpdate, { args: [{ operator: '', reason: 'x' }] })).rejects.toMatchObject({
      cause: { message: 'an operator action needs a non-empty operator and reason (at most 500 characters each)' },
    });
    expect((await records()).map((r) => r.id)).toEqual([`${t.id}:bridge-refund`]);
    expect(await h.balanceOf(t.payer.address)).toBe(0n);
    expect(await h.balanceOf(revenue.address)).toBe(revenueBefore);
    expect(await refundsToPayer()).toEqual([]);

    const done = await ops('abandon-bridge', '--workflow-id', t.id, '--operator', 'bob', '--reason', 'USDC unpaused (INC-31)');
    expect(done.out).toContain('"refund":{"payee":');
    expect(done.code).toBe(0);
    const after = await records();
    expect(after.map((r) => r.id)).toEqual([`${t.id}:bridge-refund`, `${t.id}:bridge-refund-2`]);
    expect((await h.chain.getTransactionReceipt({ hash: after[1]!.hash as Hex })).status).toBe('success');
    expect((await refundsToPayer()).map((l) => l.args.value)).toEqual([VALUE]);
    expect(await h.balanceOf(t.payer.address)).toBe(VALUE);
    expect(await h.balanceOf(revenue.address)).toBe(revenueBefore - VALUE);
    expect(await legOf(t.id)).toMatchObject({ state: 'abandoned', refundTx: after[1]!.hash, mintTx: null });
    expect((await settlementRow(t.id)).state).toBe('refunded');
  });
});
