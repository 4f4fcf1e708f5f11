import { ApplicationFailure } from '@temporalio/common';
import type { EvmNetworkId } from '../chains/networks';
import type { ExactEvmPayload, PaymentRequirements, SettleResponse } from '../x402/schemas';

/**
 * Input of one settlement workflow. It describes the payment completely (payout and fee are resolved
 * by the API from the organization's settings at request time) and holds no secret: it is visible
 * in the Temporal UI.
 */
export interface SettleInput {
  workflowId: string;
  requestId?: string;
  organizationId: string;
  apiKeyId: string;
  route: 'eip3009';
  network: EvmNetworkId;
  paymentPayload: ExactEvmPayload;
  paymentRequirements: PaymentRequirements;
  /** Wallet paid value minus fee: the organization's payout wallet or `extra.creditedRecipient`. */
  payout: string;
  fee: string;
  feeRecipient: string;
}

/** What the workflow returns: the settle response plus whose payment it was. */
export interface SettleOutcome {
  response: SettleResponse;
  organizationId: string;
}

/** Details of the ApplicationFailure a rejected settlement ends with (nothing was broadcast). */
export const SETTLEMENT_REJECTED = 'SettlementRejected';

/**
 * Whether a failure wraps a settlement workflow's SettlementRejected failure (a child-workflow
 * failure inside workflows, WorkflowFailedError in the API), with the settle response it carries.
 * Pure: workflows use it too.
 */
export function settlementRejection(err: unknown): { response?: SettleResponse } | undefined {
  const cause = err instanceof Error ? (err as { cause?: unknown }).cause : undefined;
  if (!(cause instanceof ApplicationFailure) || cause.type !== SETTLEMENT_REJECTED) return undefined;
  return { response: cause.details?.[0] as SettleResponse | undefined };
}

/** The settle response of a payment refused before any transaction (no hash). Pure: workflows use it too. */
export const rejectedResponse = (input: SettleInput, reason: string): SettleResponse => ({
  success: false,
  errorReason: reason,
  transaction: '',
  network: input.network,
  payer: input.paymentPayload.payload.authorization.from,
});
