import { WorkflowUpdateStage } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { topUpWorkflow } from '../../workflows/topup';
import { PARKED_MEMO } from '../../workflows/park';
import { OPERATOR_ACTIONS_MEMO, refundTopUpUpdate, retryDepositUpdate } from '../../workflows/operator-actions';
import { X402State } from '../../src/temporal/search-attributes';
import { updateRefusal, useWorkflowTestEnv } from '../support/workflow-env';
import { input, mocks, REFUND, who } from '../support/topup-workflow-mocks';

/**
 * Operator actions on a cross-chain top-up that waits in `needs_review` (workflows/operator-actions.ts),
 * against mocked activities: what the validators refuse (wrong state, missing operator or reason, a
 * second action while one is under way), and what each accepted action runs, exactly once.
 */
describe('topUpWorkflow operator actions (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  let n = 0;

  /** Starts a top-up and waits until it sits in `state` (by its search attribute). */
  /**
   * Starts a top-up and waits until its search attribute shows `state` and, with `recorded`, until the
   * record activity wrote it too (the workflow moves the attribute first, then records the row).
   */
  const startUntil = async (taskQueue: string, state: string, recorded?: { states: { state: string }[] }) => {
    const i = input(++n);
    const handle = await t.env.client.workflow.start(topUpWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
    for (let k = 0; k < 600; k++) {
      const shown = (await handle.describe()).typedSearchAttributes.get(X402State) === state;
      if (shown && (recorded?.states.some((s) => s.state === state) ?? true)) return handle;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`top-up never reached ${state}`);
  };

  test('needs_review waits; refund: the payer is refunded once, who and why recorded (row, memo, result); a repeat is refused', async () => {
    const m = mocks();
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await startUntil(taskQueue, 'needs_review');
      expect((await handle.describe()).status.name).toBe('RUNNING');
      // Refused before history: no operator, blank reason, unknown argument shape.
      expect(await updateRefusal(handle.executeUpdate(refundTopUpUpdate, { args: [{ operator: '', reason: 'x' }] }))).toBe(
        'an operator action needs a non-empty operator and reason (at most 500 characters each)',
      );
      expect(await updateRefusal(handle.executeUpdate(refundTopUpUpdate, { args: [{ operator: 'bob', reason: '   ' }] }))).toMatch(
        /non-empty operator and reason/,
      );
      expect(m.calls.refundPayer).toBeUndefined();

      const outcome = await handle.executeUpdate(refundTopUpUpdate, { args: [who] });
      expect(outcome).toEqual({
        state: 'refunded',
        errorReason: 'deposit_failed',
        operatorActions: [{ action: 'refund', ...who, at: expect.any(String) }],
      });
      expect(await handle.result()).toEqual(outcome);
      expect(m.calls.refundPayer).toBe(1);
      expect(m.calls.submitDeposit).toBeUndefined();
      expect(m.states.slice(-2)).toEqual([
        { state: 'refunding', operator: who.operator, operatorReason: `refund: ${who.reason}` },
        { state: 'refunded', operator: who.operator, operatorReason: `refund: ${who.reason}` },
      ]);
      const described = await handle.describe();
      expect(described.typedSearchAttributes.get(X402State)).toBe('refunded');
      expect(described.memo?.[OPERATOR_ACTIONS_MEMO]).toEqual([{ action: 'refund', ...who, at: outcome.operatorActions![0].at }]);
      // The workflow has ended: nothing more can be done to it.
      await expect(handle.executeUpdate(refundTopUpUpdate, { args: [who] })).rejects.toThrow();
      expect(m.calls.refundPayer).toBe(1);
    });
  });

  test('retry-deposit: the bridge leg runs again, delivers, and exactly one deposit follows; a second action while it runs is refused', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let polls = 0;
    const m = mocks({
      // The first run attests at once (its mint would revert); the retry's attestation waits for the test.
      attestation: async () => {
        if (++polls > 1) await held;
        return { status: 'complete', attestation: '0x02' };
      },
    });
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await startUntil(taskQueue, 'needs_review');
      const update = await handle.startUpdate(retryDepositUpdate, { args: [who], waitForStage: WorkflowUpdateStage.ACCEPTED });
      // While the retry runs the top-up is bridging: both actions are refused.
      for (let k = 0; k < 100 && (await handle.describe()).typedSearchAttributes.get(X402State) !== 'bridging'; k++)
        await new Promise((r) => setTimeout(r, 100));
      expect(await updateRefusal(handle.executeUpdate(refundTopUpUpdate, { args: [who] }))).toBe(
        `top-up ${handle.workflowId} is bridging: an operator action is taken only in needs_review`,
      );
      expect(await updateRefusal(handle.executeUpdate(retryDepositUpdate, { args: [who] }))).toMatch(/is bridging/);
      release();
      expect(await update.result()).toEqual({
        state: 'deposited',
        operatorActions: [{ action: 'retry-deposit', ...who, at: expect.any(String) }],
      });
      expect(m.calls.submitBridgeMint).toBe(2);
      expect(m.calls.submitDeposit).toBe(1);
      expect(m.calls.refundPayer).toBeUndefined();
      expect(m.calls.recordCrossChainOutcome).toBe(2); // needs_review after the first run, settled after the retry
      expect(m.states.map((s) => s.state)).toEqual(['settling', 'bridging', 'needs_review', 'bridging', 'depositing', 'deposited']);
    });
  });

  test('a refund our records do not owe: the update fails with the reason, nothing moves, the top-up waits again', async () => {
    let refunds = 0;
    const m = mocks({
      refund: async () => {
        if (++refunds === 1) throw ApplicationFailure.nonRetryable('no refund owed for x: the bridge paid it nothing', 'RefundNotOwed');
        return { hash: REFUND };
      },
    });
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await startUntil(taskQueue, 'needs_review');
      expect(await updateRefusal(handle.executeUpdate(refundTopUpUpdate, { args: [who] }))).toBe(
        'no refund owed for x: the bridge paid it nothing',
      );
      expect(m.calls.refundPayer).toBe(1);
      expect((await handle.describe()).typedSearchAttributes.get(X402State)).toBe('needs_review');
      expect((await handle.describe()).status.name).toBe('RUNNING');
      // Waiting again: a later action is accepted.
      expect(await handle.executeUpdate(refundTopUpUpdate, { args: [{ operator: 'bob', reason: 'second try' }] })).toMatchObject({
        state: 'refunded',
      });
    });
  });

  test('an action before needs_review is refused by the validator (the top-up is bridging)', async () => {
    const m = mocks({ attestation: async () => ({ status: 'pending' }) });
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await startUntil(taskQueue, 'bridging');
      expect(await updateRefusal(handle.executeUpdate(retryDepositUpdate, { args: [who] }))).toMatch(
        /is bridging: an operator action is taken only in needs_review/,
      );
      await handle.terminate('test done');
    });
  });

  describe('a transaction mined and reverted (a proven outcome) parks the top-up for an operator', () => {
    /**
     * The bridge delivers at once, on a leg of its own (bridge workflows are keyed by the burn
     * transaction); only the step under test misbehaves.
     */
    const delivered = (m: ReturnType<typeof mocks>) => {
      const burn = m.activities.awaitBridgeBurn;
      const hash = `0x${(0xb000 + n).toString(16).padStart(64, '0')}`;
      m.activities.submitBridgeBurn = async () => ({ submitted: true, hash }) as any;
      m.activities.awaitBridgeBurn = async () => {
        const b = (await burn()) as any;
        return { ...b, response: { ...b.response, transaction: hash } };
      };
      m.activities.submitBridgeMint = async () => ({ submitted: true, hash: `0x${'cd'.repeat(32)}` }) as any;
      return m;
    };
    const parkedReason = async (handle: { describe(): Promise<any> }) => (await handle.describe()).memo?.[PARKED_MEMO]?.reason;

    test('a reverted approval: needs_review with the reason, not retried; retry-deposit signs a fresh approval and deposits once', async () => {
      const approvals: unknown[] = [];
      const m = delivered(mocks());
      m.activities.ensureMerchantAllowance = async (...a: any[]) => {
        approvals.push(a[1]);
        if (approvals.length === 1)
          throw ApplicationFailure.nonRetryable("the top-up relayer's approval 0xaa was mined and reverted", 'ApproveReverted');
      };
      await t.withWorker(m.activities, async (taskQueue) => {
        const handle = await startUntil(taskQueue, 'needs_review', m);
        const reason = "the top-up relayer's approval 0xaa was mined and reverted; nothing was deposited";
        expect(await parkedReason(handle)).toBe(reason);
        expect(approvals).toEqual([undefined]); // not retried: a revert is proven
        expect(m.calls.submitDeposit).toBeUndefined();
        expect(m.states.map((x) => x.state)).toEqual(['settling', 'bridging', 'depositing', 'needs_review']);
        const outcome = await handle.executeUpdate(retryDepositUpdate, { args: [who] });
        expect(outcome).toEqual({ state: 'deposited', operatorActions: [{ action: 'retry-deposit', ...who, at: expect.any(String) }] });
        expect(approvals).toEqual([undefined, 1]); // the fresh approval: a record of its own
        expect(m.calls.submitDeposit).toBe(1);
        expect(m.calls.refundPayer).toBeUndefined();
        expect(m.states.map((x) => x.state)).toEqual(['settling', 'bridging', 'depositing', 'needs_review', 'depositing', 'deposited']);
      });
    });

    test('a reverted refund: needs_review with the reason; retry-deposit is refused; refund pays under a fresh record once', async () => {
      const refunds: unknown[] = [];
      const m = delivered(mocks());
      m.activities.submitDeposit = async () => ({ submitted: false, detail: 'CreditLimitExceeded' }) as any;
      m.activities.refundPayer = async (...a: any[]) => {
        refunds.push(a[1]);
        if (refunds.length === 1) throw ApplicationFailure.nonRetryable('the refund 0xbb was mined and reverted', 'RefundReverted');
        return { hash: REFUND };
      };
      await t.withWorker(m.activities, async (taskQueue) => {
        const handle = await startUntil(taskQueue, 'needs_review');
        expect(await parkedReason(handle)).toBe('deposit failed (CreditLimitExceeded); the refund 0xbb was mined and reverted');
        expect(refunds).toEqual([undefined]);
        expect(await updateRefusal(handle.executeUpdate(retryDepositUpdate, { args: [who] }))).toBe(
          `the deposit of ${handle.workflowId} can no longer succeed (deposit failed (CreditLimitExceeded); the refund 0xbb was mined and reverted): only a refund`,
        );
        expect((await handle.describe()).typedSearchAttributes.get(X402State)).toBe('needs_review');
        const outcome = await handle.executeUpdate(refundTopUpUpdate, { args: [who] });
        expect(outcome).toMatchObject({ state: 'refunded', errorReason: 'deposit_failed' });
        expect(refunds).toEqual([undefined, 1]); // the second attempt: a record of its own (the same on-chain key)
        expect(m.states.map((x) => x.state)).toEqual([
          'settling',
          'bridging',
          'depositing',
          'refunding',
          'needs_review',
          'needs_review',
          'refunding',
          'refunded',
        ]);
      });
    });
  });
});
