import { randomBytes } from 'node:crypto';
import type { LocalAccount } from 'viem';
import { BUYER_HEADERS, buyerAuthMessage } from './buyer-auth-message';

/**
 * Client helper: the five X-Buyer-* headers for one request to the media library, jobs or assets
 * routes. `url` is the full request URL (its path and query are signed exactly); `domain` is the
 * API's domain (host[:port] of its public URL; default the URL's own host). Each call uses a fresh
 * nonce, so each set of headers is good for one request within `ttlSeconds` (at most the server's
 * window, 300 s by default).
 */
export async function buyerAuthHeaders(
  account: Pick<LocalAccount, 'address' | 'signMessage'>,
  req: { method: string; url: string; domain?: string; ttlSeconds?: number; now?: number; nonce?: string },
): Promise<Record<string, string>> {
  const u = new URL(req.url);
  const issuedAt = req.now ?? Math.floor(Date.now() / 1000);
  const fields = {
    domain: req.domain ?? u.host,
    buyer: account.address.toLowerCase(),
    method: req.method.toUpperCase(),
    path: `${u.pathname}${u.search}`,
    nonce: req.nonce ?? randomBytes(16).toString('hex'),
    issuedAt,
    expiresAt: issuedAt + (req.ttlSeconds ?? 120),
  };
  const signature = await account.signMessage!({ message: buyerAuthMessage(fields) });
  return {
    [BUYER_HEADERS.address]: fields.buyer,
    [BUYER_HEADERS.signature]: signature,
    [BUYER_HEADERS.nonce]: fields.nonce,
    [BUYER_HEADERS.issuedAt]: String(fields.issuedAt),
    [BUYER_HEADERS.expiresAt]: String(fields.expiresAt),
  };
}
