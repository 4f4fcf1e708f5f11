// Every workflow the worker registers. Deterministic code only: no I/O here (see activities/).
export { settlementWorkflow } from './settlement';
export { permitWorkflow } from './permit';
export { withdrawalWorkflow } from './withdrawal';
export { batchedSettlementWorkflow } from './batched-settlement';
