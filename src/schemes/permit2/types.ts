import type { EvmNetworkId } from '../../chains/networks';
import type { Permit2PaymentPayload } from './payload';
import type { PaymentRequirements, SettleResponse } from '../../x402/schemas';

/**
 * Input of one Permit2 settlement workflow (`exact` or `upto`). Like the EIP-3009 SettleInput it
 * describes the payment completely and holds no secret (it is visible in the Temporal UI).
 */
export interface Permit2SettleInput {
  workflowId: string;
  requestId?: string;
  organizationId: string;
  apiKeyId: string;
  route: 'permit2';
  network: EvmNetworkId;
  paymentPayload: Permit2PaymentPayload;
  paymentRequirements: PaymentRequirements;
  /** What is settled: exact the signed amount, upto `extra.settleAmount` (default the maximum). */
  amount: string;
  payout: string;
  fee: string;
  feeRecipient: string;
}

/** The settle response of a Permit2 payment refused before any transaction. Pure: workflows use it too. */
export const permit2RejectedResponse = (input: Permit2SettleInput, reason: string): SettleResponse => ({
  success: false,
  errorReason: reason,
  transaction: '',
  network: input.network,
  payer: input.paymentPayload.payload.owner,
});
