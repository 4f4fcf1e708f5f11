import { propagation, trace } from '@opentelemetry/api';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { REQUEST_ID_ATTRIBUTE, WORKFLOW_ID_ATTRIBUTE } from '../src/observability/trace-attributes';

/**
 * Workflow interceptors (bundled only when tracing is on, after those of
 * @temporalio/interceptors-opentelemetry): spans made inside the sandbox (the workflow run, each
 * activity start) get the request id and workflow id from the baggage the start carried, as the
 * worker's own spans do (src/observability/tracing.ts). Attributes are not history: replay-safe.
 */
function label(): void {
  const span = trace.getActiveSpan();
  const baggage = propagation.getActiveBaggage();
  if (!span || !baggage) return;
  for (const key of [REQUEST_ID_ATTRIBUTE, WORKFLOW_ID_ATTRIBUTE]) {
    const value = baggage.getEntry(key)?.value;
    if (value) span.setAttribute(key, value);
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      execute(input, next) {
        label();
        return next(input);
      },
    },
  ],
  outbound: [
    {
      scheduleActivity(input, next) {
        label();
        return next(input);
      },
      scheduleLocalActivity(input, next) {
        label();
        return next(input);
      },
    },
  ],
});
