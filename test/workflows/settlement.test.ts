import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { fastSettlementWorkflow, settlementWorkflow } from '../../workflows/settlement';
import { SETTLEMENT_REJECTED, settlementRejection, type SettleOutcome } from '../../src/settle/types';
import { X402State } from '../../src/temporal/search-attributes';
import { markersNamed } from '../support/history-events';
import { useWorkflowTestEnv } from '../support/workflow-env';
import { HASH, input, mocks, notMinedYet, rejected, settled, transient } from '../support/settlement-workflow-mocks';

/**
 * The settlement skeleton against mocked steps: which activities run, how often, and what the
 * workflow answers for each branch (valid, rejected at verification or submission, transient
 * failures retried, a chain that stays down, a reverted transaction, a receipt slower than the fast
 * path's wait). Both types the worker runs take the fast path (`settlePayment`, one local activity per
 * attempt): the API's `fastSettlementWorkflow`, and `settlementWorkflow` (top-up and media children)
 * behind its patch; the three-activity path of older histories is covered by
 * test/workflows/replay.test.ts.
 */
const { EventType } = temporal.api.enums.v1;

/**
 * The local activities the history shows (one marker each), the X402State values upserted in order,
 * and the patch's own events: its marker and its `TemporalChangeVersion` upsert.
 */
async function historyOf(handle: WorkflowHandle) {
  const events = (await handle.fetchHistory()).events ?? [];
  const markers = (name: string) => markersNamed(events, name).length;
  const upserts = events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES)
    .map((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {});
  const states = upserts
    .map((fields) => fields[X402State.name]?.data)
    .filter((data) => data)
    .map((data) => JSON.parse(Buffer.from(data!).toString('utf8')) as string);
  const patch = {
    markers: markers('core_patch'),
    changeVersionUpserts: upserts.filter((fields) => 'TemporalChangeVersion' in fields).length,
  };
  return { localActivities: markers('core_local_activity'), states, patch };
}

