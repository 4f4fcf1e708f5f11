/**
 * x402 v1 `errorReason` / `invalidReason` strings we emit on the settle path, with the HTTP status
 * the settle endpoint answers for each (the spec leaves non-batched statuses to us; see
 * docs/decisions/settle-eip3009-same-chain.md, the order-of-checks table).
 * A scheme with a table of its own (Permit2) adds it in src/schemes/reasons.ts.
 */
export const X402_SETTLE_REASON_STATUS = {
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
  amount_too_low: 400, // below the network's minimum settle amount (gas griefing; MIN_SETTLE_AMOUNT_<NET>)
  payout_wallet_not_configured: 400,
  invalid_transaction_state: 409,
  settlement_pending: 202,
  unexpected_settle_error: 500,
  cross_chain_not_supported: 400, // a same-chain-only network (or one without a bridge) on either end of a cross-chain payment
  unsupported_destination_chain: 400, // extra.destinationChainId names no enabled bridgeable network of the same mode
  // Solana exact (x402 reference names; docs/decisions/solana-settlement.md)
  invalid_exact_svm_payload_transaction: 400,
  invalid_exact_svm_payload_fee_payer_mismatch: 400,
  invalid_exact_svm_payload_transaction_instructions_length: 400,
  invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction: 400,
  invalid_exact_svm_payload_transaction_instructions_compute_price_instruction: 400,
  invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high: 400,
  invalid_exact_svm_payload_transaction_instructions: 400,
  invalid_exact_svm_payload_transaction_instruction_not_spl_token_transfer_checked: 400,
  invalid_exact_svm_payload_transaction_instruction_not_token_2022_transfer_checked: 400,
  invalid_exact_svm_payload_transaction_not_a_transfer_instruction: 400,
  invalid_exact_svm_payload_transaction_fee_payer_transferring_funds: 400,
  invalid_exact_svm_payload_transaction_fee_payer_included_in_instruction_accounts: 400,
  invalid_exact_svm_payload_mint_mismatch: 400,
  invalid_exact_svm_payload_transaction_transfer_to_incorrect_ata: 400,
  invalid_exact_svm_payload_transaction_amount_mismatch: 400,
  invalid_exact_svm_payload_signature_invalid: 400,
  invalid_exact_svm_payload_transaction_sender_ata_not_found: 400,
  invalid_exact_svm_payload_transaction_receiver_ata_not_found: 400,
  invalid_exact_svm_payload_transaction_simulation_failed: 400,
  settle_exact_svm_block_height_exceeded: 400,
} as const;
