import { verifyMessage, type Hex } from 'viem';
import { parseSiweMessage, validateSiweMessage } from 'viem/siwe';
import { ApiError } from '../errors';

/** The EIP-4361 checks of a sign-in, with viem's SIWE support; no I/O, so every rule is unit-tested. */

export interface SiweExpectations {
  /** Our public origin (`https://host[:port]`): the message's domain is its host, its URI must be on it. */
  publicUrl: string;
  /** Chain ids a wallet may sign in from: every chain of our network table. */
  chainIds: ReadonlySet<number>;
  /** How old `issuedAt` may be; the nonce lives as long, so an older message could not sign in anyway. */
  maxAgeSeconds: number;
  now: Date;
}

/** A wallet's clock may run a little ahead of ours. */
export const SIWE_CLOCK_SKEW_SECONDS = 60;

/** Checks `text` and its EOA `signature`; answers the lower-case signer and the nonce to consume. */
export async function checkSiweMessage(
  text: string,
  signature: Hex,
  expect: SiweExpectations,
): Promise<{ address: string; nonce: string }> {
  const message = parseSiweMessage(text);
  const { address, domain, uri, chainId, nonce, issuedAt, version } = message;
  if (!address || !domain || !uri || !chainId || !nonce || !issuedAt || version !== '1') {
    throw new ApiError(400, 'message is not a valid EIP-4361 (SIWE) message');
  }
  const origin = new URL(expect.publicUrl);
  const expected = { domain: origin.host, scheme: origin.protocol.replace(/:$/, '') };
  if (domain !== expected.domain) throw new ApiError(401, `SIWE message domain must be ${expected.domain}`);
  if (message.scheme !== undefined && message.scheme !== expected.scheme) {
    throw new ApiError(401, `SIWE message scheme must be ${expected.scheme}`);
  }
  if (originOf(uri) !== origin.origin) throw new ApiError(401, `SIWE message URI must be on ${origin.origin}`);
  if (!expect.chainIds.has(chainId)) throw new ApiError(401, `SIWE message chain id ${chainId} is not one of our networks`);
  const now = expect.now.getTime();
  if (Number.isNaN(issuedAt.getTime()) || issuedAt.getTime() > now + SIWE_CLOCK_SKEW_SECONDS * 1000) {
    throw new ApiError(401, 'SIWE message issuedAt is in the future');
  }
  if (issuedAt.getTime() < now - expect.maxAgeSeconds * 1000) throw new ApiError(401, 'SIWE message issuedAt is too old');
  if (message.expirationTime && !(message.expirationTime.getTime() > now)) throw new ApiError(401, 'SIWE message has expired');
  if (message.notBefore && !(message.notBefore.getTime() <= now)) throw new ApiError(401, 'SIWE message is not valid yet');
  // viem's own validation (nonce alphabet, address checksum, the same time rules) as a second opinion.
  if (!validateSiweMessage({ message, domain: expected.domain, time: expect.now })) throw new ApiError(401, 'SIWE verification failed');
  if (!(await verifyMessage({ address, message: text, signature }))) {
    throw new ApiError(401, 'signature does not match the SIWE message address');
  }
  return { address: address.toLowerCase(), nonce };
}

function originOf(uri: string): string | undefined {
  try {
    return new URL(uri).origin;
  } catch {
    return undefined;
  }
}
