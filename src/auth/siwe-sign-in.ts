import type { EntityManager } from '@mikro-orm/core';
import type { Hex } from 'viem';
import { z } from 'zod';
import type { Config } from '../config';
import { ApiError } from '../errors';
import type { NetworkTable } from '../chains/networks';
import { checkSiweMessage } from './siwe-message';
import { consumeNonce } from './siwe-nonces';
import { ensureOrganizationForOwner } from './organizations';
import { createSession } from './sessions';

/** Sign-In with Ethereum (EIP-4361): verify the signed message, consume its nonce, open a session. */

export const verifyBody = z.strictObject({
  message: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(4096, 'must be at most 4096 characters'),
  // 65-byte EOA signature; contract wallets (EIP-1271) would need an RPC provider and are not accepted.
  signature: z.string({ error: 'must be a string' }).regex(/^0x[0-9a-fA-F]{130}$/, 'must be a 0x-prefixed 65-byte hex signature'),
});
export type VerifyInput = z.infer<typeof verifyBody>;

export interface SignedIn {
  /** Lower-case signer address. */
  address: string;
  organizationId: string;
  sessionId: string;
  expiresAt: Date;
}

export async function signInWithEthereum(
  em: EntityManager,
  config: Pick<Config, 'publicUrl' | 'SESSION_TTL_SECONDS' | 'SIWE_NONCE_TTL_SECONDS'>,
  expected: { chainIds: ReadonlySet<number>; nonceSecret: string },
  input: VerifyInput,
  now = new Date(),
): Promise<SignedIn> {
  const message = await checkSiweMessage(input.message, input.signature as Hex, {
    publicUrl: config.publicUrl,
    chainIds: expected.chainIds,
    maxAgeSeconds: config.SIWE_NONCE_TTL_SECONDS,
    now,
  });
  // Consumed only after the signature checks out, so a bad attempt does not burn the client's nonce.
  if (!(await consumeNonce(em, expected.nonceSecret, message.nonce, now))) {
    throw new ApiError(401, 'SIWE nonce is unknown, expired or already used');
  }
  const address = message.address;
  const org = await ensureOrganizationForOwner(em, address);
  const session = await createSession(em, { organizationId: org.id, address, ttlSeconds: config.SESSION_TTL_SECONDS }, now);
  return { address, organizationId: org.id, sessionId: session.id, expiresAt: session.expiresAt };
}

/** Chain ids a wallet may sign in from: every chain our network table knows. */
export const siweChainIds = (networks: NetworkTable): ReadonlySet<number> =>
  new Set([...networks.values()].flatMap((n) => (n.chainId === undefined ? [] : [n.chainId])));
