import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import { Session } from '../db/entities';

/** Wallet sessions behind the `siwe-session` cookie. The id is 256 random bits: unguessable even unsigned. */

export async function createSession(
  em: EntityManager,
  input: { organizationId: string; address: string; ttlSeconds: number },
  now = new Date(),
): Promise<Session> {
  // Expired sessions are useless; sweeping them at sign-in keeps the table bounded without a job.
  await em.nativeDelete(Session, { expiresAt: { $lt: now } });
  const row = Object.assign(new Session(), {
    id: randomBytes(32).toString('hex'),
    organizationId: input.organizationId,
    address: input.address,
    expiresAt: new Date(now.getTime() + input.ttlSeconds * 1000),
    revokedAt: null,
    createdAt: now,
  });
  await em.insert(Session, row);
  return row;
}

/** The session if it exists, is not revoked and has not expired; else null. */
export async function findActiveSession(em: EntityManager, id: string, now = new Date()): Promise<Session | null> {
  if (!/^[0-9a-f]{64}$/.test(id)) return null;
  const row = await em.findOne(Session, { id }, { disableIdentityMap: true });
  if (!row || row.revokedAt || new Date(row.expiresAt) <= now) return null;
  return row;
}

export async function revokeSession(em: EntityManager, id: string, now = new Date()): Promise<void> {
  await em.nativeUpdate(Session, { id, revokedAt: null }, { revokedAt: now });
}
