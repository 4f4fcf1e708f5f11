import { ApplicationFailure, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { SolanaSettlementActivities } from '../activities/solana-settlement';
import type { SolanaSettleInput } from '../src/schemes/solana/types';
import { solanaRejectedResponse } from '../src/schemes/solana/types';
import { SETTLEMENT_REJECTED, type SettleOutcome } from '../src/settle/types';
import type { SettleResponse } from '../src/x402/schemas';
import { X402State } from '../src/temporal/search-attributes';

// Verification only reads; a cluster that stays down rejects the request (nothing was sent).
const { verifySolanaPayment } = proxyActivities<SolanaSettlementActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: 5 },
});
// Once co-signed bytes may be out, retry until the outcome is known (the blockhash's expiry bounds it).
const { submitSolanaSettlement } = proxyActivities<SolanaSettlementActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { awaitSolanaConfirmation } = proxyActivities<SolanaSettlementActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * Settles one x402 `exact` Solana payment: verify the buyer's transaction, co-sign it as fee payer
 * and broadcast (write-ahead), wait for confirmation. Id `settle:<network>:<payer>:<payer signature>`,
 * so duplicates attach here. Refused before broadcast: the workflow fails with SettlementRejected
 * (like the EIP-3009 workflow); once a transaction may be out it completes with the cluster's outcome.
 */
export async function solanaSettlementWorkflow(input: SolanaSettleInput): Promise<SettleOutcome> {
  const state = (s: string) => upsertSearchAttributes([{ key: X402State, value: s }]);
  const reject = (response: SettleResponse): never => {
    state('rejected');
    throw ApplicationFailure.nonRetryable(response.errorReason ?? 'rejected', SETTLEMENT_REJECTED, response);
  };

  const verification = await verifySolanaPayment(input);
  if (!verification.isValid) reject(solanaRejectedResponse(input, verification.invalidReason));

  const submitted = await submitSolanaSettlement(input);
  if (!submitted.submitted) reject(solanaRejectedResponse(input, submitted.reason));
  state('submitted');

  const response = await awaitSolanaConfirmation(input);
  state(response.success ? 'settled' : 'failed');
  return { response, organizationId: input.organizationId };
}
