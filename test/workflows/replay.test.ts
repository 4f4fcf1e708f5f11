import { readFileSync } from 'node:fs';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { FIXTURE, PRE_PATCH_COMMIT } from '../support/record-pre-patch-history';

/**
 * Histories written by the code before a `patched(...)` change replay with today's workflows. The
 * fixture is a cross-chain top-up that ended in needs_review at once, recorded from the workflows of
 * `8b75891^` (before `operator-actions-v1`, since which needs_review waits for an operator);
 * regenerate it with `npx tsx test/support/record-pre-patch-history.ts`.
 */
const { EventType } = temporal.api.enums.v1;
const history = temporal.api.history.v1.History.decode(readFileSync(FIXTURE));
const WORKFLOW_ID = 'topup:demo-merchant:pre-operator-actions';

describe('replay of pre-patch histories', () => {
  test(`the fixture is what ${PRE_PATCH_COMMIT} did: completed in needs_review, no operator-actions-v1 marker`, () => {
    const events = history.events ?? [];
    const started = events[0]!.workflowExecutionStartedEventAttributes!;
    expect(started.workflowType?.name).toBe('topUpWorkflow');
    const last = events[events.length - 1]!;
    expect(last.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    const result = last.workflowExecutionCompletedEventAttributes!.result!.payloads![0]!.data!;
    expect(JSON.parse(Buffer.from(result).toString('utf8'))).toEqual({ state: 'needs_review', errorReason: 'needs_review' });
    // Patch markers carry the patch id in their payload: none names this one.
    expect(Buffer.from(temporal.api.history.v1.History.encode(history).finish()).includes('operator-actions-v1')).toBe(false);
  });

  test('replays with the current workflows without nondeterminism', async () => {
    await expect(
      Worker.runReplayHistory({ workflowsPath: require.resolve('../../workflows') }, history, WORKFLOW_ID),
    ).resolves.toBeUndefined();
  });
});
