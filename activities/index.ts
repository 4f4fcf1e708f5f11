import { createSettlementActivities, type SettlementActivityDeps } from './settlement';
import { createPermitActivities } from './permit';
import { createWithdrawalActivities } from './withdrawal';

export type ActivityDeps = SettlementActivityDeps;

/** All activities of the worker, bound to their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createSettlementActivities(deps),
    ...createPermitActivities(deps),
    ...createWithdrawalActivities(deps),
  };
}
