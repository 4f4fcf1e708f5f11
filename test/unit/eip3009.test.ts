import {
  concat,
  encodeAbiParameters,
  hashTypedData,
  keccak256,
  parseAbiParameters,
  recoverTypedDataAddress,
  toHex,
  type Address,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { transferWithAuthorizationTypedData, transferWithAuthorizationTypes, type TokenDomain } from '../../src/schemes/eip3009/typed-data';
import type { Eip3009Authorization } from '../../src/x402/schemas';

// Anvil's public dev keys #5 and #6; devnet only.
const buyer = privateKeyToAccount('0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba');
const other = privateKeyToAccount('0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e');

const domain: TokenDomain = {
  name: 'USDC',
  version: '2',
  chainId: 84532,
  verifyingContract: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
};
const auth: Eip3009Authorization = {
  from: buyer.address,
  to: '0x1111111111111111111111111111111111111111',
  value: '1000000',
  validAfter: '1700000000',
  validBefore: '1700000300',
  nonce: `0x${'ab'.repeat(32)}`,
};

describe('transferWithAuthorizationTypedData', () => {
  test('has the EIP-3009 TransferWithAuthorization field order and types', () => {
    expect(transferWithAuthorizationTypes).toEqual({
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    });
  });

  test('builds domain, primary type and a message with bigint amounts', () => {
    const typed = transferWithAuthorizationTypedData(domain, auth);
    expect(typed.domain).toEqual(domain);
    expect(typed.types).toBe(transferWithAuthorizationTypes);
    expect(typed.primaryType).toBe('TransferWithAuthorization');
    expect(typed.message).toEqual({
      from: auth.from,
      to: auth.to,
      value: 1000000n,
      validAfter: 1700000000n,
      validBefore: 1700000300n,
      nonce: auth.nonce,
    });
  });

  test('the digest equals a hand-rolled EIP-712 hash with the EIP-3009 type hash', () => {
    const TYPEHASH = keccak256(
      toHex('TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)'),
    );
    // The constant of the EIP-3009 reference implementation (and of USDC's FiatTokenV2).
    expect(TYPEHASH).toBe('0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267');
    const structHash = keccak256(
      encodeAbiParameters(parseAbiParameters('bytes32, address, address, uint256, uint256, uint256, bytes32'), [
        TYPEHASH,
        auth.from as Address,
        auth.to as Address,
        BigInt(auth.value),
        BigInt(auth.validAfter),
        BigInt(auth.validBefore),
        auth.nonce as Hex,
      ]),
    );
    const domainSeparator = keccak256(
      encodeAbiParameters(parseAbiParameters('bytes32, bytes32, bytes32, uint256, address'), [
        keccak256(toHex('EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)')),
        keccak256(toHex(domain.name)),
        keccak256(toHex(domain.version)),
        BigInt(domain.chainId),
        domain.verifyingContract,
      ]),
    );
    expect(hashTypedData(transferWithAuthorizationTypedData(domain, auth))).toBe(
      keccak256(concat(['0x1901', domainSeparator, structHash])),
    );
  });

  test('a viem signature over it recovers to the signer', async () => {
    const typed = transferWithAuthorizationTypedData(domain, auth);
    const signature = await buyer.signTypedData(typed);
    await expect(recoverTypedDataAddress({ ...typed, signature })).resolves.toBe(buyer.address);
    const forged = await other.signTypedData(typed);
    await expect(recoverTypedDataAddress({ ...typed, signature: forged })).resolves.toBe(other.address);
  });

  test('the digest is deterministic and case-insensitive in addresses and nonce', () => {
    const d = hashTypedData(transferWithAuthorizationTypedData(domain, auth));
    expect(hashTypedData(transferWithAuthorizationTypedData({ ...domain }, { ...auth }))).toBe(d);
    expect(
      hashTypedData(
        transferWithAuthorizationTypedData(
          { ...domain, verifyingContract: domain.verifyingContract.toLowerCase() as Address },
          { ...auth, from: auth.from.toLowerCase(), nonce: auth.nonce.toUpperCase().replace('0X', '0x') },
        ),
      ),
    ).toBe(d);
  });

  const authChanges: [keyof Eip3009Authorization, string][] = [
    ['from', other.address],
    ['to', '0x2222222222222222222222222222222222222222'],
    ['value', '1000001'],
    ['validAfter', '1700000001'],
    ['validBefore', '1700000299'],
    ['nonce', `0x${'ab'.repeat(31)}ac`],
  ];
  test.each(authChanges)('changing authorization.%s changes the digest', (key, value) => {
    const base = hashTypedData(transferWithAuthorizationTypedData(domain, auth));
    expect(hashTypedData(transferWithAuthorizationTypedData(domain, { ...auth, [key]: value }))).not.toBe(base);
  });

  const domainChanges: [keyof TokenDomain, string | number][] = [
    ['name', 'USD Coin'],
    ['version', '1'],
    ['chainId', 8453],
    ['verifyingContract', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'],
  ];
  test.each(domainChanges)('changing domain.%s changes the digest', (key, value) => {
    const base = hashTypedData(transferWithAuthorizationTypedData(domain, auth));
    expect(hashTypedData(transferWithAuthorizationTypedData({ ...domain, [key]: value }, auth))).not.toBe(base);
  });

  test('a signature for one field set does not recover to the signer for a changed one', async () => {
    const signature = await buyer.signTypedData(transferWithAuthorizationTypedData(domain, auth));
    const changed = transferWithAuthorizationTypedData(domain, { ...auth, value: '2000000' });
    await expect(recoverTypedDataAddress({ ...changed, signature: signature as Hex })).resolves.not.toBe(buyer.address);
  });
});
