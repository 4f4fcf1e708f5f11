import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage, type SiweMessage } from 'viem/siwe';
import { checkSiweMessage, type SiweExpectations } from '../../src/auth/siwe-message';
import { ApiError } from '../../src/errors';

const account = privateKeyToAccount(generatePrivateKey());
const NOW = new Date('2026-11-24T12:00:00Z');
const expect_: SiweExpectations = { publicUrl: 'https://pay.example.com', chainIds: new Set([1, 8453]), maxAgeSeconds: 600, now: NOW };

function message(fields: Partial<SiweMessage> = {}): string {
  return createSiweMessage({
    domain: 'pay.example.com',
    address: account.address,
    uri: 'https://pay.example.com/login',
    version: '1',
    chainId: 8453,
    nonce: 'a1b2c3d4e5f60718',
    issuedAt: new Date(NOW.getTime() - 5_000),
    ...fields,
  });
}

async function check(text: string, signer = account) {
  return checkSiweMessage(text, await signer.signMessage({ message: text }), expect_);
}

async function refusal(text: string, signer = account): Promise<[number, string]> {
  const err = await check(text, signer).catch((e: unknown) => e);
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(err)}`);
  return [err.status, err.message];
}

describe('checkSiweMessage (viem/siwe)', () => {
  it('answers the lower-case signer and the nonce of a good message', async () => {
    expect(await check(message())).toEqual({ address: account.address.toLowerCase(), nonce: 'a1b2c3d4e5f60718' });
  });

  it.each<[string, Partial<SiweMessage>, string]>([
    ['another domain', { domain: 'evil.example.com' }, 'SIWE message domain must be pay.example.com'],
    ['another scheme', { scheme: 'http' }, 'SIWE message scheme must be https'],
    ['a URI on another origin', { uri: 'https://evil.example.com/login' }, 'SIWE message URI must be on https://pay.example.com'],
    ['a chain that is not ours', { chainId: 5 }, 'SIWE message chain id 5 is not one of our networks'],
    ['issuedAt older than the nonce lifetime', { issuedAt: new Date(NOW.getTime() - 601_000) }, 'SIWE message issuedAt is too old'],
    ['issuedAt beyond the clock skew', { issuedAt: new Date(NOW.getTime() + 61_000) }, 'SIWE message issuedAt is in the future'],
    ['an expirationTime in the past', { expirationTime: new Date(NOW.getTime() - 1) }, 'SIWE message has expired'],
    ['a notBefore in the future', { notBefore: new Date(NOW.getTime() + 1_000) }, 'SIWE message is not valid yet'],
  ])('refuses %s with a 401', async (_what, fields, reason) => {
    expect(await refusal(message(fields))).toEqual([401, reason]);
  });

  it('accepts a wallet clock a little ahead, and an expirationTime still to come', async () => {
    const text = message({ issuedAt: new Date(NOW.getTime() + 30_000), expirationTime: new Date(NOW.getTime() + 60_000) });
    expect((await check(text)).address).toBe(account.address.toLowerCase());
  });

  it('refuses a signature by another wallet', async () => {
    expect(await refusal(message(), privateKeyToAccount(generatePrivateKey()))).toEqual([
      401,
      'signature does not match the SIWE message address',
    ]);
  });

  it.each([
    ['free text', 'hello'],
    ['a message without issuedAt', message().replace(/\nIssued At: .*/, '')],
    ['a message without a chain id', message().replace(/\nChain ID: .*/, '')],
  ])('refuses %s with a 400', async (_what, text) => {
    expect(await refusal(text)).toEqual([400, 'message is not a valid EIP-4361 (SIWE) message']);
  });
});
