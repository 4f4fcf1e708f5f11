import type { EvmNetworkId } from '../../chains/networks';
import type { ExactEvmPayload, PaymentRequirements } from '../../x402/schemas';
import type { SettlementBase } from '../scheme';

/** An EIP-3009 `exact` payment as parsed: what verification and the settle call need. */
export interface Eip3009Payment {
  network: EvmNetworkId;
  paymentPayload: ExactEvmPayload;
  paymentRequirements: PaymentRequirements;
}

/** Input of the settlement workflow for an EIP-3009 payment (same chain). */
export interface Eip3009SettleInput extends SettlementBase, Eip3009Payment {
  route: 'eip3009';
  network: EvmNetworkId;
}
