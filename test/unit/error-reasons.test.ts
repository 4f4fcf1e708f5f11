import { SETTLE_REASON_STATUS, settleStatusFor } from '../../src/schemes/reasons';

// Literal statuses: the spec leaves non-batched statuses to us; these are the order-of-checks tables
// of docs/decisions/ (settle-eip3009-same-chain.md, permit2-settlement.md, crosschain-settlement.md).
const CASES: [string, number][] = [
  ['invalid_payload', 400],
  ['invalid_payment_requirements', 400],
  ['invalid_network', 400],
  ['invalid_scheme', 400],
  ['unsupported_scheme', 400],
  ['invalid_exact_evm_payload_recipient_mismatch', 400],
  ['invalid_exact_evm_payload_asset_mismatch', 400],
  ['invalid_exact_evm_payload_signature', 400],
  ['invalid_exact_evm_payload_authorization_valid_after', 400],
  ['invalid_exact_evm_payload_authorization_valid_before', 400],
  ['invalid_exact_evm_payload_authorization_value', 400],
  ['invalid_exact_evm_payload_authorization_nonce_used', 409],
  ['insufficient_funds', 402],
  ['amount_too_low', 400],
  ['payout_wallet_not_configured', 400],
  ['invalid_transaction_state', 409],
  ['settlement_pending', 202],
  ['unexpected_settle_error', 500],
  // Permit2
  ['invalid_permit2_recipient_mismatch', 400],
  ['upto_facilitator_mismatch', 400],
  ['permit2_token_mismatch', 400],
  ['invalid_exact_evm_payload_amount_mismatch', 400],
  ['invalid_upto_evm_payload_settlement_exceeds_amount', 400],
  ['invalid_permit2_signature', 400],
  ['invalid_permit2_spender', 400],
  ['permit2_deadline_expired', 400],
  ['permit2_not_yet_valid', 400],
  ['permit2_invalid_nonce', 409],
  ['permit2_allowance_required', 402],
  ['permit2_2612_amount_mismatch', 400],
  ['permit2_2612_deadline_expired', 400],
  ['invalid_permit2_2612_signature', 400],
  // Cross-chain
  ['cross_chain_not_supported', 400],
  ['unsupported_destination_chain', 400],
];

describe('settleStatusFor', () => {
  test.each(CASES)('%s -> %i', (reason, status) => {
    expect(settleStatusFor(reason)).toBe(status);
  });

  test('the table has exactly the reasons above', () => {
    const reasons = Object.keys(SETTLE_REASON_STATUS).filter((r) => !r.includes('_svm_')); // Solana: verify-exact-svm.test.ts
    expect(reasons.sort()).toEqual(CASES.map(([r]) => r).sort());
  });

  test('unknown reasons answer 400', () => {
    expect(settleStatusFor('something_new')).toBe(400);
    expect(settleStatusFor('')).toBe(400);
    expect(settleStatusFor('INSUFFICIENT_FUNDS')).toBe(400);
  });
});

test('inherited object keys are not reasons', () => {
  expect(['toString', 'constructor', '__proto__'].map(settleStatusFor)).toEqual([400, 400, 400]);
});
