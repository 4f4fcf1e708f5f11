import { ApplicationFailure, proxyActivities, upsertSearchAttributes, log } from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlement';
import type { SettleInput, SettleOutcome } from '../src/settle/types';
import { SETTLEMENT_REJECTED } from '../src/settle/types';
import type { SettleResponse } from '../src/x402/schemas';
import { X402State } from '../temporal/search-attributes';

// Reads and the record are cheap and safe to repeat; verification gives up after a few tries so a
// chain that is down rejects the request instead of holding it (nothing has been sent yet).
const { verifyExactPayment } = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: 5 },
});
const { recordSettlement } = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
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
  const a = input.paymentPayload.payload.authorization;
  const payer = a.from;
  const base = {
    id: input.workflowId,
    organizationId: input.organizationId,
    apiKeyId: input.apiKeyId,
    route: input.route,
    network: input.network,
    payer: payer.toLowerCase(),
    recipient: input.payout.toLowerCase(),
    amount: a.value,
    fee: input.fee,
    requestId: input.requestId ?? null,
  };
  const state = async (s: string, extra: Record<string, unknown> = {}) => {
    upsertSearchAttributes([{ key: X402State, value: s }]);
    await recordSettlement({ ...base, state: s, ...extra });
  };
  const done = (response: SettleResponse): SettleOutcome => ({ response, organizationId: input.organizationId });

  await state('verifying', { transaction: null, errorReason: null, response: null });
  const verification = await verifyExactPayment(input);
  if (!verification.isValid) {
    const response: SettleResponse = { success: false, errorReason: verification.invalidReason, transaction: '', network: input.network, payer };
    await state('rejected', { errorReason: verification.invalidReason, response: JSON.stringify(response) });
    throw ApplicationFailure.nonRetryable(verification.invalidReason, SETTLEMENT_REJECTED, response);
  }

  const submitted = await submitSettlement(input);
  if (!submitted.submitted) {
    log.warn('settlement would revert', { detail: submitted.detail });
    const response: SettleResponse = { success: false, errorReason: submitted.reason, transaction: '', network: input.network, payer };
    await state('rejected', { errorReason: submitted.reason, response: JSON.stringify(response) });
    throw ApplicationFailure.nonRetryable(submitted.reason, SETTLEMENT_REJECTED, response);
  }
  await state('submitted', { transaction: submitted.hash });

  const receipt = await awaitSettlementReceipt({ network: input.network, workflowId: input.workflowId });
  const response: SettleResponse =
    receipt.status === 'success'
      ? { success: true, transaction: submitted.hash, network: input.network, payer }
      : { success: false, errorReason: 'invalid_transaction_state', transaction: '', network: input.network, payer };
  await state(receipt.status === 'success' ? 'settled' : 'failed', {
    transaction: submitted.hash,
    errorReason: response.errorReason ?? null,
    response: JSON.stringify(response),
  });
  return done(response);
}
