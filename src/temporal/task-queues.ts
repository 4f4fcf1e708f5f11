/** Workflow type names as registered by the worker (exported function names in workflows/). */
export const WORKFLOW_TYPES = {
  settlement: 'settlementWorkflow',
  permit: 'permitWorkflow',
  permit2Settlement: 'permit2SettlementWorkflow',
  crossChainSettlement: 'crossChainSettlementWorkflow',
  bridgeTransfer: 'bridgeTransferWorkflow',
  solanaSettlement: 'solanaSettlementWorkflow',
  topup: 'topUpWorkflow',
  refund: 'refundWorkflow',
  withdrawal: 'withdrawalWorkflow',
  batchedSettlement: 'batchedSettlementWorkflow',
  mediaJob: 'mediaJobWorkflow',
} as const;