describe.each([
  { workflow: fastSettlementWorkflow, patch: { markers: 0, changeVersionUpserts: 0 }, firstId: 0 },
  { workflow: settlementWorkflow, patch: { markers: 1, changeVersionUpserts: 1 }, firstId: 500 },
])('$workflow.name (mocked activities)', ({ workflow, patch, firstId }) => {
  const t = useWorkflowTestEnv();
  let n = firstId; // the two types' tests may run at once: their workflow ids differ

  // Tests whose retries wait out real back-offs (seconds) run concurrently with the others
  // (`test.concurrent`): each has its own worker, task queue and workflow id.
  const run = (activities: object) =>
    t.withWorker(activities, async (taskQueue) => {
      const i = input(++n);
      const handle = await t.env.client.workflow.start(workflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      const result: { value?: SettleOutcome; error?: unknown } = await handle.result().then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      const state = (await handle.describe()).typedSearchAttributes.get(X402State);
      return { ...result, state, history: await historyOf(handle) };
    });
  const none = { verifyPayment: 0, submitPayment: 0, confirmPayment: 0 };

  test('valid: one local activity verifies, submits and confirms; completes with the response and whose payment it is', async () => {
    const m = mocks();
    const out = await run(m.activities);
    expect(out).toMatchObject({ value: { response: settled, organizationId: 'org-1' }, state: 'settled' });
    expect(m.calls).toEqual({ ...none, settlePayment: 1, verify: 1, submit: 1, confirm: 1 });
    // One local-activity marker, and one X402State upsert: the state goes from verifying straight to
    // settled. Only the type behind the patch adds the patch's marker and TemporalChangeVersion upsert.
    expect(out.history).toEqual({ localActivities: 1, states: ['settled'], patch });
  });

  test('rejected at verification: fails with SettlementRejected carrying the response; nothing is submitted', async () => {
    const m = mocks({ verify: [() => ({ isValid: false, response: rejected('insufficient_funds') })] });
    const out = await run(m.activities);
    expect(out.error).toBeInstanceOf(WorkflowFailedError);
    expect((out.error as WorkflowFailedError).cause).toMatchObject({ type: SETTLEMENT_REJECTED, nonRetryable: true });
    expect(settlementRejection(out.error)).toEqual({ response: rejected('insufficient_funds') });
    expect(out.state).toBe('rejected');
    expect(m.calls).toEqual({ ...none, settlePayment: 1, verify: 1, submit: 0, confirm: 0 });
  });

  test.concurrent('a transient verification failure is retried, then the payment settles', async () => {
    const m = mocks({ verify: [transient, transient, () => ({ isValid: true })] });
    const out = await run(m.activities);
    expect(out.value?.response).toEqual(settled);
    expect(m.calls).toEqual({ ...none, settlePayment: 3, verify: 3, submit: 1, confirm: 1 });
  });

  test.concurrent(
    'a chain that stays down during verification: given up after 5 attempts, nothing submitted, not a rejection',
    async () => {
      const m = mocks({ verify: [transient] });
      const out = await run(m.activities);
      expect(out.error).toBeInstanceOf(WorkflowFailedError);
      expect(settlementRejection(out.error)).toBeUndefined();
      // The last error, as when verification was its own activity whose retries ran out (the API answers 500).
      const cause = (out.error as WorkflowFailedError).cause;
      expect(cause).toBeInstanceOf(ApplicationFailure);
      expect(cause).toMatchObject({ type: 'RpcError', message: 'rpc down' });
      expect(m.calls).toEqual({ ...none, settlePayment: 5, verify: 5, submit: 0, confirm: 0 });
      expect(out.history.states).toEqual([]); // it never left verifying
    },
  );

  test('refused at submission (the call would revert): SettlementRejected, nothing to confirm', async () => {
    const m = mocks({ submit: [() => ({ submitted: false, detail: 'revert', response: rejected('invalid_transaction_state') })] });
    const out = await run(m.activities);
    expect(settlementRejection(out.error)).toEqual({ response: rejected('invalid_transaction_state') });
    expect(out.state).toBe('rejected');
    expect(m.calls).toEqual({ ...none, settlePayment: 1, verify: 1, submit: 1, confirm: 0 });
  });

  test.concurrent('once money may move, transient failures are retried until the outcome is known', async () => {
    // The confirmation's failure comes on attempt 5, verification's last: it is retried all the same.
    const m = mocks({
      submit: [transient, transient, transient, transient, () => ({ submitted: true, transaction: HASH })],
      confirm: [transient, () => settled],
    });
    const out = await run(m.activities);
    expect(out.value?.response).toEqual(settled);
    // Each attempt starts over; the real verification then finds the write-ahead record and judges nothing.
    expect(m.calls).toEqual({ ...none, settlePayment: 6, verify: 6, submit: 6, confirm: 2 });
  });

  test('a transaction that reverted on chain completes (not fails) with the failed response', async () => {
    const failed = rejected('invalid_transaction_state');
    const m = mocks({ confirm: [() => failed] });
    const out = await run(m.activities);
    expect(out).toMatchObject({ value: { response: failed, organizationId: 'org-1' }, state: 'failed' });
    expect(m.calls).toEqual({ ...none, settlePayment: 1, verify: 1, submit: 1, confirm: 1 });
  });

  test('no receipt within the fast path: submitted, then confirmPayment waits for it and the payment settles', async () => {
    const m = mocks({ confirm: [notMinedYet, notMinedYet, () => settled] });
    const out = await run(m.activities);
    expect(out).toMatchObject({ value: { response: settled, organizationId: 'org-1' }, state: 'settled' });
    // The fast path does not retry its short wait: confirmPayment takes over (and retries its own).
    expect(m.calls).toEqual({ ...none, settlePayment: 1, confirmPayment: 2, verify: 1, submit: 1, confirm: 3 });
    // Waiting past the fast path adds the parking patch (park-unproven-v1): its marker and upsert, on both types.
    const parking = { markers: patch.markers + 1, changeVersionUpserts: patch.changeVersionUpserts + 1 };
    expect(out.history).toEqual({ localActivities: 2, states: ['submitted', 'settled'], patch: parking });
  });
});
