import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';

/** One schedule per task queue (one deployment), so workers of several deployments on one namespace do not share it. */
export const stuckScanScheduleId = (taskQueue: string) => `x402-stuck-scan:${taskQueue}`;

/**
 * The visibility query of the stuck scan: running workflows of this deployment's task queue that
 * started before `before`. Which of them are in a stuck state is decided from their attributes
 * (src/temporal/states.ts), since a query cannot name every non-terminal state of every kind.
 */
export const stuckScanQuery = (taskQueue: string, before: Date) =>
  `TaskQueue="${taskQueue}" AND ExecutionStatus="Running" AND StartTime < "${before.toISOString()}"`;

/**
 * Creates the stuck scan's schedule (every minute, `stuckScanWorkflow` on `taskQueue`) unless it
 * exists: every worker calls this at start, the first one creates it. An existing schedule is left
 * as it is (an operator may have paused it).
 */
export async function ensureStuckScanSchedule(client: Client, taskQueue: string): Promise<'created' | 'exists'> {
  const scheduleId = stuckScanScheduleId(taskQueue);
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '1m' }] },
      action: { type: 'startWorkflow', workflowType: 'stuckScanWorkflow', workflowId: scheduleId, taskQueue, args: [] },
      // A scan that is still running when the next one is due makes the next one pointless.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1m' },
    });
    return 'created';
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning) return 'exists';
    throw err;
  }
}
