import { ApiError } from '../../src/errors';
import { assertKeyModeAllows } from '../../src/auth/key-mode';
import type { AuthContext } from '../../src/auth/key-mode';

const key = (testNet: boolean): AuthContext => ({ organizationId: 'org', method: 'api_key', apiKeyId: 'k', testNet });
const thrown = (fn: () => void) => {
  try {
    fn();
  } catch (err) {
    return err instanceof ApiError ? { status: err.status, message: err.message } : err;
  }
  return undefined;
};

describe('assertKeyModeAllows', () => {
  test('test keys settle testnets only', () => {
    expect(thrown(() => assertKeyModeAllows(key(true), { testnet: true }))).toBeUndefined();
    expect(thrown(() => assertKeyModeAllows(key(true), { testnet: false }))).toEqual({
      status: 403,
      message: 'test keys settle testnets only',
    });
  });

  test('live keys settle mainnets only', () => {
    expect(thrown(() => assertKeyModeAllows(key(false), { testnet: false }))).toBeUndefined();
    expect(thrown(() => assertKeyModeAllows(key(false), { testnet: true }))).toEqual({
      status: 403,
      message: 'live keys settle mainnets only',
    });
  });

  test('sessions carry no key mode and are not restricted', () => {
    const session: AuthContext = { organizationId: 'org', method: 'session', address: '0xabc' };
    expect(thrown(() => assertKeyModeAllows(session, { testnet: true }))).toBeUndefined();
    expect(thrown(() => assertKeyModeAllows(session, { testnet: false }))).toBeUndefined();
  });
});
