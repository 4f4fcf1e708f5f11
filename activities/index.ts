import { createSettlementActivities, type SettlementActivityDeps } from './settlement';
import { createPermitActivities } from './permit';
import { createSolanaSettlementActivities, type SolanaSettlementActivityDeps } from './solana-settlement';

export type ActivityDeps = SettlementActivityDeps & SolanaSettlementActivityDeps;

/** All activities of the worker, bound to their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createSettlementActivities(deps),
    ...createPermitActivities(deps),
    ...createSolanaSettlementActivities(deps),
  };
}
