import { encodeAbiParameters, keccak256, toBytes, type Address, type Hex } from 'viem';
import { payerCommitmentNonce, verifyPayerCommitment, type PayerCommitment } from '../../src/topup/payer-commitment';

const c: PayerCommitment = {
  merchantId: 'demo-merchant',
  sourceChainId: 10,
  destinationChainId: 8453,
  creditedRecipient: '0x1111111111111111111111111111111111111111',
  payer: '0x2222222222222222222222222222222222222222',
  buyer: '0x3333333333333333333333333333333333333333',
  salt: `0x${'ab'.repeat(32)}`,
};

describe('payer-commitment-v1 nonce', () => {
  test('is keccak256 of the documented abi.encode', () => {
    const expected = keccak256(
      encodeAbiParameters(
        [
          { type: 'bytes32' },
          { type: 'bytes32' },
          { type: 'uint256' },
          { type: 'uint256' },
          { type: 'address' },
          { type: 'address' },
          { type: 'address' },
          { type: 'bytes32' },
        ],
        [
          keccak256(toBytes('x402-topup/payer-commitment-v1')),
          keccak256(toBytes('demo-merchant')),
          10n,
          8453n,
          c.creditedRecipient,
          c.payer,
          c.buyer,
          c.salt,
        ],
      ),
    );
    expect(payerCommitmentNonce(c)).toBe(expected);
    expect(payerCommitmentNonce(c)).toMatch(/^0x[0-9a-f]{64}$/);
  });

  test('address spelling does not matter; every committed field does', () => {
    expect(payerCommitmentNonce({ ...c, buyer: c.buyer.toUpperCase().replace('0X', '0x') as Address })).toBe(payerCommitmentNonce(c));
    const changes: Partial<PayerCommitment>[] = [
      { merchantId: 'other-merchant' },
      { sourceChainId: 57073 },
      { destinationChainId: 1 },
      { creditedRecipient: '0x4444444444444444444444444444444444444444' },
      { payer: '0x5555555555555555555555555555555555555555' },
      { buyer: '0x6666666666666666666666666666666666666666' },
      { salt: `0x${'cd'.repeat(32)}` as Hex },
    ];
    for (const change of changes) expect(payerCommitmentNonce({ ...c, ...change })).not.toBe(payerCommitmentNonce(c));
    // payer and buyer swapped is a different commitment
    expect(payerCommitmentNonce({ ...c, payer: c.buyer, buyer: c.payer })).not.toBe(payerCommitmentNonce(c));
  });

  test('verify: case-insensitive match only', () => {
    const nonce = payerCommitmentNonce(c);
    expect(verifyPayerCommitment(nonce.toUpperCase().replace('0X', '0x'), c)).toBe(true);
    expect(verifyPayerCommitment(nonce, { ...c, buyer: c.payer })).toBe(false);
    expect(() => payerCommitmentNonce({ ...c, salt: '0x12' })).toThrow('salt must be 32 bytes of hex');
  });
});
