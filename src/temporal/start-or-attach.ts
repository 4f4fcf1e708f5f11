import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { SearchAttributePair, Workflow } from '@temporalio/common';
import type { WorkflowStartOptions } from '@temporalio/client';

/**
 * Starts the workflow under its business-key id, or attaches to the execution that already has it
 * (running, or completed successfully); a *failed* run (rejected before any transaction) may run
 * again. The conflict policy is FAIL rather than USE_EXISTING so that the answer itself says which
 * happened (`onStart`): the SDK's start() does not expose the server's `started` flag. The workflow
 * is passed as its function, so its input is type-checked against the workflow's signature.
 */
export async function startOrAttach<W extends Workflow>(
  client: Client,
  workflow: W,
  opts: {
    workflowId: string;
    taskQueue: string;
    args: Parameters<W>;
    searchAttributes: SearchAttributePair[];
    memo?: Record<string, unknown>;
    onStart?: (result: 'started' | 'attached') => void;
  },
): Promise<WorkflowHandle<W>> {
  try {
    const handle = await client.workflow.start(workflow, {
      workflowId: opts.workflowId,
      taskQueue: opts.taskQueue,
      args: opts.args,
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      typedSearchAttributes: opts.searchAttributes,
      memo: opts.memo,
    } as unknown as WorkflowStartOptions<W>);
    opts.onStart?.('started');
    return handle;
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    opts.onStart?.('attached');
    return client.workflow.getHandle<W>(opts.workflowId);
  }
}

/** Waits for the result until `deadline`; `{done: false}` when it is not there yet. */
export async function resultBefore<T>(
  client: Client,
  handle: WorkflowHandle,
  deadline: number,
): Promise<{ done: true; value: T } | { done: false }> {
  try {
    const value = (await client.withDeadline(deadline, () => handle.result())) as T;
    return { done: true, value };
  } catch (err) {
    // At the deadline the wait ends with DEADLINE_EXCEEDED from the client or CANCELLED from a
    // loaded server; either way the workflow is still running. A workflow outcome is rethrown.
    if (!(err instanceof WorkflowFailedError) && Date.now() >= deadline - 50) return { done: false };
    throw err;
  }
}
