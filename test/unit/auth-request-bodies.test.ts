import { ApiError } from '../../src/errors';
import { createApiKeyBody } from '../../src/auth/api-keys';
import { patchOrganizationBody } from '../../src/auth/organizations';
import { parseBody } from '../../src/auth/parse-body';
import { verifyBody } from '../../src/auth/siwe-sign-in';

const error = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error('expected a throw');
};

describe('request bodies of sign-in, organization and API key routes', () => {
  test('non-objects are rejected before the schema runs', () => {
    for (const body of [undefined, null, 'x', 1, [], [{}]]) {
      expect(error(() => parseBody(createApiKeyBody, body))).toEqual({ status: 400, message: 'request body must be a JSON object' });
    }
  });

  test('create API key: trimmed name and a real boolean', () => {
    expect(parseBody(createApiKeyBody, { name: '  shop  ', test_net: false })).toEqual({ name: 'shop', test_net: false });
    expect(error(() => parseBody(createApiKeyBody, { name: 'a', test_net: 1 }))).toEqual({
      status: 400,
      message: 'invalid request body: test_net: must be a boolean',
    });
  });

  test('organization patch: addresses lower-cased, nulls clear, fee bounds inclusive', () => {
    const mixed = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'; // EIP-55 example
    expect(parseBody(patchOrganizationBody, { payoutWalletLive: mixed, payoutWalletTest: null, platformFeeBps: 10000 })).toEqual({
      payoutWalletLive: mixed.toLowerCase(),
      payoutWalletTest: null,
      platformFeeBps: 10000,
    });
    expect(parseBody(patchOrganizationBody, { payoutWalletTest: mixed.toUpperCase().replace('0X', '0x') })).toEqual({
      payoutWalletTest: mixed.toLowerCase(),
    });
    expect(error(() => parseBody(patchOrganizationBody, { payoutWalletLive: mixed.replace('aA', 'Aa') }))).toEqual({
      status: 400,
      message: 'invalid request body: payoutWalletLive: has an invalid EIP-55 checksum',
    });
    expect(error(() => parseBody(patchOrganizationBody, { name: 'x', platformFeeBps: 10001 }))).toEqual({
      status: 400,
      message: 'invalid request body: platformFeeBps: must be an integer from 0 to 10000',
    });
  });

  test('verify: every problem is named', () => {
    expect(error(() => parseBody(verifyBody, { message: '', signature: '0xzz' }))).toEqual({
      status: 400,
      message: 'invalid request body: message: must not be empty; signature: must be a 0x-prefixed 65-byte hex signature',
    });
  });
});
