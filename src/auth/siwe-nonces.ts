import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { SiweNonce } from '../db/entities';
import { sweepExpired } from './sessions';

/**
 * Server-issued SIWE nonces that cost nothing to issue: `GET /v1/auth/nonce` writes no row (an
 * anonymous caller could otherwise fill the table). A nonce is 64 hex characters (EIP-4361 wants
 * >= 8 alphanumerics): its expiry (8), 96 random bits (24), and an HMAC of both under the session
 * secret (32), so only nonces we issued verify. Single use is enforced when one is consumed: the
 * consumed nonce is inserted, and its primary key refuses a second sign-in with it.
 */

const mac = (secret: string, body: string) => createHmac('sha256', secret).update(`siwe-nonce:${body}`).digest('hex').slice(0, 32);

export function issueNonce(secret: string, ttlSeconds: number, now = new Date()): { nonce: string; expiresAt: Date } {
  const expiry = Math.floor(now.getTime() / 1000) + ttlSeconds;
  const body = expiry.toString(16).padStart(8, '0') + randomBytes(12).toString('hex');
  return { nonce: body + mac(secret, body), expiresAt: new Date(expiry * 1000) };
}

/** When `nonce` is one of ours and unexpired, its expiry; otherwise undefined. */
export function nonceExpiry(secret: string, nonce: string, now = new Date()): Date | undefined {
  if (!/^[0-9a-f]{64}$/.test(nonce)) return undefined;
  const body = nonce.slice(0, 32);
  if (!timingSafeEqual(Buffer.from(nonce.slice(32)), Buffer.from(mac(secret, body)))) return undefined;
  const expiresAt = new Date(parseInt(body.slice(0, 8), 16) * 1000);
  return expiresAt > now ? expiresAt : undefined;
}

/**
 * True only for the single caller that consumes a valid nonce. Unknown, forged and expired nonces
 * write nothing; of two concurrent sign-ins with one nonce, the second insert hits the primary key.
 */
export async function consumeNonce(em: EntityManager, secret: string, nonce: string, now = new Date()): Promise<boolean> {
  const expiresAt = nonceExpiry(secret, nonce, now);
  if (!expiresAt) return false;
  // Consumed nonces are needed only until they expire: the table stays ~one TTL of sign-ins.
  await sweepExpired(em, SiweNonce, 'nonce', now);
  try {
    await em.insert(SiweNonce, { nonce, expiresAt, usedAt: now });
    return true;
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) return false;
    throw err;
  }
}
