import { randomBytes } from 'node:crypto';

/**
 * PAYLOAD_CODEC_KEYS, the keys of the payload codec (src/temporal/payload-codec.ts):
 * `id:base64key[,id:base64key...]`, the first one current (it seals), every one able to open.
 */

/** Key ids `npm start` generates; production refuses them (docs/security.md). */
export const DEVNET_KEY_ID_PREFIX = 'devnet';

const KEY_ID = /^[A-Za-z0-9._-]{1,32}$/;
const KEY_BYTES = 32;

export interface PayloadCodecKeys {
  /** The key id new payloads are sealed with (the first listed). */
  current: string;
  keys: Map<string, Buffer>;
}

/**
 * Parses PAYLOAD_CODEC_KEYS: `id:base64key[,id:base64key...]`, the first current. Each key is 32
 * random bytes in base64 (`openssl rand -base64 32`); a key of few distinct bytes (zeros, a
 * repeated pattern, a short passphrase padded) is refused, as are repeated ids or keys.
 */
export function parsePayloadCodecKeys(value: string): PayloadCodecKeys {
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!entries.length) throw new Error('must list at least one id:base64key');
  const keys = new Map<string, Buffer>();
  for (const entry of entries) {
    const colon = entry.indexOf(':');
    const id = colon > 0 ? entry.slice(0, colon) : '';
    const b64 = colon > 0 ? entry.slice(colon + 1) : '';
    if (!KEY_ID.test(id)) throw new Error('each entry must be id:base64key, the id 1-32 of A-Z a-z 0-9 . _ -');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new Error(`key ${id}: not base64`);
    const key = Buffer.from(b64, 'base64');
    if (key.length !== KEY_BYTES) throw new Error(`key ${id}: must be ${KEY_BYTES} bytes (openssl rand -base64 32), got ${key.length}`);
    // 32 random bytes have ~30 distinct values; fewer than 16 is not a random key.
    if (new Set(key).size < 16) throw new Error(`key ${id}: too weak (not 32 random bytes)`);
    if (keys.has(id)) throw new Error(`key id ${id} is listed twice`);
    if ([...keys.values()].some((k) => k.equals(key))) throw new Error(`key ${id}: the same key is listed under two ids`);
    keys.set(id, key);
  }
  return { current: entries[0]!.slice(0, entries[0]!.indexOf(':')), keys };
}

/** A fresh `id:base64key` entry (the devnet's, and a template for operators). */
export function generatePayloadCodecKey(id: string): string {
  return `${id}:${randomBytes(KEY_BYTES).toString('base64')}`;
}
