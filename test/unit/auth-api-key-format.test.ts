import { createHash } from 'node:crypto';
import {
  apiKeyHint,
  digestsEqual,
  generateApiKey,
  hashApiKey,
  isPublicApiKey,
  isSecretApiKey,
  KEY_RANDOM_BYTES,
} from '../../src/auth/api-key-format';

describe('API key generation, hashing and format', () => {
  test('test keys are pk_test_/sk_test_ and live keys pk_/sk_, each with 32 random bytes of hex', () => {
    expect(KEY_RANDOM_BYTES).toBeGreaterThanOrEqual(32);
    const t = generateApiKey(true);
    expect(t.publicKey).toMatch(/^pk_test_[0-9a-f]{64}$/);
    expect(t.secretKey).toMatch(/^sk_test_[0-9a-f]{64}$/);
    const l = generateApiKey(false);
    expect(l.publicKey).toMatch(/^pk_[0-9a-f]{64}$/);
    expect(l.secretKey).toMatch(/^sk_[0-9a-f]{64}$/);
  });

  test('public and secret parts are independent and never repeat', () => {
    const keys = Array.from({ length: 200 }, () => generateApiKey(true));
    const randoms = keys.flatMap((k) => [k.publicKey.slice(-64), k.secretKey.slice(-64)]);
    expect(new Set(randoms).size).toBe(400);
  });

  test('hashes are SHA-256 of the whole key in lower-case hex, and match what generateApiKey stores', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const k = generateApiKey(false);
    expect(k.publicKeyHash).toBe(createHash('sha256').update(k.publicKey).digest('hex'));
    expect(k.secretKeyHash).toBe(createHash('sha256').update(k.secretKey).digest('hex'));
    expect(k.publicKeyHash).not.toBe(k.secretKeyHash);
    expect(hashApiKey(k.publicKey.replace('pk_', 'pk_test_'))).not.toBe(k.publicKeyHash);
  });

  test('the hint keeps the prefix and the last 4 characters only', () => {
    expect(apiKeyHint(`pk_test_${'0'.repeat(60)}a1b2`)).toBe('pk_test_…a1b2');
    expect(apiKeyHint(`pk_${'0'.repeat(60)}c3d4`)).toBe('pk_…c3d4');
    const k = generateApiKey(true);
    expect(k.hint).toBe(`pk_test_…${k.publicKey.slice(-4)}`);
  });

  test('format checks accept only well-formed keys of the right kind', () => {
    const k = generateApiKey(true);
    expect(isPublicApiKey(k.publicKey)).toBe(true);
    expect(isPublicApiKey(generateApiKey(false).publicKey)).toBe(true);
    expect(isSecretApiKey(k.secretKey)).toBe(true);
    for (const bad of [
      k.secretKey,
      k.publicKey.toUpperCase(),
      k.publicKey.slice(0, -1),
      `${k.publicKey}0`,
      `pk_live_${'a'.repeat(64)}`,
      `pk_test_${'g'.repeat(64)}`,
      ` ${k.publicKey}`,
      '',
    ]) {
      expect(isPublicApiKey(bad)).toBe(false);
    }
    expect(isSecretApiKey(k.publicKey)).toBe(false);
  });

  test('digest comparison is exact and tolerates different lengths', () => {
    const a = hashApiKey('a');
    expect(digestsEqual(a, a)).toBe(true);
    expect(digestsEqual(a, hashApiKey('b'))).toBe(false);
    expect(digestsEqual(a, a.slice(0, 62))).toBe(false);
    expect(digestsEqual('', '')).toBe(false);
  });
});
