import { readFileSync } from 'node:fs';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { PRE_PATCH_HISTORIES } from '../support/record-pre-patch-history';

/**
 * Histories written by the code before a `patched(...)` change replay with today's workflows. Each
 * fixture was recorded from the workflows of the commit before its patch, on mocked activities (see
 * test/support/record-pre-patch-history.ts, which regenerates them):
 *  - a cross-chain top-up that ended in needs_review at once, before `operator-actions-v1` (since
 *    which needs_review waits for an operator);
 *  - a valid settlement run as three local activities, before `settlement-one-local-activity`.
 */
const { EventType } = temporal.api.enums.v1;

describe.each(Object.entries(PRE_PATCH_HISTORIES))('replay of the pre-patch history %s', (_name, h) => {
  const history = temporal.api.history.v1.History.decode(readFileSync(h.file));
  const events = history.events ?? [];

  test(`the fixture is what ${h.commit} did: completed with its outcome, no ${h.patch} marker`, () => {
    expect(events[0]!.workflowExecutionStartedEventAttributes!.workflowType?.name).toBe(h.workflowType);
    const last = events[events.length - 1]!;
    expect(last.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    const result = last.workflowExecutionCompletedEventAttributes!.result!.payloads![0]!.data!;
    expect(JSON.parse(Buffer.from(result).toString('utf8'))).toEqual(h.outcome);
    // Patch markers carry the patch id in their payload: none names this one.
    expect(Buffer.from(temporal.api.history.v1.History.encode(history).finish()).includes(h.patch)).toBe(false);
  });

  test('replays with the current workflows without nondeterminism', async () => {
    await expect(
      Worker.runReplayHistory({ workflowsPath: require.resolve('../../workflows') }, history, h.workflowId),
    ).resolves.toBeUndefined();
  });
});

test('the pre-patch settlement ran its three steps as three local activities', () => {
  const history = temporal.api.history.v1.History.decode(readFileSync(PRE_PATCH_HISTORIES.settlementThreeActivities.file));
  const markers = (history.events ?? []).filter(
    (e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED && e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
  );
  expect(markers).toHaveLength(3);
});
