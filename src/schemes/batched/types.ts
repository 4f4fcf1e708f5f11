import type { EvmNetworkId } from '../../chains/networks';

/**
 * Input of one batched settlement workflow: the request as it is forwarded upstream (asset already
 * swapped for USDC). No secret: visible in the Temporal UI (a buyer signature is no secret).
 */
export interface BatchedSettleInput {
  workflowId: string;
  requestId?: string;
  organizationId: string;
  apiKeyId: string;
  network: EvmNetworkId;
  payer: string;
  amount: string;
  recipient: string;
  forwarded: { paymentPayload: Record<string, unknown>; paymentRequirements: Record<string, unknown> };
}

/** What the workflow returns on acceptance: the upstream result, and whose payment it was. */
export interface BatchedSettleOutcome {
  upstream: Record<string, unknown>;
  organizationId: string;
}

/** ApplicationFailure types a batched workflow ends with (it fails, so a corrected retry may run again). */
export const BATCHED_REJECTED = 'BatchedRejected'; // details[0]: the upstream result (success false)
export const BATCHED_FORWARD_FAILED = 'BatchedForwardFailed'; // the upstream could not be reached

export const BATCHED_ROUTE = 'batched';
