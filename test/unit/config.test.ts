import { ConfigError, DEVNET_RELAYER_KEY, loadConfig } from '../../src/config';
import { DEVNET_DEPOSITOR_ADDRESS } from '../../src/chains/devnet-addresses';

/** The ConfigError that loadConfig throws for `env` (fails the test if it does not throw one). */
function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`loadConfig(${JSON.stringify(env)}) did not throw`);
}
/** Variable names listed in a ConfigError message (`  NAME: reason` lines). */
const namedVars = (err: ConfigError) =>
  err.message
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(':')[0]);

describe('loadConfig defaults', () => {
  test('an empty environment gives the devnet defaults', () => {
    const env = {};
    const c = loadConfig(env);
    expect(c).toEqual({
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: 4021,
      RATE_LIMIT_WINDOW_SECONDS: 60,
      RATE_LIMIT_IP: 1200,
      RATE_LIMIT_AUTH_IP: 30,
      RATE_LIMIT_KEY: 6000,
      GAS_BUDGET_PER_ORG: 1_000_000_000,
      GAS_BUDGET_WINDOW_SECONDS: 3600,
      RATE_LIMIT_PREFIX: 'x402rl',
      TRUST_PROXY: 0,
      BODY_LIMIT: '64kb',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: 'x402-settlement',
      TEMPORAL_UI_URL: 'http://127.0.0.1:8233',
      TOPUP_DEPOSITOR_CONTRACT: DEVNET_DEPOSITOR_ADDRESS,
      TEMPORAL_TLS: false,
      CODEC_SERVER_HOST: '127.0.0.1',
      CODEC_SERVER_PORT: 8888,
      CODEC_SERVER_ENCODE: false,
      SQLITE_PATH: '.data/facilitator.sqlite',
      SESSION_TTL_SECONDS: 8 * 3600,
      SIWE_NONCE_TTL_SECONDS: 600,
      SETTLE_PARK_AFTER_MS: 900_000,
      SETTLE_WAIT_MS: 20_000,
      SETTLE_WAIT_V2_MS: 80_000,
      MIN_VALIDITY_SECONDS: 6,
      RECEIPT_WAIT_MS: 30_000,
      RELAYER_REPLACE_AFTER_MS: 20_000,
      WORKER_TASK_SLOTS: 256,
      RELAYER_PRIVATE_KEY: DEVNET_RELAYER_KEY,
      RELAYER_ADDRESS: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      OPERATOR_ADDRESSES: [],
      MAINNETS_ENABLED: false,
      BRIDGE_ATTESTATION_URL: 'http://127.0.0.1:4023',
      BRIDGE_MAX_FEE_BPS: 100,
      SOLANA_MAX_FEE_LAMPORTS: 50_000,
      GATEWAY_MAINNET_ENABLED: true,
      GATEWAY_API_URL_TESTNET: 'http://127.0.0.1:4030',
      GATEWAY_API_URL: 'https://gateway-api.circle.com',
      GATEWAY_TIMEOUT_MS: 10_000,
      WITHDRAWAL_POLL_MS: 5_000,
      STUCK_AFTER_SECONDS: 300,
      RELAYER_MIN_BALANCE_ETHER: '0.01',
      publicUrl: 'http://localhost:4021',
      production: false,
      env: {},
    });
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.SESSION_SECRET).toBeUndefined();
    expect(c.PUBLIC_URL).toBeUndefined();
    expect(c.PLATFORM_FEE_RECIPIENT).toBeUndefined();
    expect(c.env).toBe(env);
  });

  test('the devnet relayer key is anvil account #1', () => {
    expect(DEVNET_RELAYER_KEY).toBe('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
  });

  test('unknown variables are ignored but kept in env', () => {
    const env = { PATH: '/usr/bin', SOMETHING: 'x' };
    const c = loadConfig(env);
    expect((c as Record<string, unknown>).SOMETHING).toBeUndefined();
    expect(c.env).toBe(env);
  });
});

