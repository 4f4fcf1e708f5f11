import { topupReasonForSettle, topupStatusFor } from '../../src/topup/reasons';
import { loadTopupConfig } from '../../src/topup/config';
import { topupWorkflowId } from '../../src/temporal/workflow-ids';

describe('top-up reasons, config and ids', () => {
  test('statuses of the spec table', () => {
    for (const r of [
      'buyer_mismatch',
      'wrong_network',
      'wrong_recipient',
      'invalid_signature',
      'authorization_expired',
      'amount_mismatch',
      'amount_too_low',
      'amount_too_high',
    ]) {
      expect([r, topupStatusFor(r)]).toEqual([r, 400]);
    }
    for (const r of ['authorization_reused', 'credit_limit_reached', 'deposit_failed']) expect([r, topupStatusFor(r)]).toEqual([r, 409]);
    expect(topupStatusFor('unknown_merchant')).toBe(404);
    expect(topupStatusFor('needs_review')).toBe(500);
    expect(topupStatusFor('bridging')).toBe(503);
    expect(topupStatusFor('insufficient_funds')).toBe(402);
  });

  test('settlement rejections map onto top-up reasons', () => {
    expect(topupReasonForSettle('invalid_exact_evm_payload_signature')).toBe('invalid_signature');
    expect(topupReasonForSettle('invalid_exact_evm_payload_authorization_valid_before')).toBe('authorization_expired');
    expect(topupReasonForSettle('invalid_exact_evm_payload_authorization_nonce_used')).toBe('authorization_reused');
    expect(topupReasonForSettle('insufficient_funds')).toBe('insufficient_funds');
    expect(topupReasonForSettle('something_else')).toBe('settlement_failed');
  });

  test('config: defaults, a fee needs a recipient, cross-chain sources are named', () => {
    const c = loadTopupConfig({});
    expect(c).toMatchObject({
      TOPUP_PORT: 4022,
      TOPUP_MERCHANT_ID: 'demo-merchant',
      TOPUP_SOURCES: ['base'],
      topupUrl: 'http://localhost:4022',
    });
    expect(() => loadTopupConfig({ TOPUP_FEE_BPS: '30' })).toThrow('TOPUP_FEE_RECIPIENT');
    expect(() => loadTopupConfig({ TOPUP_SOURCES: 'base,solana' })).toThrow('TOPUP_SOURCES');
    expect(loadTopupConfig({ TOPUP_SOURCES: 'base, optimism,ink' }).TOPUP_SOURCES).toEqual(['base', 'optimism', 'ink']);
  });

  test('workflow id topup:<merchant>:<payer>:<nonce>, lower-case', () => {
    expect(topupWorkflowId('demo-merchant', '0xAbC0000000000000000000000000000000000001', '0xDEAD')).toBe(
      'topup:demo-merchant:0xabc0000000000000000000000000000000000001:0xdead',
    );
  });
});
