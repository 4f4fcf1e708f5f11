import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import { SiweNonce } from '../db/entities';

/** Server-issued SIWE nonces: 128 random bits in hex (EIP-4361 wants >= 8 alphanumerics), single use. */

export async function issueNonce(em: EntityManager, ttlSeconds: number, now = new Date()): Promise<SiweNonce> {
  // Expired nonces can never be consumed, so they are swept here; the table stays ~one TTL of traffic.
  await em.nativeDelete(SiweNonce, { expiresAt: { $lt: now } });
  const nonce = randomBytes(16).toString('hex');
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  await em.insert(SiweNonce, { nonce, expiresAt, usedAt: null });
  return Object.assign(new SiweNonce(), { nonce, expiresAt, usedAt: null });
}

/**
 * Marks the nonce used in one conditional UPDATE; true only for the single caller whose update hit
 * the row. Unknown, expired and already-used nonces all affect zero rows, so two concurrent sign-ins
 * with one nonce give exactly one session on SQLite and PostgreSQL alike.
 */
export async function consumeNonce(em: EntityManager, nonce: string, now = new Date()): Promise<boolean> {
  const changed = await em.nativeUpdate(SiweNonce, { nonce, usedAt: null, expiresAt: { $gt: now } }, { usedAt: now });
  return changed === 1;
}
