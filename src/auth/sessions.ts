import { randomBytes } from 'node:crypto';
import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { Session } from '../db/entities';

/** Wallet sessions behind the `siwe-session` cookie. The id is 256 random bits: unguessable even unsigned. */

export async function createSession(
  em: EntityManager,
  input: { organizationId: string; address: string; ttlSeconds: number },
  now = new Date(),
): Promise<Session> {
  // Expired sessions are useless; sweeping a few at each sign-in keeps the table bounded without a job.
  await sweepExpired(em, Session, 'id', now);
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

/** Rows of expired sessions or consumed nonces one sign-in deletes, at most. */
export const SWEEP_PER_SIGN_IN = 16;

/**
 * Deletes at most SWEEP_PER_SIGN_IN expired rows of `entity`, oldest first: each sign-in adds one
 * row and removes up to 16, so the table still shrinks, while no sign-in (anyone with a wallet can
 * make one) deletes across the whole table.
 */
export async function sweepExpired<T extends { expiresAt: Date }, K extends keyof T & string>(
  em: EntityManager,
  entity: new () => T,
  key: K,
  now: Date,
): Promise<void> {
  const where = { expiresAt: { $lt: now } } as FilterQuery<T>;
  const rows = await em.find(entity, where, {
    fields: [key] as never,
    orderBy: { expiresAt: 'asc' } as never,
    limit: SWEEP_PER_SIGN_IN,
    disableIdentityMap: true,
  });
  if (rows.length === 0) return;
  await em.nativeDelete(entity, { ...where, [key]: { $in: rows.map((r) => r[key]) } } as FilterQuery<T>);
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
