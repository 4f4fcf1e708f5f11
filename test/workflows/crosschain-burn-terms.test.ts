import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { BURN_TERMS_PATCH, crossChainSettlementWorkflow } from '../../workflows/crosschain-settlement';
import { FAST_TERMS, input, mocks, outcome } from '../support/crosschain-workflow-mocks';
import { patchIds } from '../support/history-events';
import { useWorkflowTestEnv, workflowBundle } from '../support/workflow-env';

/**
 * The burn's terms (finality, maxFee) of a cross-chain settlement are read by one activity before the
 * burn, kept in the history, and given to the burn: a fee endpoint that does not answer is retried
 * (nothing is burned meanwhile), and a replay of the history reads nothing again.
 */
const { EventType } = temporal.api.enums.v1;

describe('crossChainSettlementWorkflow burn terms (mocked activities)', () => {
  const t = useWorkflowTestEnv();

  test('the terms are read once, after verification and before the burn, and the burn is sent with them', async () => {
    const m = mocks();
    const i = { ...input(1), workflowId: `${input(1).workflowId}:${Date.now()}` };
    const history = await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(crossChainSettlementWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      expect(await handle.result()).toEqual(outcome);
      return handle.fetchHistory();
    });
    expect(m.calls.readBridgeBurnTerms).toEqual([[i]]);
    expect(m.calls.submitBridgeBurn).toEqual([[i, FAST_TERMS]]);
    const events = history.events ?? [];
    expect(patchIds(events)).toContain(BURN_TERMS_PATCH);
    const scheduled = events
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name);
    expect(scheduled.slice(0, 4)).toEqual(['verifyCrossChainPayment', 'readBridgeBurnTerms', 'submitBridgeBurn', 'awaitBridgeBurn']);

    // A replay (a worker that takes the run over) burns with the recorded terms and reads nothing:
    // replay runs no activity, so a workflow that asked again would not match its history.
    await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, i.workflowId)).resolves.toBeUndefined();
  });

  test('a fee read without an answer is retried, nothing burned meanwhile; the burn gets the answer', async () => {
    let burnsBeforeAnswer: number | undefined;
    const m = mocks({
      terms: () => {
        const attempt = m.calls.readBridgeBurnTerms!.length;
        if (attempt < 3) throw ApplicationFailure.retryable('fee endpoint answered 503', 'FeeUnavailable');
        burnsBeforeAnswer = m.calls.submitBridgeBurn?.length ?? 0;
        return FAST_TERMS;
      },
    });
    const i = { ...input(2), workflowId: `${input(2).workflowId}:${Date.now()}` };
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(crossChainSettlementWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      expect(await handle.result()).toEqual(outcome);
    });
    expect(m.calls.readBridgeBurnTerms).toHaveLength(3);
    expect(burnsBeforeAnswer).toBe(0);
    expect(m.calls.submitBridgeBurn).toEqual([[i, FAST_TERMS]]);
  });
});
