import { ApplicationFailure, proxyActivities, upsertSearchAttributes, log } from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlement';
import type { SettleInput, SettleOutcome } from '../src/settle/types';
import { rejectedResponse, SETTLEMENT_REJECTED } from '../src/settle/types';
import type { SettleResponse } from '../src/x402/schemas';
import { X402State } from '../src/temporal/search-attributes';

// Verification (reads + the record) is safe to repeat and gives up after a few tries so a
// chain that is down rejects the request instead of holding it (nothing has been sent yet).
const { verifyExactPayment } = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: 5 },
});
// Once money may move, retry until the outcome is known: the activities are idempotent.
const { submitSettlement } = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { awaitSettlementReceipt } = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * Settles one EIP-3009 authorization: verify, submit through the facilitator contract, wait for
 * the receipt, record. Its id is `settle:<network>:<payer>:<nonce>`, so every duplicate request
 * attaches here. A payment rejected before broadcast ends the workflow *failed* (a corrected retry of
 * the same authorization may run again); once a transaction exists, it always completes with the
 * on-chain outcome.
 */
export async function settlementWorkflow(input: SettleInput): Promise<SettleOutcome> {
  // Each activity also writes the settlement record of the state it ends in (one round trip each).
  const state = (s: string) => upsertSearchAttributes([{ key: X402State, value: s }]);
  const reject = (response: SettleResponse): never => {
    state('rejected');
    throw ApplicationFailure.nonRetryable(response.errorReason ?? 'rejected', SETTLEMENT_REJECTED, response);
  };

  const verification = await verifyExactPayment(input);
  if (!verification.isValid) reject(rejectedResponse(input, verification.invalidReason));

  const submitted = await submitSettlement(input);
  if (!submitted.submitted) {
    log.warn('settlement would revert', { detail: submitted.detail });
    reject(rejectedResponse(input, submitted.reason));
  }
  state('submitted');

  const response = await awaitSettlementReceipt(input);
  state(response.success ? 'settled' : 'failed');
  return { response, organizationId: input.organizationId };
}
