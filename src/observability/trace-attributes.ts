/**
 * Our span attributes (docs/decisions/one-request-one-trace.md). Kept free of imports so the
 * workflow bundle (workflows/tracing-interceptors.ts) can use the same names as the API and worker.
 */

/** The request id (X-Request-Id) of the HTTP request a span serves, on every span of its trace. */
export const REQUEST_ID_ATTRIBUTE = 'x402.request_id';
/** The business-key workflow id (`settle:<network>:<payer>:<nonce>`, ...) on every span of that workflow. */
export const WORKFLOW_ID_ATTRIBUTE = 'temporal.workflow_id';
