import { WorkflowNotFoundError, type Client } from '@temporalio/client';

/**
 * Whether a workflow id's latest run is running or completed. A failed, terminated or timed-out run
 * may run again under its id, so a request for it is judged afresh; no run at all is false.
 */
export async function runsOrCompleted(temporal: Client, workflowId: string): Promise<boolean> {
  return temporal.workflow
    .getHandle(workflowId)
    .describe()
    .then(
      (d) => d.status.name === 'RUNNING' || d.status.name === 'COMPLETED',
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      },
    );
}
