import type { SolanaNetworkId } from '../../chains/networks';
import type { SettlementBase } from '../scheme';

/**
 * A Solana `exact` payment as parsed: the buyer's partially signed transaction, exactly as received.
 * The buyer pays `payTo` directly inside it, so the payout is `payTo` and there is no fee.
 */
export interface SolanaPayment {
  network: SolanaNetworkId;
  /** Base64 transaction, signed by the transfer authority; we add the fee payer's signature. */
  transaction: string;
  payTo: string;
  asset: string;
  maxAmountRequired: string;
  /** Transfer authority (base58). */
  payer: string;
  payerSignature: string;
}

export interface SolanaSettleInput extends SettlementBase, SolanaPayment {
  route: 'solana';
  network: SolanaNetworkId;
}
