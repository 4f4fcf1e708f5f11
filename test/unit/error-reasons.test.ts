import { SETTLE_REASON_STATUS, settleStatusFor } from '../../src/x402/error-reasons';
import { PERMIT2_SETTLE_REASON_STATUS } from '../../src/schemes/permit2/reasons';

describe('settleStatusFor', () => {
  test.each<[string, number]>([
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
    ...Object.entries(PERMIT2_SETTLE_REASON_STATUS),
    ['cross_chain_not_supported', 400],
    ['unsupported_destination_chain', 400],
  ])('%s -> %i', (reason, status) => {
    expect(settleStatusFor(reason)).toBe(status);
  });

  test('the table has exactly the reasons above', () => {
    expect(Object.keys(SETTLE_REASON_STATUS).filter((r) => !r.includes('_svm_'))).toHaveLength(
      20 + Object.keys(PERMIT2_SETTLE_REASON_STATUS).length,
    ); // Solana: verify-exact-svm.test.ts
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
