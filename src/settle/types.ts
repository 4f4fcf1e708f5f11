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

/** The settle response of a payment refused before any transaction (no hash). Pure: workflows use it too. */
export const rejectedResponse = (input: SettleInput, reason: string): SettleResponse => ({
  success: false,
  errorReason: reason,
  transaction: '',
  network: input.network,
  payer: input.paymentPayload.payload.authorization.from,
});
