import { createSettlementActivities, type SettlementActivityDeps } from './settlement';
import { createPermitActivities } from './permit';
import { createWithdrawalActivities } from './withdrawal';
import { createBatchedActivities, type BatchedActivityDeps } from './batched';

export type ActivityDeps = SettlementActivityDeps & BatchedActivityDeps;

/** All activities of the worker, bound to their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createSettlementActivities(deps),
    ...createPermitActivities(deps),
    ...createWithdrawalActivities(deps),
    ...createBatchedActivities(deps),
  };
}
