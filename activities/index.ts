import { createSettlementActivities, type SettlementActivityDeps } from './settlement';
import { createPermitActivities } from './permit';
import { createCrossChainActivities, type CrossChainActivityDeps } from './crosschain';
import { createTopUpActivities, type TopUpActivityDeps } from './topup';
import { createRefundActivities } from './refund';
import { createMediaActivities, type MediaActivityDeps } from './media';

import { createWithdrawalActivities } from './withdrawal';
import { createBatchedActivities, type BatchedActivityDeps } from './batched';
import type { RoleSigners } from './signers';
import { createStuckActivities, type StuckActivityDeps } from './stuck';
import { createBridgeRefundActivities, type BridgeRefundDeps } from './bridge-refund';

export type ActivityDeps = SettlementActivityDeps &
  CrossChainActivityDeps &
  BatchedActivityDeps &
  MediaActivityDeps &
  RoleSigners &
  StuckActivityDeps &
  BridgeRefundDeps &
  Pick<TopUpActivityDeps, 'config'>;

/** All activities of the worker, bound to their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createSettlementActivities(deps),
    ...createPermitActivities(deps),
    ...createCrossChainActivities(deps),
    ...createBridgeRefundActivities(deps),
    ...createTopUpActivities(deps),
    ...createRefundActivities(deps),
    ...createWithdrawalActivities(deps),
    ...createBatchedActivities(deps),
    ...createMediaActivities(deps),
    ...createStuckActivities(deps),
  };
}
