import { WorkflowUpdateStage } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { crossChainSettlementWorkflow } from '../../workflows/crosschain-settlement';
import { abandonBridgeLegUpdate, retryMintUpdate } from '../../workflows/operator-actions';
import { X402State } from '../../src/temporal/search-attributes';
import { PARKED_MEMO } from '../../workflows/park';
import { HASH, MINT, PAYER, input as crossChainInput } from '../support/crosschain-workflow-mocks';
import { updateRefusal, useWorkflowTestEnv } from '../support/workflow-env';

/**
 * Operator actions on a plain cross-chain settlement whose bridge leg waits in `needs_review`
 * (workflows/bridge-review.ts), against mocked activities: what the validators refuse, that a retry
 * still failing and a refund not owed both leave it waiting, and that each action runs once.
 */
const REFUND = `0x${'12'.repeat(32)}`;
const TREASURY_DELIVERY = { treasury: `0x${'aa'.repeat(20)}`, delivered: true, amount: '1998000', deliveryTx: `0x${'34'.repeat(32)}` };
const who = { operator: 'alice@ops', reason: 'attester fixed (INC-42)' };

const input = (n: number) => crossChainInput(n, `:${Date.now()}`);

/** Mocked activities: mints fail until `deliver` says otherwise; calls and settlement states are counted. */
function mocks(opts: { deliver?: (mint: number) => boolean; refund?: () => Promise<unknown> } = {}) {
  const calls: Record<string, number> = {};
  const states: { state: string; operatorReason?: string | null }[] = [];
  const count =
    <T>(name: string, f: (...a: any[]) => Promise<T> | T) =>
    async (...a: any[]) => {
      calls[name] = (calls[name] ?? 0) + 1;
      return f(...a);
    };
  const activities = {
    verifyCrossChainPayment: count('verifyCrossChainPayment', () => ({ isValid: true, payer: PAYER })),
    readBridgeBurnTerms: count('readBridgeBurnTerms', () => ({ finality: 'standard', minFinalityThreshold: 2000, maxFee: '20000' })),
    submitBridgeBurn: count('submitBridgeBurn', () => ({ submitted: true, hash: HASH })),
    awaitBridgeBurn: count('awaitBridgeBurn', () => ({
      response: { success: true, transaction: HASH, network: 'base-sepolia', payer: PAYER },
      message: '0x01',
    })),
    recordCrossChainOutcome: count('recordCrossChainOutcome', (_i: unknown, state: string, by?: { operatorReason?: string }) => {
      states.push({ state, operatorReason: by?.operatorReason });
    }),
    recordBridgeTransfer: count('recordBridgeTransfer', () => undefined),
    fetchBridgeAttestation: count('fetchBridgeAttestation', () => ({ status: 'complete', attestation: '0x02', nonce: '0x07' })),
    submitBridgeMint: count('submitBridgeMint', () =>
      opts.deliver?.(calls.submitBridgeMint)
        ? { submitted: true, hash: MINT }
        : { submitted: false, error: 'mint would revert: bad attestation' },
    ),
    awaitBridgeMint: count('awaitBridgeMint', () => ({
      ok: true,
      mintTx: MINT,
      received: '1998000',
      bridgeFee: '2000',
      fee: '20000',
      payoutAmount: '1978000',
    })),
    refundBridgePayer: count('refundBridgePayer', opts.refund ?? (async () => ({ payee: PAYER, amount: '2000000', refundTx: REFUND }))),
    deliverAbandonedLeg: count('deliverAbandonedLeg', () => TREASURY_DELIVERY),
  };
  return { calls, states, activities };
}

