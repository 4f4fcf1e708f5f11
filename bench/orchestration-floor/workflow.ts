import { proxyLocalActivities } from '@temporalio/workflow';
import type { FloorActivities, FloorInput } from './activities';

// Retried until the outcome is known, like the settlement's submit: the activity is idempotent.
const { transferWithAuthorization } = proxyLocalActivities<FloorActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s' },
});

/**
 * The orchestration floor of `npm run bench:settle`: the cheapest durable path on our stack. One
 * workflow, one local activity that sends the buyer's `transferWithAuthorization` through the
 * write-ahead relayer and waits for its receipt, and the transaction hash as the result.
 */
export async function orchestrationFloorWorkflow(input: FloorInput): Promise<string> {
  return transferWithAuthorization(input);
}

/**
 * What Temporal alone costs a durable path on this stack: a workflow that does nothing, started and
 * its result awaited (the `bare workflow` rows). No activity, no chain, no database of ours.
 */
export async function bareWorkflow(): Promise<void> {}
