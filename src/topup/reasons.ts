/**
 * Top-up `errorReason`s and their HTTP statuses (spec "Top-up gateway"). Pure: the workflow maps a
 * rejected settlement with `topupReasonForSettle`, the gateway answers with `topupStatusFor`.
 */
export const TOPUP_REASON_STATUS: Record<string, number> = {
  invalid_request: 400,
  rate_limited: 429, // the client's request budget (RATE_LIMIT_*); Retry-After says when
  buyer_mismatch: 400,
  wrong_network: 400,
  wrong_recipient: 400,
  wrong_asset: 400,
  invalid_signature: 400,
  authorization_expired: 400,
  authorization_window_too_long: 400, // validBefore beyond maxTimeoutSeconds (+60 s clock allowance)
  authorization_not_yet_valid: 400,
  amount_mismatch: 400,
  amount_too_low: 400,
  amount_too_high: 400,
  unknown_merchant: 404,
  topup_not_found: 404,
  authorization_reused: 409,
  credit_limit_reached: 409,
  deposit_failed: 409,
  // A settlement that failed for the payer's funds or on chain: 402 with a fresh challenge.
  insufficient_funds: 402,
  settlement_failed: 402,
  invalid_payment: 402,
  settlement_pending: 503,
  gas_price_unavailable: 503,
  gas_cost_exceeds_fee: 503,
  bridging: 503,
  needs_review: 500,
};

export const topupStatusFor = (reason: string): number => TOPUP_REASON_STATUS[reason] ?? 400;

/** The top-up reason of a settlement the settlement workflow rejected before broadcast. */
export function topupReasonForSettle(reason: string): string {
  switch (reason) {
    case 'invalid_exact_evm_payload_signature':
      return 'invalid_signature';
    case 'invalid_exact_evm_payload_authorization_valid_before':
      return 'authorization_expired';
    case 'invalid_exact_evm_payload_authorization_valid_after':
      return 'authorization_not_yet_valid';
    case 'invalid_exact_evm_payload_authorization_nonce_used':
    case 'invalid_transaction_state':
      return 'authorization_reused';
    case 'invalid_exact_evm_payload_recipient_mismatch':
      return 'wrong_recipient';
    case 'invalid_exact_evm_payload_asset_mismatch':
      return 'wrong_asset';
    case 'invalid_exact_evm_payload_authorization_value':
      return 'amount_mismatch';
    case 'invalid_network':
      return 'wrong_network';
    case 'insufficient_funds':
      return 'insufficient_funds';
    default:
      return 'settlement_failed';
  }
}
