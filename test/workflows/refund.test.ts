import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { randomBytes } from 'node:crypto';
import type { RefundInput } from '../../src/inference/types';
import { X402State } from '../../src/temporal/search-attributes';
import { refundWorkflow } from '../../workflows/refund';
import { recorded, untilState, upsertedStates } from '../support/activity-calls';
import { updateRefusal, useWorkflowTestEnv } from '../support/workflow-env';
import { refundChargeUpdate } from '../../workflows/operator-actions';
import { PARKED_MEMO } from '../../workflows/park';

/**
 * The refund of one charge (workflows/refund.ts) against mocked activities: which branch gives money
 * back (a settled charge) and which does not (not charged, not stale any more), that the transfer is
 * sent once with the refund's input (the activity derives payee and amount from the charge's record),
 * and what the ledger and X402State say at the end. Parking an unproven refund: parking.test.ts.
 */
describe('refundWorkflow (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const HASH = `0x${'31'.repeat(32)}`;
  const HASH2 = `0x${'32'.repeat(32)}`;
  const waitFor = async (ok: () => Promise<boolean>) => {
    for (const until = Date.now() + 30_000; !(await ok()) && Date.now() < until;) await new Promise((r) => setTimeout(r, 50));
  };
  const address = () => `0x${randomBytes(20).toString('hex')}`;
  const refundInput = (extra: Partial<RefundInput> = {}): RefundInput => {
    const chargeId = randomBytes(8).toString('hex');
    return {
      workflowId: `refund:${chargeId}`,
      chargeId,
      settlementId: `settle:base-sepolia:${address()}:0x${'01'.repeat(32)}`,
      network: 'base-sepolia',
      payer: address(),
      amount: '10000',
      asset: address(),
      revenueWallet: address(),
      reason: 'the provider failed',
      ...extra,
    };
  };
  const mocks = (script: { stale?: boolean; settled?: boolean; receipt?: 'success' | 'reverted'; send?: (() => unknown)[] } = {}) => {
    let sends = 0;
    return recorded({
      markRefundPending: (_i: RefundInput) => undefined,
      claimStaleCharge: (_i: RefundInput) => script.stale ?? true,
      chargeSettlement: (_i: RefundInput) => ({ settled: script.settled ?? true }),
      sendRefund: (_i: RefundInput) => {
        const answer = script.send?.[Math.min(sends++, script.send.length - 1)];
        return answer ? answer() : { hash: HASH };
      },
      awaitRefundReceipt: (_i: RefundInput) => ({ status: script.receipt ?? 'success' }),
      recordRefundOutcome: (_o: unknown) => undefined,
    });
  };
  const run = async (m: ReturnType<typeof mocks>, i: RefundInput) =>
    t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(refundWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      const result = await handle.result().then(
        (value) => ({ value, error: undefined }),
        (error: unknown) => ({ value: undefined, error }),
      );
      const described = await handle.describe();
      return { ...result, state: described.typedSearchAttributes.get(X402State), states: await upsertedStates(handle) };
    });

  test('a settled charge: marked refund_pending, one transfer of the refund, its receipt, refunded in the ledger', async () => {
    const m = mocks();
    const i = refundInput({ requestId: 'req-1' });
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'refunded', refundTx: HASH });
    expect(m.calls).toEqual([
      { name: 'markRefundPending', args: [i] },
      { name: 'chargeSettlement', args: [i] },
      { name: 'sendRefund', args: [i] },
      { name: 'awaitRefundReceipt', args: [i] },
      { name: 'recordRefundOutcome', args: [{ chargeId: i.chargeId, state: 'refunded', refundTx: HASH }] },
    ]);
    expect(out.state).toBe('refunded');
    expect(out.states).toEqual(['refund_pending', 'refund_submitted', 'refunded']);
  });

  test('a charge whose payment did not settle: nothing is sent, the ledger says rejected with the reason', async () => {
    const m = mocks({ settled: false });
    const i = refundInput();
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'not_charged', refundTx: '' });
    expect(m.names()).toEqual(['markRefundPending', 'chargeSettlement', 'recordRefundOutcome']);
    expect(m.argsOf('recordRefundOutcome')).toEqual([
      [{ chargeId: i.chargeId, state: 'rejected', error: 'the provider failed; the payment did not settle' }],
    ]);
    expect(out.states).toEqual(['refund_pending', 'not_charged']);
  });

  test('the charge guard on a charge finished meanwhile: not owed, nothing marked or sent', async () => {
    const m = mocks({ stale: false });
    const i = refundInput({ onlyIfStale: true });
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'not_owed', refundTx: '' });
    expect(m.calls).toEqual([{ name: 'claimStaleCharge', args: [i] }]);
    expect(out.states).toEqual(['not_owed']);
  });

  test('the charge guard on a stale charge: claims it (no second mark) and refunds once', async () => {
    const m = mocks({ stale: true });
    const i = refundInput({ onlyIfStale: true });
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'refunded', refundTx: HASH });
    expect(m.names()).toEqual(['claimStaleCharge', 'chargeSettlement', 'sendRefund', 'awaitRefundReceipt', 'recordRefundOutcome']);
    expect(out.states).toEqual(['refund_pending', 'refund_submitted', 'refunded']);
  });

  test('a refund mined and reverted: parks in needs_review with the reason (ledger, memo), not retried; an operator refund sends attempt 1 once', async () => {
    let receipts = 0;
    const m = recorded({
      markRefundPending: (_i: RefundInput) => undefined,
      claimStaleCharge: (_i: RefundInput) => true,
      chargeSettlement: (_i: RefundInput) => ({ settled: true }),
      sendRefund: (_i: RefundInput, attempt?: number) => ({ hash: attempt ? HASH2 : HASH }),
      awaitRefundReceipt: (_i: RefundInput, _attempt?: number) => ({ status: receipts++ === 0 ? 'reverted' : 'success' }),
      recordRefundOutcome: (_o: unknown) => undefined,
    });
    const i = refundInput();
    const reason = `the refund ${HASH} was mined and reverted; nothing was paid`;
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(refundWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      expect(await untilState(handle, 'needs_review')).toBe('needs_review');
      await waitFor(async () => m.argsOf('recordRefundOutcome').length === 1);
      expect(m.argsOf('recordRefundOutcome')).toEqual([[{ chargeId: i.chargeId, state: 'needs_review', refundTx: HASH, error: reason }]]);
      expect((await handle.describe()).memo?.[PARKED_MEMO]).toEqual({ reason, at: expect.any(String) });
      // Not retried by itself: one send, one receipt.
      expect(m.names()).toEqual(['markRefundPending', 'chargeSettlement', 'sendRefund', 'awaitRefundReceipt', 'recordRefundOutcome']);
      expect(await updateRefusal(handle.executeUpdate(refundChargeUpdate, { args: [{ operator: '', reason: 'x' }] }))).toBe(
        'an operator action needs a non-empty operator and reason (at most 500 characters each)',
      );
      const who = { operator: 'alice', reason: 'USDC unpaused' };
      const outcome = await handle.executeUpdate(refundChargeUpdate, { args: [who] });
      expect(outcome).toEqual({
        state: 'refunded',
        refundTx: HASH2,
        operatorActions: [{ action: 'refund', ...who, at: expect.any(String) }],
      });
      expect(await handle.result()).toEqual(outcome);
      expect(m.argsOf('sendRefund')).toEqual([[i], [i, 1]]);
      expect(m.argsOf('awaitRefundReceipt')).toEqual([[i], [i, 1]]);
      expect(m.argsOf('recordRefundOutcome').slice(1)).toEqual([
        [{ chargeId: i.chargeId, state: 'refund_pending' }],
        [{ chargeId: i.chargeId, state: 'refunded', refundTx: HASH2 }],
      ]);
      expect(await upsertedStates(handle)).toEqual([
        'refund_pending',
        'refund_submitted',
        'needs_review',
        'refund_pending',
        'refund_submitted',
        'refunded',
      ]);
    });
  });

  test('a transient failure of the transfer is retried until its outcome is known; one receipt wait', async () => {
    const m = mocks({
      send: [
        () => {
          throw ApplicationFailure.retryable('rpc down', 'RpcError');
        },
        () => ({ hash: HASH }),
      ],
    });
    const out = await run(m, refundInput());
    expect(out.value).toEqual({ state: 'refunded', refundTx: HASH });
    // Each attempt is the same idempotent call (the write-ahead relayer re-sends the recorded bytes).
    expect(m.names()).toEqual([
      'markRefundPending',
      'chargeSettlement',
      'sendRefund',
      'sendRefund',
      'awaitRefundReceipt',
      'recordRefundOutcome',
    ]);
  });

  test('a refund the records do not owe (RefundNotOwed): the workflow fails, nothing recorded as an outcome', async () => {
    const m = mocks({
      send: [
        () => {
          throw ApplicationFailure.nonRetryable('charge x is not owed a refund: no settled payment of it', 'RefundNotOwed');
        },
      ],
    });
    const out = await run(m, refundInput());
    expect(out.error).toBeInstanceOf(WorkflowFailedError);
    expect((out.error as WorkflowFailedError).cause?.cause).toMatchObject({ type: 'RefundNotOwed' });
    expect(m.names()).toEqual(['markRefundPending', 'chargeSettlement', 'sendRefund']);
    expect(out.states).toEqual(['refund_pending']);
  });
});
