import { proxyActivities } from '@temporalio/workflow';
import type { StuckActivities } from '../activities/stuck';
import type { StuckCount } from '../src/db/stuck-payments';

// One scan reads visibility and signals; a failed one is simply replaced by the next minute's.
const { scanStuckPayments } = proxyActivities<StuckActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', maximumAttempts: 3 },
});

/**
 * Started every minute by the `x402-stuck-scan:<task queue>` schedule (src/temporal/stuck-scan.ts):
 * counts and flags the stuck workflows (activities/stuck.ts). Moves no money, has no state of its own.
 */
export async function stuckScanWorkflow(): Promise<StuckCount[]> {
  return scanStuckPayments();
}
