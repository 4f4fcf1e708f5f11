import type { WorkerOptions } from '@temporalio/worker';

/**
 * Slots and pollers of a worker that runs settlements (the worker, and the bench's orchestration floor):
 * - WORKER_TASK_SLOTS workflow-task slots, and as many local-activity slots: a settlement's fast path
 *   holds its workflow task while its one local activity waits for the receipt, so slots bound the
 *   settlements in flight (the SDK's 40 capped 1 s blocks at ~24 settle/s).
 * - Half the workflow-task pollers on the normal queue (the SDK gives it 2 of 10, the rest wait on
 *   the sticky queue): a settlement usually ends in its first workflow task, which always comes from
 *   the normal queue. With 2 pollers over the server's 4 task-queue partitions, a first task that
 *   found no poller waiting in its partition started up to 2 s late (bench histories at c=16).
 * docs/decisions/worker-task-slots.md.
 */
export function workerTuning(
  slots: number,
): Pick<WorkerOptions, 'maxConcurrentWorkflowTaskExecutions' | 'maxConcurrentLocalActivityExecutions' | 'nonStickyToStickyPollRatio'> {
  return { maxConcurrentWorkflowTaskExecutions: slots, maxConcurrentLocalActivityExecutions: slots, nonStickyToStickyPollRatio: 0.5 };
}