describe('loadConfig parses values', () => {
  test('STUCK_AFTER_SECONDS and RELAYER_MIN_BALANCE_ETHER', () => {
    const c = loadConfig({ STUCK_AFTER_SECONDS: '60', RELAYER_MIN_BALANCE_ETHER: ' 0.5 ' });
    expect([c.STUCK_AFTER_SECONDS, c.RELAYER_MIN_BALANCE_ETHER]).toEqual([60, '0.5']);
  });

  test('numbers are coerced from strings', () => {
    const c = loadConfig({ PORT: '8080', SETTLE_WAIT_MS: '100', MIN_VALIDITY_SECONDS: '0', SESSION_TTL_SECONDS: '60' });
    expect(c.PORT).toBe(8080);
    expect(c.SETTLE_WAIT_MS).toBe(100);
    expect(c.MIN_VALIDITY_SECONDS).toBe(0);
    expect(c.SESSION_TTL_SECONDS).toBe(60);
    expect(c.publicUrl).toBe('http://localhost:8080');
  });

  test('PUBLIC_URL sets publicUrl', () => {
    const c = loadConfig({ PUBLIC_URL: 'https://pay.example.com', PORT: '9000' });
    expect(c.PUBLIC_URL).toBe('https://pay.example.com');
    expect(c.publicUrl).toBe('https://pay.example.com');
  });

  test.each([
    ['true', true],
    ['1', true],
    ['yes', true],
    ['false', false],
    ['0', false],
    ['no', false],
  ])('MAINNETS_ENABLED=%s -> %s', (raw, value) => {
    expect(loadConfig({ MAINNETS_ENABLED: raw }).MAINNETS_ENABLED).toBe(value);
  });

  test('postgres:// and postgresql:// DATABASE_URLs pass', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/x' }).DATABASE_URL).toBe('postgres://u:p@db:5432/x');
    expect(loadConfig({ DATABASE_URL: 'postgresql://db/x' }).DATABASE_URL).toBe('postgresql://db/x');
  });

  test('a 32-byte relayer key and an address fee recipient pass', () => {
    const key = `0x${'a1'.repeat(32)}`;
    const c = loadConfig({ RELAYER_PRIVATE_KEY: key, PLATFORM_FEE_RECIPIENT: '0x1111111111111111111111111111111111111111' });
    expect(c.RELAYER_PRIVATE_KEY).toBe(key);
    expect(c.PLATFORM_FEE_RECIPIENT).toBe('0x1111111111111111111111111111111111111111');
  });

  test('production with a 32-character SESSION_SECRET passes', () => {
    const c = loadConfig({ NODE_ENV: 'production', SESSION_SECRET: 's'.repeat(32) });
    expect(c.NODE_ENV).toBe('production');
    expect(c.SESSION_SECRET).toBe('s'.repeat(32));
  });
});

describe('loadConfig rejects bad values with a ConfigError naming the variable', () => {
  test.each<[string, string]>([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['RELAYER_PRIVATE_KEY', '0x12'],
    ['RELAYER_PRIVATE_KEY', 'a1'.repeat(32)],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'sqlite:./x.db'],
    ['NODE_ENV', 'staging'],
    ['LOG_LEVEL', 'verbose'],
    ['PUBLIC_URL', 'not a url'],
    ['BODY_LIMIT', '64 kilobytes'],
    ['TEMPORAL_UI_URL', 'localhost'],
    ['SESSION_SECRET', 'short'],
    ['SESSION_TTL_SECONDS', '0'],
    ['SETTLE_WAIT_MS', '99'],
    ['SETTLE_WAIT_MS', '300001'],
    ['MIN_VALIDITY_SECONDS', '-1'],
    ['MIN_VALIDITY_SECONDS', '3601'],
    ['RECEIPT_WAIT_MS', '10'],
    ['WORKER_TASK_SLOTS', '1'],
    ['WORKER_TASK_SLOTS', '2001'],
    ['PLATFORM_FEE_RECIPIENT', '0x12'],
    ['MAINNETS_ENABLED', 'on'],
    ['STUCK_AFTER_SECONDS', '0'],
    ['STUCK_AFTER_SECONDS', '5m'],
    ['RELAYER_MIN_BALANCE_ETHER', '-1'],
    ['RELAYER_MIN_BALANCE_ETHER', '1e18'],
    ['RELAYER_MIN_BALANCE_ETHER', '0.0000000000000000001'],
  ])('%s=%s', (name, value) => {
    const err = configError({ [name]: value });
    expect(err.message.startsWith('Invalid configuration:\n')).toBe(true);
    expect(namedVars(err)).toEqual([name]);
  });

  test('the message does not echo a bad private key', () => {
    const almostKey = `0x${'a1'.repeat(31)}`;
    const err = configError({ RELAYER_PRIVATE_KEY: almostKey });
    expect(err.message).not.toContain(almostKey);
    expect(err.message).toContain('RELAYER_PRIVATE_KEY: must be a 0x-prefixed 32-byte hex private key');
  });

  test('every bad variable is named at once', () => {
    const err = configError({ PORT: 'abc', RELAYER_PRIVATE_KEY: '0x12', DATABASE_URL: 'mysql://x' });
    expect(namedVars(err).sort()).toEqual(['DATABASE_URL', 'PORT', 'RELAYER_PRIVATE_KEY']);
    expect(err.message).toContain('DATABASE_URL: must be a postgres:// or postgresql:// URL');
  });

  test('production with a too-short SESSION_SECRET fails on SESSION_SECRET', () => {
    const err = configError({ NODE_ENV: 'production', SESSION_SECRET: 's'.repeat(31) });
    expect(err.message).toBe('Invalid configuration:\n  SESSION_SECRET: must be at least 32 characters');
  });

  test('ConfigError is an Error', () => {
    expect(configError({ PORT: 'abc' })).toBeInstanceOf(Error);
  });
});

describe('loadConfig reads numbers strictly', () => {
  test('an empty variable counts as unset (not 0)', () => {
    const c = loadConfig({ PORT: '', MIN_VALIDITY_SECONDS: '' });
    expect([c.PORT, c.MIN_VALIDITY_SECONDS]).toEqual([4021, 6]);
  });
  test.each(['0x10', '1e3', ' ', '-1', '4.5'])('PORT=%j is refused', (v) => {
    expect(namedVars(configError({ PORT: v }))).toEqual(['PORT']);
  });
});
