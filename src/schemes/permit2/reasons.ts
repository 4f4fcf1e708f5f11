/**
 * Reasons of the Permit2 settle route (docs/decisions/permit.md) with their HTTP
 * status. Names follow Coinbase's x402 reference facilitator where it has one for the rule; the
 * three `..._2612_...` names for the EIP-2612 permit for Permit2 beyond the amount are ours.
 */
export const PERMIT2_SETTLE_REASON_STATUS = {
  invalid_permit2_recipient_mismatch: 400,
  upto_facilitator_mismatch: 400,
  permit2_token_mismatch: 400,
  invalid_exact_evm_payload_amount_mismatch: 400,
  invalid_upto_evm_payload_settlement_exceeds_amount: 400,
  invalid_permit2_signature: 400,
  invalid_permit2_spender: 400,
  permit2_deadline_expired: 400,
  permit2_not_yet_valid: 400,
  permit2_invalid_nonce: 409,
  permit2_allowance_required: 402,
  permit2_2612_amount_mismatch: 400,
  permit2_2612_deadline_expired: 400,
  invalid_permit2_2612_signature: 400,
} as const;
