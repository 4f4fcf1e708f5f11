import { allHandlersFinished, condition, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { RefundActivities } from '../activities/refund';
import type { RefundInput, RefundOutcome } from '../src/inference/types';
import type { StateOf } from '../src/temporal/states';
import { x402States } from './x402-state';
import { confirmOrPark, parkedFor } from './park';
import { refundChargeUpdate } from './operator-actions';
import { operatorDesk } from './operator-desk';

/**
 * Patch id of parking a refund whose transaction was mined and reverted (USDC paused, the payer or
 * the revenue wallet blacklisted): before it, the charge ended `refund_failed` with no way back.
 */
export const REFUND_PARK_REVERTED_PATCH = 'refund-park-reverted-v1';

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

  // A reverted refund waits in needs_review for an operator's `refund` (README "For operators").
  let current: StateOf<'refund'> = 'refund_submitted';
  const move = (next: StateOf<'refund'>) => {
    current = next;
    state(next);
  };
  const desk = operatorDesk<RefundOutcome>(() =>
    current === 'needs_review'
      ? undefined
      : `refund ${workflowInfo().workflowId} is ${current}: an operator action is taken only in needs_review`,
  );
  desk.offer(refundChargeUpdate, 'refund');
  const end = async (outcome: RefundOutcome): Promise<RefundOutcome> => {
    if (!desk.actions.length) return outcome;
    const done = { ...outcome, operatorActions: [...desk.actions] };
    desk.answer(done);
    await condition(allHandlersFinished);
    return done;
  };

  /** Each attempt after a proven revert has a record of its own and the same on-chain key: at most one pays. */
  for (let attempt = 0; ; attempt++) {
    const again = attempt ? [attempt] : [];
    const { hash } = await sendRefund(input, ...again);
    move('refund_submitted');
    const receipt = await confirmOrPark(
      () => awaitRefundReceipt(input, ...again),
      'the refund transaction',
      input.parkAfterMs,
      // Unproven: operators see needs_review, while the desk stays closed (no second refund beside one in flight).
      () => state('needs_review'),
    );
    if (receipt.status === 'success') {
      await recordRefundOutcome({ chargeId: input.chargeId, state: 'refunded', refundTx: hash });
      move('refunded');
      return end({ state: 'refunded', refundTx: hash });
    }
    if (!patched(REFUND_PARK_REVERTED_PATCH)) {
      await recordRefundOutcome({ chargeId: input.chargeId, state: 'refund_failed', refundTx: hash });
      state('refund_failed');
      return { state: 'refund_failed', refundTx: hash };
    }
    // Mined and reverted: a proven outcome (nothing was paid), not retried by itself. The charge and
    // the workflow wait in needs_review with the reason until an operator asks for the refund again.
    const reason = `the refund ${hash} was mined and reverted; nothing was paid`;
    desk.refuse(reason); // an operator's refund that reverted again
    move('needs_review');
    parkedFor('the refund', reason); // in the same workflow task as the state
    await recordRefundOutcome({ chargeId: input.chargeId, state: 'needs_review', refundTx: hash, error: reason });
    await desk.next();
    await recordRefundOutcome({ chargeId: input.chargeId, state: 'refund_pending' });
    move('refund_pending');
  }
}
