import { keccak256, numberToHex, recoverAddress, serializeCompactSignature, signatureToCompactSignature, toHex, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts';
import { recoverSigner } from '../../src/chains/evm/recover-signer';

/**
 * recoverSigner (libsecp256k1 through WebAssembly) must answer exactly what viem's recoverAddress
 * answers, for every signature form a buyer can send, and throw where viem throws.
 */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const word = (n: bigint) => numberToHex(n, { size: 32 }).slice(2);
const viem = (hash: Hex, signature: Hex) =>
  recoverAddress({ hash, signature }).then(
    (a) => ({ address: a }),
    () => 'throws' as const,
  );
const ours = (hash: Hex, signature: Hex) => {
  try {
    return { address: recoverSigner(hash, signature) };
  } catch {
    return 'throws' as const;
  }
};

describe('recoverSigner', () => {
  const cases = Array.from({ length: 24 }, (_, i) => ({ key: generatePrivateKey(), hash: keccak256(toHex(`payment ${i}`)) }));

  it('recovers the signer of 65-byte signatures with v as 27/28 and as 0/1', async () => {
    for (const { key, hash } of cases) {
      const signer = privateKeyToAccount(key).address;
      const signed = await sign({ hash, privateKey: key, to: 'hex' });
      const yParity = parseInt(signed.slice(130), 16) - 27;
      const raw01 = `${signed.slice(0, 130)}${yParity.toString(16).padStart(2, '0')}` as Hex;
      for (const signature of [signed, raw01]) {
        expect(ours(hash, signature)).toEqual({ address: signer });
        expect(await viem(hash, signature)).toEqual({ address: signer });
      }
    }
  });

  it('answers as viem for altered signatures: another hash, flipped parity, the high-s twin', async () => {
    for (const { key, hash } of cases.slice(0, 8)) {
      const signed = await sign({ hash, privateKey: key, to: 'hex' });
      const r = signed.slice(2, 66);
      const s = BigInt(`0x${signed.slice(66, 130)}`);
      const v = parseInt(signed.slice(130), 16);
      const flipped = `${signed.slice(0, 130)}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
      const highS = `0x${r}${word(N - s)}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
      const other = keccak256(hash);
      for (const [h, signature] of [
        [other, signed],
        [hash, flipped],
        [hash, highS],
      ] as const) {
        const expected = await viem(h, signature);
        expect(expected).not.toBe('throws');
        expect(ours(h, signature)).toEqual(expected);
      }
    }
  });

  it('throws where viem throws: zero r or s, r or s not below the curve order, r off the curve, bad v, another length', async () => {
    const { key, hash } = cases[0];
    const signed = await sign({ hash, privateKey: key, to: 'hex' });
    const r = signed.slice(2, 66);
    const s = signed.slice(66, 130);
    const bad: Hex[] = [
      `0x${word(0n)}${s}1b`,
      `0x${r}${word(0n)}1b`,
      `0x${word(N)}${s}1b`,
      `0x${r}${word(N)}1b`,
      `0x${'ff'.repeat(32)}${s}1b`, // above the field prime: no point has this x
      `0x${r}${s}1d`,
      `0x${r}${s}`.slice(0, 100) as Hex,
      serializeCompactSignature(signatureToCompactSignature(await sign({ hash, privateKey: key }))), // 64 bytes (EIP-2098)
      `${signed}00` as Hex,
      '0x',
    ];
    for (const signature of bad) {
      expect({ signature, result: await viem(hash, signature) }).toEqual({ signature, result: 'throws' });
      expect({ signature, result: ours(hash, signature) }).toEqual({ signature, result: 'throws' });
    }
  });
});
