// Every workflow the worker registers. Deterministic code only: no I/O here (see activities/).
export { fastSettlementWorkflow, settlementWorkflow } from './settlement';
// Type names of the per-scheme workflows the single skeleton replaced: registered so that runs started
// before the change still find a worker (docs/decisions/one-settlement-skeleton.md: how they drain).
export { settlementWorkflow as permit2SettlementWorkflow, settlementWorkflow as solanaSettlementWorkflow } from './settlement';
export { permitWorkflow } from './permit';
export { crossChainSettlementWorkflow } from './crosschain-settlement';
export { bridgeTransferWorkflow } from './bridge-transfer';
export { topUpWorkflow } from './topup';
export { refundWorkflow } from './refund';
export { withdrawalWorkflow } from './withdrawal';
export { batchedSettlementWorkflow } from './batched-settlement';
export { mediaJobWorkflow } from './media-job';
export { stuckScanWorkflow } from './stuck-scan';