describe('crossChainSettlementWorkflow operator actions (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  let n = 0;

  const startUntilReview = async (taskQueue: string) => {
    const i = input(++n);
    const handle = await t.env.client.workflow.start(crossChainSettlementWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
    for (let k = 0; k < 200; k++) {
      if ((await handle.describe()).typedSearchAttributes.get(X402State) === 'needs_review') return handle;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('settlement never reached needs_review');
  };

  test('retry-mint: a retry that fails answers needs_review and waits; the next delivers; a second action while one runs is refused', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const m = mocks({ deliver: (mint) => mint >= 3 });
    m.activities.awaitBridgeMint = (
      (f) =>
      async (...a: any[]) => {
        await held; // the delivering retry's receipt waits for the test
        return f(...a);
      }
    )(m.activities.awaitBridgeMint);
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await startUntilReview(taskQueue);
      expect(await updateRefusal(handle.executeUpdate(retryMintUpdate, { args: [{ operator: ' ', reason: 'x' }] }))).toMatch(
        /non-empty operator and reason/,
      );
      const first = await handle.executeUpdate(retryMintUpdate, { args: [who] });
      expect(first.bridge).toEqual({ state: 'needs_review', error: 'mint would revert: bad attestation' });
      expect((await handle.describe()).status.name).toBe('RUNNING');

      const second = await handle.startUpdate(retryMintUpdate, { args: [who], waitForStage: WorkflowUpdateStage.ACCEPTED });
      for (let k = 0; k < 100 && (await handle.describe()).typedSearchAttributes.get(X402State) !== 'bridging'; k++)
        await new Promise((r) => setTimeout(r, 100));
      expect(await updateRefusal(handle.executeUpdate(abandonBridgeLegUpdate, { args: [who] }))).toBe(
        `settlement ${handle.workflowId} is bridging: an operator action is taken only in needs_review`,
      );
      release();
      const done = await second.result();
      expect(done.bridge).toMatchObject({ state: 'delivered', mintTx: MINT });
      expect(done.operatorActions?.map((a) => a.action)).toEqual(['retry-mint', 'retry-mint']);
      expect(await handle.result()).toEqual(done);
      expect(m.calls.submitBridgeMint).toBe(3);
      expect(m.calls.refundBridgePayer).toBeUndefined();
      expect(m.calls.deliverAbandonedLeg).toBeUndefined();
      expect(m.states.map((s) => s.state)).toEqual(['needs_review', 'bridging', 'needs_review', 'bridging', 'settled']);
      expect(m.states[1]!.operatorReason).toBe(`retry-mint: ${who.reason}`);
    });
  });

  test('abandon-bridge not owed: the update fails with the reason and it waits; the next one refunds once and ends refunded', async () => {
    let refunds = 0;
    const m = mocks({
      refund: async () => {
        if (++refunds === 1) throw ApplicationFailure.nonRetryable('no refund owed for x: its bridge leg is delivered', 'RefundNotOwed');
        return { payee: PAYER, amount: '2000000', refundTx: REFUND };
      },
    });
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await startUntilReview(taskQueue);
      expect(await updateRefusal(handle.executeUpdate(abandonBridgeLegUpdate, { args: [who] }))).toBe(
        'no refund owed for x: its bridge leg is delivered',
      );
      expect((await handle.describe()).typedSearchAttributes.get(X402State)).toBe('needs_review');
      const done = await handle.executeUpdate(abandonBridgeLegUpdate, { args: [{ operator: 'bob', reason: 'lost' }] });
      expect(done).toMatchObject({ refund: { payee: PAYER, amount: '2000000', refundTx: REFUND }, bridge: { state: 'needs_review' } });
      // The update answers once the payer is refunded; the run then delivers the message to the treasury, once.
      expect(await handle.result()).toEqual({ ...done, treasury: TREASURY_DELIVERY });
      expect(m.calls.deliverAbandonedLeg).toBe(1);
      expect(m.calls.refundBridgePayer).toBe(2);
      expect(m.calls.submitBridgeMint).toBe(1);
      expect(m.states.map((s) => s.state)).toEqual(['needs_review', 'refunding', 'needs_review', 'refunding', 'refunded']);
      expect((await handle.describe()).typedSearchAttributes.get(X402State)).toBe('refunded');
    });
  });

  test('abandon-bridge whose refund was mined and reverted: not retried, the update fails with the reason (memo parked) and it waits; the next refund is attempt 1 and pays once', async () => {
    const attempts: unknown[] = [];
    const reason = `the refund ${REFUND} was mined and reverted; nothing was paid`;
    const m = mocks({
      refund: async (...a: unknown[]) => {
        attempts.push(a[1]);
        if (attempts.length === 1) throw ApplicationFailure.nonRetryable(reason, 'RefundReverted');
        return { payee: PAYER, amount: '2000000', refundTx: REFUND };
      },
    });
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await startUntilReview(taskQueue);
      expect(await updateRefusal(handle.executeUpdate(abandonBridgeLegUpdate, { args: [who] }))).toBe(reason);
      const described = await handle.describe();
      expect(described.typedSearchAttributes.get(X402State)).toBe('needs_review');
      expect(described.memo?.[PARKED_MEMO]).toEqual({ reason, at: expect.any(String) });
      expect(m.calls.refundBridgePayer).toBe(1); // not retried by itself
      const done = await handle.executeUpdate(abandonBridgeLegUpdate, { args: [{ operator: 'bob', reason: 'USDC unpaused' }] });
      expect(done).toMatchObject({ refund: { payee: PAYER, amount: '2000000', refundTx: REFUND } });
      expect(await handle.result()).toEqual({ ...done, treasury: TREASURY_DELIVERY }); // then the message goes to the treasury, once
      expect(m.calls.deliverAbandonedLeg).toBe(1);
      expect(attempts).toEqual([undefined, 1]);
      expect(m.states.map((s) => s.state)).toEqual(['needs_review', 'refunding', 'needs_review', 'refunding', 'refunded']);
    });
  });
});
