import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { PermitActivities } from '../activities/permit';
import type { SettlementActivities } from '../activities/settlement';
import type { PermitReason, PermitResponse } from '../src/permit/schema';
import { PERMIT_REJECTED, type PermitInput, type PermitOutcome, type PermitOwnerOf } from '../src/permit/types';
import type { StateOf } from '../src/temporal/states';
import { x402States } from './x402-state';

// Reads are cheap and safe to repeat; verification gives up after a few tries so a chain that is
// down rejects the request instead of holding it (nothing has been sent yet).
const { verifyPermit } = proxyActivities<PermitActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: 5 },
});
// The permit's record lives in the settlements table (route `permit`): the same upsert activity.
const { recordSettlement } = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
// Once money may move, retry until the outcome is known: the activities are idempotent.
const { submitPermit } = proxyActivities<PermitActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { awaitPermitReceipt } = proxyActivities<PermitActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * Executes one EIP-2612 permit: verify off-chain against the token's domain and nonce, call the
 * facilitator's `transferWithPermit` from the relayer, wait for the receipt, record. Its id is
 * `permit:<network>:<token>:<owner>:<sighash>`, so every duplicate request attaches here. A permit
 * rejected before broadcast ends the workflow *failed* (a corrected retry may run again); once a
 * transaction exists, it always completes with the on-chain outcome.
 */
export async function permitWorkflow(input: PermitInput): Promise<PermitOutcome> {
  const whose: PermitOwnerOf = {
    organizationId: input.organizationId,
    recipient: input.recipient.toLowerCase(),
    value: input.value,
  };
  const base = {
    id: input.workflowId,
    organizationId: input.organizationId,
    apiKeyId: input.apiKeyId,
    route: 'permit',
    network: input.network,
    payer: input.owner.toLowerCase(),
    recipient: whose.recipient,
    amount: input.value,
    fee: '0',
    requestId: input.requestId ?? null,
  };
  const move = x402States('permit');
  const state = async (s: StateOf<'permit'>, extra: Record<string, unknown> = {}) => {
    move(s);
    await recordSettlement({ ...base, state: s, ...extra });
  };
  const failure = (reason: PermitReason, message: string): PermitResponse => ({
    success: false,
    errorReason: reason,
    transaction: '',
    network: input.network,
    message,
  });
  /** Nothing was sent: record, and end the workflow failed with the answer for the caller. */
  const reject = async (reason: PermitReason, message: string): Promise<never> => {
    const response = failure(reason, message);
    await state('rejected', { errorReason: reason, response: JSON.stringify(response) });
    throw ApplicationFailure.nonRetryable(message, PERMIT_REJECTED, response, whose);
  };

  await state('verifying', { transaction: null, errorReason: null, response: null });
  let verification;
  try {
    verification = await verifyPermit(input);
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    return reject('permit_execution_failed', `could not read the token on ${input.network}: ${err.cause?.message ?? err.message}`);
  }
  if (!verification.ok) return reject(verification.reason, verification.message);

  const submitted = await submitPermit(input);
  if (!submitted.submitted) return reject('permit_execution_failed', submitted.detail);
  await state('submitted', { transaction: submitted.hash });

  const receipt = await awaitPermitReceipt({ network: input.network, workflowId: input.workflowId });
  const response: PermitResponse =
    receipt.status === 'success'
      ? { success: true, transaction: submitted.hash, network: input.network }
      : failure('permit_execution_failed', `transferWithPermit reverted in transaction ${submitted.hash} (block ${receipt.blockNumber})`);
  await state(receipt.status === 'success' ? 'executed' : 'failed', {
    transaction: submitted.hash,
    errorReason: response.errorReason ?? null,
    response: JSON.stringify(response),
  });
  return { ...whose, response };
}
