/**
 * Where the x402 v2 SDKs (`@x402/evm`, `@x402/svm` facilitators) name a rule differently from our
 * v1 reasons, a v2 answer uses their name, so a v2 seller's logs and branches read the same as with
 * their own facilitator. Reasons not listed (ours only, or already the same) pass unchanged.
 */
const EVM: Record<string, string> = {
  invalid_network: 'invalid_exact_evm_network_mismatch',
  invalid_scheme: 'invalid_exact_evm_scheme',
  invalid_exact_evm_payload_recipient_mismatch: 'invalid_exact_evm_recipient_mismatch',
  invalid_exact_evm_payload_signature: 'invalid_exact_evm_signature',
  invalid_exact_evm_payload_authorization_value: 'invalid_exact_evm_payload_authorization_value_mismatch',
  invalid_exact_evm_payload_authorization_nonce_used: 'invalid_exact_evm_nonce_already_used',
  insufficient_funds: 'invalid_exact_evm_insufficient_balance',
  // Permit2 (exact and upto)
  invalid_exact_evm_payload_amount_mismatch: 'permit2_amount_mismatch',
  upto_facilitator_mismatch: 'upto_unauthorized_facilitator',
  permit2_2612_deadline_expired: 'eip2612_deadline_expired',
};

const SVM: Record<string, string> = {
  invalid_network: 'invalid_exact_svm_network_mismatch',
  invalid_scheme: 'invalid_exact_svm_unsupported_scheme',
  invalid_exact_svm_payload_transaction: 'invalid_exact_svm_payload_transaction_could_not_be_decoded',
  invalid_exact_svm_payload_fee_payer_mismatch: 'invalid_exact_svm_fee_payer_mismatch',
  invalid_exact_svm_payload_transaction_amount_mismatch: 'invalid_exact_svm_payload_amount_mismatch',
  invalid_exact_svm_payload_transaction_transfer_to_incorrect_ata: 'invalid_exact_svm_payload_recipient_mismatch',
  invalid_exact_svm_payload_transaction_not_a_transfer_instruction: 'invalid_exact_svm_payload_no_transfer_instruction',
  invalid_exact_svm_payload_transaction_simulation_failed: 'invalid_exact_svm_transaction_simulation_failed',
};

export const V2_REASON_NAMES = { evm: EVM, svm: SVM } as const;

/** Our reason in the v2 SDKs' words for a payment on `network` (a v1 id or CAIP-2). */
export function v2Reason(reason: string, network: string): string {
  const names = network.startsWith('solana') ? SVM : EVM;
  return Object.hasOwn(names, reason) ? names[reason] : reason;
}
