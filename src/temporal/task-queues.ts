/** Workflow type names as registered by the worker (exported function names in workflows/). */
export const WORKFLOW_TYPES = {
  settlement: 'settlementWorkflow',
  permit: 'permitWorkflow',
  withdrawal: 'withdrawalWorkflow',
  batchedSettlement: 'batchedSettlementWorkflow',
} as const;
