import { PERMIT2_SETTLE_REASON_STATUS } from './permit2-reasons';

/**
 * x402 v1 `errorReason` / `invalidReason` strings we emit on the settle path, with the HTTP status
 * the settle endpoint answers for each (the spec leaves non-batched statuses to us; see
 * docs/decisions.md "Settle status codes").
 */
export const SETTLE_REASON_STATUS = {
  invalid_payload: 400,
  invalid_payment_requirements: 400,
  invalid_network: 400,
  invalid_scheme: 400,
  unsupported_scheme: 400,
  invalid_exact_evm_payload_recipient_mismatch: 400,
  invalid_exact_evm_payload_asset_mismatch: 400,
  invalid_exact_evm_payload_signature: 400,
  invalid_exact_evm_payload_authorization_valid_after: 400,
  invalid_exact_evm_payload_authorization_valid_before: 400,
  invalid_exact_evm_payload_authorization_value: 400,
  invalid_exact_evm_payload_authorization_nonce_used: 409,
  insufficient_funds: 402,
  payout_wallet_not_configured: 400,
  invalid_transaction_state: 409,
  settlement_pending: 202,
  unexpected_settle_error: 500,
  ...PERMIT2_SETTLE_REASON_STATUS,
  cross_chain_not_supported: 400, // a same-chain-only network (or one without a bridge) on either end of a cross-chain payment
  unsupported_destination_chain: 400, // extra.destinationChainId names no enabled bridgeable network of the same mode
} as const;

export type SettleReason = keyof typeof SETTLE_REASON_STATUS;

export const settleStatusFor = (reason: string): number =>
  Object.hasOwn(SETTLE_REASON_STATUS, reason) ? SETTLE_REASON_STATUS[reason as SettleReason] : 400;
