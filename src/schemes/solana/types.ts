import type { SolanaNetworkId } from '../../chains/networks';
import type { SettleResponse } from '../../x402/schemas';

/**
 * Input of one Solana settlement workflow (visible in the Temporal UI: no secret). The buyer pays
 * `payTo` directly inside its own transaction, so there is no payout or fee to resolve.
 */
export interface SolanaSettleInput {
  workflowId: string;
  requestId?: string;
  organizationId: string;
  apiKeyId: string;
  route: 'solana';
  network: SolanaNetworkId;
  /** The buyer's partially signed transaction, base64, exactly as received. */
  transaction: string;
  payTo: string;
  asset: string;
  maxAmountRequired: string;
  /** Transfer authority (base58). */
  payer: string;
  payerSignature: string;
}

/** The settle response of a Solana payment refused before broadcast. Pure: the workflow uses it too. */
export const solanaRejectedResponse = (input: SolanaSettleInput, reason: string): SettleResponse => ({
  success: false,
  errorReason: reason,
  transaction: '',
  network: input.network,
  payer: input.payer,
});
