import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigError } from '../../src/config';
import { loadStartup } from '../../src/startup';

/**
 * Issue 10: all config, inference, media and top-up included, is parsed once at start-up; a bad value
 * stops the process with the variable's name (no stack: nothing is reachable at these addresses).
 */

const ROOT = resolve(__dirname, '../..');

/** The message of the ConfigError `fn` throws (fails the test if it throws nothing or something else). */
function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadStartup parses every part of a process config at once', () => {
  test('api: a bad MEDIA_* value names the variable', () => {
    expect(configError(() => loadStartup('api', { MEDIA_STORE: 'ftp' }))).toMatch(/^ {2}MEDIA_STORE: /m);
    expect(configError(() => loadStartup('api', { MEDIA_IMAGE_PRICE: '0' }))).toMatch(/^ {2}MEDIA_IMAGE_PRICE: /m);
    expect(configError(() => loadStartup('api', { MEDIA_CAPABILITIES: 'image,smell' }))).toContain(
      'MEDIA_CAPABILITIES: unknown kind(s) smell',
    );
  });

  test('api and worker: a bad INFERENCE_* value names the variable', () => {
    expect(configError(() => loadStartup('api', { INFERENCE_CHAT_PRICE: 'ten' }))).toMatch(/^ {2}INFERENCE_CHAT_PRICE: /m);
    expect(configError(() => loadStartup('worker', { INFERENCE_PROVIDERS: 'not json' }))).toContain(
      'INFERENCE_PROVIDERS: must be a JSON array',
    );
  });

  test('worker: a bad MEDIA_* value names the variable (the media activities read it)', () => {
    expect(configError(() => loadStartup('worker', { MEDIA_POLL_INTERVAL_MS: 'often' }))).toMatch(/^ {2}MEDIA_POLL_INTERVAL_MS: /m);
  });

  test('api and worker: chat and media on a mainnet need MAINNETS_ENABLED (issue 12, mainnet gate)', () => {
    for (const role of ['api', 'worker'] as const) {
      expect(configError(() => loadStartup(role, { INFERENCE_CHAT_NETWORK: 'base', MEDIA_NETWORK: 'optimism' }))).toBe(
        'Invalid configuration:\n  INFERENCE_CHAT_NETWORK: base is a mainnet and MAINNETS_ENABLED is off\n  MEDIA_NETWORK: optimism is a mainnet and MAINNETS_ENABLED is off',
      );
    }
    expect(loadStartup('api', { INFERENCE_CHAT_NETWORK: 'optimism-sepolia' }).inference!.network).toBe('optimism-sepolia');
  });

  test('a network given RPC URLs but lacking a fact is named, with the variables to set (issue 40)', () => {
    for (const role of ['api', 'worker', 'topup'] as const) {
      const s = loadStartup(role, {
        RPC_URLS_TEMPO: 'https://tempo.example/rpc',
        FACILITATOR_ADDRESS_MAINNET: '0x4444444444444444444444444444444444444444',
      });
      expect(s.networks.get('tempo')!.enabled).toBe(false);
      expect(s.notices).toEqual(['tempo has RPC URLs but is not enabled: set USDC_ADDRESS_TEMPO (its USDC address is not shipped)']);
    }
    // The devnet alone (both chains enabled) says nothing.
    expect(loadStartup('api', {}).notices).toEqual([]);
  });

  test('topup: a bad TOPUP_* value names the variable', () => {
    expect(configError(() => loadStartup('topup', { TOPUP_FEE_BPS: '10000' }))).toMatch(/^ {2}TOPUP_FEE_BPS: /m);
    expect(configError(() => loadStartup('topup', { TOPUP_SOURCES: 'base,mars' }))).toMatch(/^ {2}TOPUP_SOURCES/m);
  });

  test('good values: the parsed parts are the ones the services later read (memoized per config)', () => {
    const s = loadStartup('api', { MEDIA_IMAGE_PRICE: '30000', INFERENCE_CHAT_PRICE: '5000' });
    expect(s.media!.prices.image).toBe('30000');
    expect(s.inference!.price).toBe('5000');
    expect(s.topup).toBeUndefined();
    const t = loadStartup('topup', { TOPUP_FEE_BPS: '25', TOPUP_FEE_RECIPIENT: '0x1111111111111111111111111111111111111111' });
    expect(t.topup!.TOPUP_FEE_BPS).toBe(25n);
    expect(t.media).toBeUndefined();
  });
});

/** Runs an entry point with `env` until it exits (bounded); its exit code and output. */
function runEntryPoint(file: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const dir = mkdtempSync(join(tmpdir(), 'x402-startup-'));
    const child = spawn(join(ROOT, 'node_modules/.bin/tsx'), [file], {
      cwd: ROOT,
      // Nothing listens on port 1: a process that got past its config would fail on Temporal instead.
      env: { PATH: process.env.PATH!, SQLITE_PATH: join(dir, 'db.sqlite'), TEMPORAL_ADDRESS: '127.0.0.1:1', LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`${file} did not exit within 60 s:\n${output}`));
    }, 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

describe('entry points stop at start-up on a bad value, naming it', () => {
  test('src/api/main.ts with a bad MEDIA_* value exits 1 before touching the database or Temporal', async () => {
    const { code, output } = await runEntryPoint('src/api/main.ts', { MEDIA_JOB_TIMEOUT_MS: 'forever' });
    expect(code).toBe(1);
    expect(output).toMatch(/^Invalid configuration:\n {2}MEDIA_JOB_TIMEOUT_MS: /m);
  });

  test('workers/main.ts with a bad MEDIA_* value exits 1 before touching the database or Temporal', async () => {
    const { code, output } = await runEntryPoint('workers/main.ts', { MEDIA_STORE: 'tape' });
    expect(code).toBe(1);
    expect(output).toMatch(/^Invalid configuration:\n {2}MEDIA_STORE: /m);
  });
});
