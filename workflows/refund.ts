import { proxyActivities } from '@temporalio/workflow';
import type { RefundActivities } from '../activities/refund';
import type { RefundInput, RefundOutcome } from '../src/inference/types';
import { x402States } from './x402-state';
import { confirmOrPark } from './park';

// Ledger reads and writes: cheap and safe to repeat; retried until the database answers.
const { markRefundPending, claimStaleCharge, chargeSettlement, recordRefundOutcome } = proxyActivities<RefundActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
// Money moves: retried until the outcome is known (the write-ahead relayer never sends twice).
const { sendRefund } = proxyActivities<RefundActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { awaitRefundReceipt } = proxyActivities<RefundActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * Pays back one paid chat request whose provider failed (docs/decisions/paid-inference.md): the
 * ledger says refund_pending, the charge's settlement is awaited (it may still be in flight), then
 * the full amount is transferred from the revenue wallet to the payer through the write-ahead
 * relayer. Its id is `refund:<charge id>`, so a charge is refunded at most once. The same workflow,
 * started by the API with a delay under `chat-guard:<charge id>` and `onlyIfStale`, refunds a charge
 * that an API process left behind (it died before the reply was finished); both share the refund
 * transfer's write-ahead record, so even both together send one transfer. A refund transaction
 * unproven past `parkAfterMs` waits in `needs_review` (workflows/park.ts) and goes on confirming.
 */
export async function refundWorkflow(input: RefundInput): Promise<RefundOutcome> {
  const state = x402States('refund');
  if (input.onlyIfStale) {
    // The charge guard: a charge that was delivered, closed or refunded meanwhile is not owed.
    if (!(await claimStaleCharge(input))) {
      state('not_owed');
      return { state: 'not_owed', refundTx: '' };
    }
  } else await markRefundPending(input);
  state('refund_pending');

  const settlement = await chargeSettlement(input);
  if (!settlement.settled) {
    // The payment never moved money: nothing to give back.
    await recordRefundOutcome({ chargeId: input.chargeId, state: 'rejected', error: `${input.reason}; the payment did not settle` });
    state('not_charged');
    return { state: 'not_charged', refundTx: '' };
  }

  const { hash } = await sendRefund(input);
  state('refund_submitted');
  const receipt = await confirmOrPark(
    () => awaitRefundReceipt(input),
    'the refund transaction',
    input.parkAfterMs,
    () => state('needs_review'),
  );
  const final = receipt.status === 'success' ? 'refunded' : 'refund_failed';
  await recordRefundOutcome({ chargeId: input.chargeId, state: final, refundTx: hash });
  state(final);
  return { state: final, refundTx: hash };
}
