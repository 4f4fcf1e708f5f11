import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { randomBytes } from 'node:crypto';
import type { RefundInput } from '../../src/inference/types';
import { X402State } from '../../src/temporal/search-attributes';
import { refundWorkflow } from '../../workflows/refund';
import { recorded, upsertedStates } from '../support/activity-calls';
import { useWorkflowTestEnv } from '../support/workflow-env';

/**
 * The refund of one charge (workflows/refund.ts) against mocked activities: which branch gives money
 * back (a settled charge) and which does not (not charged, not stale any more), that the transfer is
 * sent once with the refund's input (the activity derives payee and amount from the charge's record),
 * and what the ledger and X402State say at the end. Parking an unproven refund: parking.test.ts.
 */
describe('refundWorkflow (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const HASH = `0x${'31'.repeat(32)}`;
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

  test('a refund transaction that reverted: refund_failed in the ledger and the result, sent once', async () => {
    const m = mocks({ receipt: 'reverted' });
    const i = refundInput();
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'refund_failed', refundTx: HASH });
    expect(m.argsOf('sendRefund')).toHaveLength(1);
    expect(m.argsOf('recordRefundOutcome')).toEqual([[{ chargeId: i.chargeId, state: 'refund_failed', refundTx: HASH }]]);
    expect(out.states).toEqual(['refund_pending', 'refund_submitted', 'refund_failed']);
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
