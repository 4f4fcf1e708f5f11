import type { EvmNetworkId } from '../../chains/networks';
import type { Permit2PaymentPayload } from './payload';
import type { PaymentRequirements } from '../../x402/schemas';
import type { SettlementBase } from '../scheme';

/** A Permit2 payment (`exact` or `upto`) as parsed. */
export interface Permit2Payment {
  network: EvmNetworkId;
  paymentPayload: Permit2PaymentPayload;
  paymentRequirements: PaymentRequirements;
}

/** Input of the settlement workflow for a Permit2 payment; `amount` is exact's signed amount or upto's `extra.settleAmount`. */
export interface Permit2SettleInput extends SettlementBase, Permit2Payment {
  route: 'permit2';
  network: EvmNetworkId;
}
