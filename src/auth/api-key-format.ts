import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API key material: `pk_test_`/`pk_` public keys and `sk_test_`/`sk_` secrets, each 32 random bytes in
 * lower-case hex. Only SHA-256 hashes are stored; a random 256-bit key needs no slow hash or salt.
 */

export const KEY_RANDOM_BYTES = 32;
const PUBLIC_KEY = /^pk_(test_)?[0-9a-f]{64}$/;
const SECRET_KEY = /^sk_(test_)?[0-9a-f]{64}$/;

export interface GeneratedApiKey {
  publicKey: string;
  secretKey: string;
  publicKeyHash: string;
  secretKeyHash: string;
  /** Non-secret short form shown in listings, e.g. `pk_test_…a1b2`. */
  hint: string;
}

export function generateApiKey(testNet: boolean): GeneratedApiKey {
  const mode = testNet ? 'test_' : '';
  const publicKey = `pk_${mode}${randomBytes(KEY_RANDOM_BYTES).toString('hex')}`;
  const secretKey = `sk_${mode}${randomBytes(KEY_RANDOM_BYTES).toString('hex')}`;
  return {
    publicKey,
    secretKey,
    publicKeyHash: hashApiKey(publicKey),
    secretKeyHash: hashApiKey(secretKey),
    hint: apiKeyHint(publicKey),
  };
}

/** SHA-256 of the whole key string, lower-case hex (64 chars): the indexed lookup column. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Prefix plus the last 4 characters: enough to recognise a key, useless to an attacker. */
export function apiKeyHint(publicKey: string): string {
  const prefix = publicKey.startsWith('pk_test_') ? 'pk_test_' : 'pk_';
  return `${prefix}…${publicKey.slice(-4)}`;
}

export const isPublicApiKey = (value: string): boolean => PUBLIC_KEY.test(value);
export const isSecretApiKey = (value: string): boolean => SECRET_KEY.test(value);

/** Constant-time equality of two hex digests (false when lengths differ). */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}
