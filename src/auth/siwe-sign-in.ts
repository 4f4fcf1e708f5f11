import type { EntityManager } from '@mikro-orm/core';
import { SiweErrorType, SiweMessage, type SiweResponse } from 'siwe';
import { z } from 'zod';
import type { Config } from '../config';
import { ApiError } from '../errors';
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

/** The SIWE domain we accept: the host (with port) of the public URL. */
export const siweDomain = (config: Pick<Config, 'publicUrl'>) => new URL(config.publicUrl).host;

export async function signInWithEthereum(
  em: EntityManager,
  config: Pick<Config, 'publicUrl' | 'SESSION_TTL_SECONDS'>,
  input: VerifyInput,
  now = new Date(),
): Promise<SignedIn> {
  let message: SiweMessage;
  try {
    message = new SiweMessage(input.message);
  } catch {
    throw new ApiError(400, 'message is not a valid EIP-4361 (SIWE) message');
  }
  const domain = siweDomain(config);
  if (message.domain !== domain) throw new ApiError(401, `SIWE message domain must be ${domain}`);
  const scheme = new URL(config.publicUrl).protocol.replace(/:$/, '');
  const result: SiweResponse = await message.verify(
    { signature: input.signature, domain, time: now.toISOString(), ...(message.scheme ? { scheme } : {}) },
    { suppressExceptions: true },
  );
  if (!result.success) throw new ApiError(401, failureMessage(result, scheme));
  // Consumed only after the signature checks out, so a bad attempt does not burn the client's nonce.
  if (!(await consumeNonce(em, message.nonce, now))) {
    throw new ApiError(401, 'SIWE nonce is unknown, expired or already used');
  }
  const address = message.address.toLowerCase();
  const org = await ensureOrganizationForOwner(em, address);
  const session = await createSession(em, { organizationId: org.id, address, ttlSeconds: config.SESSION_TTL_SECONDS }, now);
  return { address, organizationId: org.id, sessionId: session.id, expiresAt: session.expiresAt };
}

function failureMessage(result: SiweResponse, scheme: string): string {
  switch (result.error?.type) {
    case SiweErrorType.EXPIRED_MESSAGE:
      return 'SIWE message has expired';
    case SiweErrorType.NOT_YET_VALID_MESSAGE:
      return 'SIWE message is not valid yet';
    case SiweErrorType.INVALID_SIGNATURE:
      return 'signature does not match the SIWE message address';
    case SiweErrorType.SCHEME_MISMATCH:
      return `SIWE message scheme must be ${scheme}`;
    default:
      return 'SIWE verification failed';
  }
}
