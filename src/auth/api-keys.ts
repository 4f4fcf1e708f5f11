import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import { z } from 'zod';
import { ApiKey, Organization } from '../db/entities';
import { findRowWith } from '../db/rows';
import { ApiError } from '../errors';
import { digestsEqual, generateApiKey, hashApiKey, isPublicApiKey } from './api-key-format';

/** Organization-scoped API keys: create (secret shown once), list, get, revoke, and bearer lookup. */

export const createApiKeyBody = z.strictObject({
  name: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
  test_net: z.boolean({ error: 'must be a boolean' }),
  /** Optional (our extension): the key stops working this many days after creation (403 "API key expired"). */
  expires_in_days: z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(3650, 'must be at most 3650')
    .optional(),
});
export type CreateApiKeyInput = z.infer<typeof createApiKeyBody>;

/** The API key record of the spec, as listed and read: `api_key` is the non-secret hint. */
export interface ApiKeyRecord {
  id: string;
  name: string;
  organization: string;
  api_key: string;
  test_net: boolean;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
  /** Present when the key was created with `expires_in_days`. */
  expires_at?: string;
}

/** The create response: the only time the full public key and the secret are ever shown. */
export interface CreatedApiKey {
  id: string;
  name: string;
  organization: string;
  api_key: string;
  api_secret_key: string;
  test_net: boolean;
  created_at: string;
  updated_at: string;
  expires_at?: string;
}

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

export function toApiKeyRecord(row: ApiKey): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    organization: row.organizationId,
    api_key: row.keyHint,
    test_net: row.testNet,
    created_at: iso(row.createdAt)!,
    updated_at: iso(row.updatedAt)!,
    last_used_at: iso(row.lastUsedAt),
    ...(row.expiresAt ? { expires_at: iso(row.expiresAt)! } : {}),
  };
}

export async function createApiKey(em: EntityManager, organizationId: string, input: CreateApiKeyInput): Promise<CreatedApiKey> {
  const key = generateApiKey(input.test_net);
  const now = new Date();
  const expiresAt = input.expires_in_days ? new Date(now.getTime() + input.expires_in_days * 86_400_000) : null;
  const row = em.create(ApiKey, {
    id: randomUUID(),
    organizationId,
    name: input.name,
    testNet: input.test_net,
    publicKeyHash: key.publicKeyHash,
    secretKeyHash: key.secretKeyHash,
    keyHint: key.hint,
    createdAt: now,
    updatedAt: now,
    lastUsedAt: null,
    revokedAt: null,
    expiresAt,
  });
  await em.persistAndFlush(row);
  return {
    id: row.id,
    name: row.name,
    organization: organizationId,
    api_key: key.publicKey,
    api_secret_key: key.secretKey,
    test_net: row.testNet,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    ...(expiresAt ? { expires_at: expiresAt.toISOString() } : {}),
  };
}

/** Active (not revoked) keys of the organization, oldest first. */
export async function listApiKeys(em: EntityManager, organizationId: string): Promise<ApiKeyRecord[]> {
  const rows = await em.find(ApiKey, { organizationId, revokedAt: null }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return rows.map(toApiKeyRecord);
}

/** An active key of this organization; another organization's or a revoked key is 404 alike. */
export async function findActiveApiKey(em: EntityManager, organizationId: string, id: string): Promise<ApiKey> {
  const row = await em.findOne(ApiKey, { id, organizationId, revokedAt: null });
  if (!row) throw new ApiError(404, 'API key not found');
  return row;
}

/** Revokes the key; the conditional update makes two concurrent deletes answer 200 once and 404 once. */
export async function revokeApiKey(em: EntityManager, organizationId: string, id: string): Promise<ApiKeyRecord & { revoked_at: string }> {
  const row = await findActiveApiKey(em, organizationId, id);
  const now = new Date();
  const changed = await em.nativeUpdate(ApiKey, { id, organizationId, revokedAt: null }, { revokedAt: now, updatedAt: now });
  if (changed !== 1) throw new ApiError(404, 'API key not found');
  return { ...toApiKeyRecord({ ...row, updatedAt: now }), revoked_at: now.toISOString() };
}

/** Bearer authentication result. */
export interface AuthenticatedKey {
  apiKeyId: string;
  organizationId: string;
  testNet: boolean;
  /** The key's organization, read with it (null if it has none), and when. */
  organizationRead: { row: Organization | null; at: number };
}

/** Resolves a presented public key: malformed/unknown -> 401, revoked -> 403; records the use. */
export async function authenticateApiKey(em: EntityManager, presented: string, now = new Date()): Promise<AuthenticatedKey> {
  if (!isPublicApiKey(presented)) throw new ApiError(401, 'malformed API key: expected a pk_ or pk_test_ public key');
  const hash = hashApiKey(presented);
  // Every request: plain rows (src/db/rows.ts), the organization read with the key (most routes need it).
  const found = await findRowWith(em, ApiKey, { publicKeyHash: hash }, Organization, 'organizationId');
  const row = found?.row;
  // The lookup is by hash already; the constant-time compare keeps the check independent of how the
  // database compares strings.
  if (!row || !digestsEqual(hash, row.publicKeyHash)) throw new ApiError(401, 'unknown API key');
  if (row.revokedAt) throw new ApiError(403, 'API key revoked');
  if (row.expiresAt && new Date(row.expiresAt) <= now) throw new ApiError(403, 'API key expired');
  // Bookkeeping must never fail the request it describes (e.g. a busy database).
  await recordApiKeyUse(em, row, now).catch(() => undefined);
  return {
    apiKeyId: row.id,
    organizationId: row.organizationId,
    testNet: row.testNet,
    organizationRead: { row: found.other, at: now.getTime() },
  };
}

/** Writes last_used_at at most once per second per key (the first use always), without touching updated_at. */
export async function recordApiKeyUse(em: EntityManager, row: ApiKey, now: Date): Promise<void> {
  const threshold = new Date(now.getTime() - 1000);
  if (row.lastUsedAt && new Date(row.lastUsedAt) > threshold) return;
  await em.nativeUpdate(ApiKey, { id: row.id, $or: [{ lastUsedAt: null }, { lastUsedAt: { $lt: threshold } }] }, { lastUsedAt: now });
}
