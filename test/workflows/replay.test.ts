import { readFileSync } from 'node:fs';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { markersNamed, patchIds } from '../support/history-events';
import { workflowBundle } from '../support/workflow-env';
import { EARLIER_HISTORIES, PRE_PATCH_HISTORIES, type RecordedHistory } from '../support/record-pre-patch-history';

/**
 * Histories written by the code before a `patched(...)` change replay with today's workflows. Each
 * fixture was recorded from the workflows of the commit before its patch, on mocked activities (see
 * test/support/record-pre-patch-history.ts, which regenerates them):
 *  - a cross-chain top-up that ended in needs_review at once, before `operator-actions-v1` (since
 *    which needs_review waits for an operator);
 *  - a valid settlement run as three local activities, before `settlement-one-local-activity`;
 *  - a delivered cross-chain settlement that burned right after verification, before `bridge-burn-terms-v1`;
 * and histories of code since changed without a patch (EARLIER_HISTORIES):
 *  - a settlement whose first task carried the stuck scan's `markStuck`, before the API's type was split
 *    from `settlementWorkflow`.
 */
const { EventType } = temporal.api.enums.v1;

const decode = (h: RecordedHistory) => temporal.api.history.v1.History.decode(readFileSync(h.file));

describe.each(Object.entries({ ...PRE_PATCH_HISTORIES, ...EARLIER_HISTORIES }))('replay of the recorded history %s', (_name, h) => {
  const history = decode(h);
  const events = history.events ?? [];

  test(`the fixture is what ${h.commit} did: ${h.workflowType}, completed with its outcome`, () => {
    expect(events[0]!.workflowExecutionStartedEventAttributes!.workflowType?.name).toBe(h.workflowType);
    const last = events[events.length - 1]!;
    expect(last.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    const result = last.workflowExecutionCompletedEventAttributes!.result!.payloads![0]!.data!;
    expect(JSON.parse(Buffer.from(result).toString('utf8'))).toEqual(h.outcome);
    if ('patch' in h) expect(patchIds(history.events ?? [])).not.toContain(h.patch);
  });

  test('replays with the current workflows without nondeterminism', async () => {
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, h.workflowId)).resolves.toBeUndefined();
  });
});

test('the stuck-at-start settlement ran the stuck mark before its fast path', () => {
  const history = decode(EARLIER_HISTORIES.settlementStuckAtStart);
  expect(patchIds(history.events ?? [])).toEqual(['x402-mark-stuck', 'settlement-one-local-activity']);
  const signals = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'markStuck');
  expect(signals).toHaveLength(1);
});

test('the pre-patch settlement ran its three steps as three local activities', () => {
  const history = decode(PRE_PATCH_HISTORIES.settlementThreeActivities);
  expect(markersNamed(history.events ?? [], 'core_local_activity')).toHaveLength(3);
});

test('the pre-patch cross-chain settlement burned right after verification, without reading its terms', () => {
  const history = decode(PRE_PATCH_HISTORIES.crossChainPreBurnTerms);
  const scheduled = (history.events ?? [])
    .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    .map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name);
  expect(scheduled.slice(0, 3)).toEqual(['verifyCrossChainPayment', 'submitBridgeBurn', 'awaitBridgeBurn']);
});
