/**
 * The buyer-signature message (docs/decisions/media-generation.md), shared by the server check
 * and the client helper. EIP-191 personal_sign over exactly these lines, joined by "\n":
 *
 *   x402 media request
 *   Domain: <API domain: host[:port] of the public API URL>
 *   Buyer: <buyer address, lower-case 0x hex>
 *   Method: <HTTP method, upper-case>
 *   Path: <exact request path including the query string, as sent>
 *   Nonce: <nonce, 16-128 chars of [A-Za-z0-9_-]>
 *   Issued At: <unix seconds>
 *   Expires At: <unix seconds>
 */
export interface BuyerAuthFields {
  domain: string;
  buyer: string;
  method: string;
  path: string;
  nonce: string;
  issuedAt: number;
  expiresAt: number;
}

export const BUYER_HEADERS = {
  address: 'X-Buyer-Address',
  signature: 'X-Buyer-Signature',
  nonce: 'X-Buyer-Nonce',
  issuedAt: 'X-Buyer-Issued-At',
  expiresAt: 'X-Buyer-Expires-At',
} as const;

export const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;

export function buyerAuthMessage(f: BuyerAuthFields): string {
  return [
    'x402 media request',
    `Domain: ${f.domain}`,
    `Buyer: ${f.buyer.toLowerCase()}`,
    `Method: ${f.method.toUpperCase()}`,
    `Path: ${f.path}`,
    `Nonce: ${f.nonce}`,
    `Issued At: ${f.issuedAt}`,
    `Expires At: ${f.expiresAt}`,
  ].join('\n');
}
