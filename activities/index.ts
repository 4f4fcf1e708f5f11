import { createSettlementActivities, type SettlementActivityDeps } from './settlement';

export type ActivityDeps = SettlementActivityDeps;

/** All activities of the worker, bound to their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return { ...createSettlementActivities(deps) };
}
