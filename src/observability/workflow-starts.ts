import type { ServiceDeps } from '../deps';

/**
 * The `onStart` of startOrAttach for API requests: counts the start as started or attached and
 * logs it with the request id, so one payment can be followed from the HTTP request to its workflow.
 */
export function observeWorkflowStart(
  deps: Pick<ServiceDeps, 'metrics' | 'logger'>,
  workflowType: string,
  requestId: string,
  workflowId: string,
) {
  return (result: 'started' | 'attached') => {
    deps.metrics?.workflowStart(workflowType, result);
    deps.logger.info({ requestId, workflowId, workflowType, result }, 'workflow start');
  };
}
