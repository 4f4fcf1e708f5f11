// Every workflow the worker registers. Deterministic code only: no I/O here (see activities/).
export { settlementWorkflow } from './settlement';
export { permitWorkflow } from './permit';
export { permit2SettlementWorkflow } from './permit2-settlement';
export { crossChainSettlementWorkflow } from './crosschain-settlement';
export { bridgeTransferWorkflow } from './bridge-transfer';
export { solanaSettlementWorkflow } from './solana-settlement';
export { topUpWorkflow } from './topup';
export { refundWorkflow } from './refund';
export { withdrawalWorkflow } from './withdrawal';
export { batchedSettlementWorkflow } from './batched-settlement';
export { mediaJobWorkflow } from './media-job';
