import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { hashMessage, type Hex } from 'viem';
import { recoverSigner } from '../chains/evm/recover-signer';
import { MediaBuyerNonce } from '../db/media';
import { BUYER_HEADERS, buyerAuthMessage, NONCE_PATTERN } from './buyer-auth-message';

/**
 * Server side of the buyer signature (spec Authentication; DESIGN §4): recovers the EIP-191 signer
 * of the message built from the request (domain, buyer, method, exact path, nonce, window), checks
 * the window, then spends the nonce (a row whose primary key is `<buyer>:<nonce>`: an insert that
 * fails on the key is a replay). The nonce is spent only after the signature checks out, so
 * nobody can burn another buyer's nonces.
 */
export type BuyerAuthResult = { ok: true; buyer: string } | { ok: false; error: string; message: string };

const fail = (error: string, message: string): BuyerAuthResult => ({ ok: false, error, message });

export async function verifyBuyerRequest(
  em: EntityManager,
  req: { method: string; path: string; header: (name: string) => string },
  opts: { domain: string; maxWindowSeconds: number; now?: number },
): Promise<BuyerAuthResult> {
  const h = (name: string) => req.header(name).trim();
  const address = h(BUYER_HEADERS.address);
  const signature = h(BUYER_HEADERS.signature);
  const nonce = h(BUYER_HEADERS.nonce);
  const issued = h(BUYER_HEADERS.issuedAt);
  const expires = h(BUYER_HEADERS.expiresAt);
  const missing = Object.values(BUYER_HEADERS).filter((name) => !h(name));
  if (missing.length) return fail('buyer_auth_required', `missing header(s): ${missing.join(', ')}`);
  if (!/^0x[0-9a-fA-F]{40}$/.test(address))
    return fail('invalid_buyer_auth', `${BUYER_HEADERS.address} must be a 0x-prefixed 20-byte hex address`);
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature))
    return fail('invalid_buyer_auth', `${BUYER_HEADERS.signature} must be a 65-byte 0x-prefixed hex signature`);
  if (!NONCE_PATTERN.test(nonce)) return fail('invalid_buyer_auth', `${BUYER_HEADERS.nonce} must be 16-128 characters of [A-Za-z0-9_-]`);
  if (!/^\d{1,12}$/.test(issued) || !/^\d{1,12}$/.test(expires))
    return fail('invalid_buyer_auth', 'issued-at and expires-at must be unix seconds');
  const issuedAt = Number(issued);
  const expiresAt = Number(expires);
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const skew = 30;
  if (expiresAt <= issuedAt || expiresAt - issuedAt > opts.maxWindowSeconds)
    return fail('invalid_buyer_auth', `the validity window must be positive and at most ${opts.maxWindowSeconds} s`);
  if (issuedAt > now + skew) return fail('buyer_auth_expired', 'issued-at is in the future');
  if (expiresAt <= now) return fail('buyer_auth_expired', 'the signature has expired');

  const buyer = address.toLowerCase();
  const message = buyerAuthMessage({ domain: opts.domain, buyer, method: req.method, path: req.path, nonce, issuedAt, expiresAt });
  let signer: string;
  try {
    signer = recoverSigner(hashMessage(message), signature as Hex).toLowerCase();
  } catch {
    return fail('invalid_buyer_signature', 'the signature cannot be recovered');
  }
  if (signer !== buyer)
    return fail('invalid_buyer_signature', 'the signature does not match the buyer and this request (domain, method, path, nonce, window)');

  await pruneExpired(em, now);
  try {
    await em.insert(MediaBuyerNonce, { nonce: `${buyer}:${nonce}`, buyer, expiresAt: new Date(expiresAt * 1000), usedAt: new Date() });
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) return fail('buyer_nonce_reused', 'this nonce was already used');
    throw err;
  }
  return { ok: true, buyer };
}

let lastPrune = 0;
/**
 * Spent nonces whose signature has expired can never be accepted again (the window check refuses
 * them first), so their rows are dropped, at most once a minute per process.
 */
async function pruneExpired(em: EntityManager, now: number): Promise<void> {
  if (now - lastPrune < 60) return;
  lastPrune = now;
  try {
    await em.nativeDelete(MediaBuyerNonce, { expiresAt: { $lt: new Date((now - 60) * 1000) } });
  } catch {
    // Best effort: a failed prune only leaves rows for the next one.
  }
}
