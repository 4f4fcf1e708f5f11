import type { WorkerOptions } from '@temporalio/worker';

/**
 * Slot sizes of a worker (WORKER_TASK_SLOTS). Local activities get as many slots as workflow tasks:
 * each settlement's workflow task waits on exactly one local activity at a time.
 */
export function workerSlots(
  slots: number,
): Pick<WorkerOptions, 'maxConcurrentWorkflowTaskExecutions' | 'maxConcurrentLocalActivityExecutions'> {
  return { maxConcurrentWorkflowTaskExecutions: slots, maxConcurrentLocalActivityExecutions: slots };
}
