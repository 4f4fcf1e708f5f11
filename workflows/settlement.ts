import { ApplicationFailure, log, proxyLocalActivities } from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlement';
import { SETTLEMENT_REJECTED, type SettleOutcome, type SettlementInput } from '../src/settle/types';
import type { SettleResponse } from '../src/x402/schemas';
import { x402States } from './x402-state';

/** Retry policies of the skeleton, written once for every scheme. */
export const SETTLEMENT_RETRY = {
  // Verification only reads (and records); a chain that stays down rejects the request, nothing was sent.
  verify: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: 5 },
  // Once money may move, retry until the outcome is known: the activities are idempotent.
  untilKnown: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
} as const;

// Local activities: the whole settlement usually runs inside one workflow task, with no activity
// task round trips (docs/decisions.md "Local activities on the settlement path"). Their results reach
// history only when the task completes, so after a crash they run again: verification first asks for
// the write-ahead record (a payment that was signed is never judged again), and submission re-sends the
// recorded bytes.
const { verifyPayment } = proxyLocalActivities<SettlementActivities>({ startToCloseTimeout: '30s', retry: SETTLEMENT_RETRY.verify });
const { submitPayment } = proxyLocalActivities<SettlementActivities>({ startToCloseTimeout: '60s', retry: SETTLEMENT_RETRY.untilKnown });
const { confirmPayment } = proxyLocalActivities<SettlementActivities>({ startToCloseTimeout: '2m', retry: SETTLEMENT_RETRY.untilKnown });

/**
 * The one settlement skeleton, for every scheme (EIP-3009, Permit2, Solana): verify, submit
 * (write-ahead), confirm. Its id is the payment's business key (`settle:<network>:<payer>:<nonce>`),
 * so every duplicate request attaches here. A payment rejected before broadcast ends the workflow
 * *failed* (a corrected retry of the same authorization may run again); once a transaction exists,
 * it always completes with the on-chain outcome.
 */
export async function settlementWorkflow(input: SettlementInput): Promise<SettleOutcome> {
  const state = x402States('settle');
  const reject = (response: SettleResponse): never => {
    state('rejected');
    throw ApplicationFailure.nonRetryable(response.errorReason ?? 'rejected', SETTLEMENT_REJECTED, response);
  };

  const verification = await verifyPayment(input);
  if (!verification.isValid) reject(verification.response);

  const submitted = await submitPayment(input);
  if (!submitted.submitted) {
    log.warn('settlement refused at submission', { detail: submitted.detail });
    reject(submitted.response);
  }
  state('submitted');

  const response = await confirmPayment(input);
  state(response.success ? 'settled' : 'failed');
  return { response, organizationId: input.organizationId };
}
