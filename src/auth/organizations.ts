import { randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { checksumAddress, zeroAddress, type Address } from 'viem';
import { z } from 'zod';
import { AuditLog, Organization } from '../db/entities';
import { findRow } from '../db/rows';
import type { AuthContext } from './key-mode';
import { ApiError } from '../errors';
import { isSolanaAddress } from '../chains/solana/base58';

/** Organizations: one per owner wallet, created on its first sign-in; payout settings. */

/** Body of GET/PATCH /v1/organization. Addresses are lower-case, as stored. */
export interface OrganizationBody {
  id: string;
  name: string;
  ownerAddress: string;
  payoutWalletTest: string | null;
  payoutWalletLive: string | null;
  payoutWalletSolanaTest: string | null;
  payoutWalletSolanaLive: string | null;
  platformFeeBps: number;
  createdAt: string;
  updatedAt: string;
}

export function toOrganizationBody(org: Organization): OrganizationBody {
  return {
    id: org.id,
    name: org.name,
    ownerAddress: org.ownerAddress,
    payoutWalletTest: org.payoutWalletTest ?? null,
    payoutWalletLive: org.payoutWalletLive ?? null,
    payoutWalletSolanaTest: org.payoutWalletSolanaTest ?? null,
    payoutWalletSolanaLive: org.payoutWalletSolanaLive ?? null,
    platformFeeBps: org.platformFeeBps,
    createdAt: new Date(org.createdAt).toISOString(),
    updatedAt: new Date(org.updatedAt).toISOString(),
  };
}

/** EIP-55: all-lower or all-upper hex carries no checksum; mixed case must be the exact checksum. */
function hasValidChecksum(address: string): boolean {
  const hex = address.slice(2);
  return hex === hex.toLowerCase() || hex === hex.toUpperCase() || checksumAddress(address as Address) === address;
}

/** A payout address: any case, but mixed case must be a valid EIP-55 checksum; never the zero address. */
const payoutWallet = z
  .string({ error: 'must be a 0x-prefixed 20-byte hex address or null' })
  .regex(/^0x[0-9a-fA-F]{40}$/, { error: 'must be a 0x-prefixed 20-byte hex address or null', abort: true })
  .refine(hasValidChecksum, { error: 'has an invalid EIP-55 checksum', abort: true })
  .refine((v) => v.toLowerCase() !== zeroAddress, 'must not be the zero address')
  .transform((v) => v.toLowerCase())
  .nullable();

/** A Solana payout wallet: a base58 public key (32 bytes), kept as written (base58 is case-sensitive). */
const solanaPayoutWallet = z
  .string({ error: 'must be a base58 Solana address or null' })
  .refine(isSolanaAddress, 'must be a base58 Solana address or null')
  .nullable();

export const patchOrganizationBody = z
  .strictObject({
    name: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
    payoutWalletTest: payoutWallet,
    payoutWalletLive: payoutWallet,
    payoutWalletSolanaTest: solanaPayoutWallet,
    payoutWalletSolanaLive: solanaPayoutWallet,
    platformFeeBps: z
      .number({ error: 'must be an integer from 0 to 10000' })
      .int('must be an integer from 0 to 10000')
      .min(0, 'must be an integer from 0 to 10000')
      .max(10000, 'must be an integer from 0 to 10000'),
  })
  .partial()
  .refine((v) => Object.keys(v).length > 0, {
    error:
      'must set at least one of name, payoutWalletTest, payoutWalletLive, payoutWalletSolanaTest, payoutWalletSolanaLive, platformFeeBps',
    when: (payload) => payload.issues.length === 0, // an unknown key alone is reported as just that
  });
export type OrganizationPatch = z.infer<typeof patchOrganizationBody>;

/**
 * The owner's organization, created on first sign-in. Two first sign-ins racing both try the insert;
 * the loser hits the unique owner_address constraint and re-reads the winner's row.
 */
export async function ensureOrganizationForOwner(em: EntityManager, ownerAddress: string): Promise<Organization> {
  const owner = ownerAddress.toLowerCase();
  const existing = await em.findOne(Organization, { ownerAddress: owner }, { disableIdentityMap: true });
  if (existing) return existing;
  const now = new Date();
  const row = Object.assign(new Organization(), {
    id: randomUUID(),
    ownerAddress: owner,
    name: owner,
    payoutWalletTest: null,
    payoutWalletLive: null,
    platformFeeBps: 0,
    createdAt: now,
    updatedAt: now,
  });
  try {
    await em.insert(Organization, row);
    return row;
  } catch (err) {
    if (!(err instanceof UniqueConstraintViolationException)) throw err;
    return em.findOneOrFail(Organization, { ownerAddress: owner }, { disableIdentityMap: true });
  }
}

/**
 * The caller's organization: the row read with the API key while it is fresh, else read now
 * (sessions; a request whose body took long to arrive must not pay a payout wallet changed meanwhile).
 */
export async function callerOrganization(em: EntityManager, auth: AuthContext, now = Date.now()): Promise<Organization | null> {
  const read = auth.organizationRead;
  if (read && now - read.at < ORGANIZATION_FRESH_MS) return read.row;
  return findRow(em, Organization, { id: auth.organizationId });
}
/** How long the organization read with the key stands for it: a body arrives in milliseconds. */
export const ORGANIZATION_FRESH_MS = 1000;

export async function getOrganization(em: EntityManager, id: string): Promise<Organization> {
  const org = await em.findOne(Organization, { id });
  if (!org) throw new ApiError(404, 'organization not found');
  return org;
}

/** The settings that say where sellers' money goes: changing one needs a fresh signature and is audited. */
export const PAYOUT_WALLET_FIELDS = ['payoutWalletTest', 'payoutWalletLive', 'payoutWalletSolanaTest', 'payoutWalletSolanaLive'] as const;

/** How old the sign-in behind a payout-wallet change may be: its SIWE signature, at most 5 minutes. */
export const PAYOUT_CHANGE_MAX_SIGN_IN_AGE_MS = 5 * 60_000;

/**
 * Applies `patch`. A change of a payout wallet needs a session opened by a SIWE sign-in under
 * PAYOUT_CHANGE_MAX_SIGN_IN_AGE_MS old (a stolen or forgotten session cannot redirect payouts; 401,
 * sign in again), and is recorded in `audit_log` with the wallet that made it, in the same
 * transaction as the change.
 */
export async function updateOrganization(
  em: EntityManager,
  id: string,
  patch: OrganizationPatch,
  by: { address: string; signedInAt: Date },
  now = new Date(),
): Promise<Organization> {
  return em.transactional(async (tx) => {
    const org = await getOrganization(tx, id);
    const changed = PAYOUT_WALLET_FIELDS.filter((f) => f in patch && (patch[f] ?? null) !== (org[f] ?? null));
    if (changed.length > 0) {
      if (now.getTime() - by.signedInAt.getTime() > PAYOUT_CHANGE_MAX_SIGN_IN_AGE_MS) {
        throw new ApiError(401, 'changing a payout wallet needs a fresh sign-in: sign in again (a SIWE signature under 5 minutes old)');
      }
      const detail = Object.fromEntries(changed.map((f) => [f, { from: org[f] ?? null, to: patch[f] ?? null }]));
      tx.persist(
        Object.assign(new AuditLog(), {
          id: randomUUID(),
          organizationId: id,
          actor: by.address.toLowerCase(),
          action: 'payout_wallet_change',
          detail: JSON.stringify(detail),
          createdAt: now,
        }),
      );
    }
    tx.assign(org, { ...patch, updatedAt: now });
    await tx.flush();
    return org;
  });
}
