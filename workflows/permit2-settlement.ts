import { ApplicationFailure, proxyActivities, upsertSearchAttributes, log } from '@temporalio/workflow';
import type { Permit2SettlementActivities } from '../activities/permit2-settlement';
import type { SettleOutcome } from '../src/settle/types';
import { SETTLEMENT_REJECTED } from '../src/settle/types';
import { permit2RejectedResponse, type Permit2SettleInput } from '../src/schemes/permit2/types';
import type { SettleResponse } from '../src/x402/schemas';
import { X402State } from '../src/temporal/search-attributes';

// Verification (reads + the record) is safe to repeat and gives up after a few tries so a chain
// that is down rejects the request instead of holding it (nothing has been sent yet).
const { verifyPermit2Payment } = proxyActivities<Permit2SettlementActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: 5 },
});
// Once money may move, retry until the outcome is known: the activities are idempotent.
const { submitPermit2Settlement } = proxyActivities<Permit2SettlementActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { awaitPermit2SettlementReceipt } = proxyActivities<Permit2SettlementActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * Settles one Permit2 payment (`exact` or `upto`): verify, one facilitator call that pulls the
 * payment through the proxy and pays out, wait for the receipt. Its id is
 * `settle:<network>:<owner>:<permit2 nonce>`, so every duplicate request attaches here. As for
 * EIP-3009, a rejection before broadcast fails the workflow (a corrected retry may run again); once
 * a transaction exists it always completes with the on-chain outcome.
 */
export async function permit2SettlementWorkflow(input: Permit2SettleInput): Promise<SettleOutcome> {
  const state = (s: string) => upsertSearchAttributes([{ key: X402State, value: s }]);
  const reject = (response: SettleResponse): never => {
    state('rejected');
    throw ApplicationFailure.nonRetryable(response.errorReason ?? 'rejected', SETTLEMENT_REJECTED, response);
  };

  const verification = await verifyPermit2Payment(input);
  if (!verification.isValid) reject(permit2RejectedResponse(input, verification.invalidReason));

  const submitted = await submitPermit2Settlement(input);
  if (!submitted.submitted) {
    log.warn('permit2 settlement would revert', { detail: submitted.detail });
    reject(permit2RejectedResponse(input, submitted.reason));
  }
  state('submitted');

  const response = await awaitPermit2SettlementReceipt(input);
  state(response.success ? 'settled' : 'failed');
  return { response, organizationId: input.organizationId };
}
