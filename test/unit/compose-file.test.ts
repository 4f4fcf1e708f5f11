import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config';
import { INFERENCE_VARIABLES } from '../../src/inference/config';
import { MEDIA_VARIABLES } from '../../src/media/config';
import { loadStartup } from '../../src/startup';
import { createCodecServer } from '../../src/temporal/codec-server';
import { payloadCodecProblem } from '../../src/temporal/payload-codec';
import { TOPUP_VARIABLES } from '../../src/topup/config';
import type { ProcessRole } from '../../src/production';
import { COMPOSE_CONFIG, TEMPORAL_SERVER, ensureGoTool } from '../../tools/go-tools';

/**
 * docker-compose.yml through Compose v2's own loader (tools/compose-config: compose-go, what
 * `docker compose` is built on), with no engine: it must load as Compose would load it for an
 * operator who set the variables its header lists, and then every process it starts must accept
 * the environment it is given, in production mode, and read every variable it is given.
 */
const ROOT = join(__dirname, '..', '..');
const COMPOSE_FILE = join(ROOT, 'docker-compose.yml');
const run = promisify(execFile);

interface ComposeService {
  image?: string;
  command?: string[] | null;
  entrypoint?: string[] | null;
  environment?: Record<string, string | null>;
  profiles?: string[];
}
interface ComposeModel {
  name: string;
  services: Record<string, ComposeService>;
}

const key = () => generatePrivateKey();
const address = () => privateKeyToAddress(generatePrivateKey());
const relayerKey = key();
const revenueKey = key();
const topupKey = key();

/** What an operator exports before `docker compose up` (the file's header): fresh values, none a devnet one. */
const OPERATOR_ENV: Record<string, string> = {
  SESSION_SECRET: randomBytes(32).toString('hex'),
  RELAYER_PRIVATE_KEY: relayerKey,
  REVENUE_WALLET_PRIVATE_KEY: revenueKey,
  TOPUP_RELAYER_PRIVATE_KEY: topupKey,
  RELAYER_ADDRESS: privateKeyToAddress(relayerKey),
  INFERENCE_REVENUE_WALLET: privateKeyToAddress(revenueKey),
  TOPUP_RELAYER_ADDRESS: privateKeyToAddress(topupKey),
  PERMIT2_ADDRESS: address(),
  EXACT_PERMIT2_PROXY_ADDRESS: address(),
  UPTO_PERMIT2_PROXY_ADDRESS: address(),
  TOPUP_MERCHANT_CONTRACT: address(),
  TOPUP_DEPOSITOR_CONTRACT: address(),
  TOPUP_FEE_FIXED: '20000',
  TOPUP_MIN_AMOUNT: '100000',
  TOPUP_FEE_RECIPIENT: address(),
  // One network switched on, with its contracts passed through (the variables without a value in the file).
  RPC_URLS_BASE_SEPOLIA: 'https://base-sepolia.example.org/rpc',
  FACILITATOR_ADDRESS_TESTNET: address(),
  USDC_ADDRESS_BASE_SEPOLIA: address(),
  GATEWAY_WALLET_TESTNET: address(),
  METRICS_TOKEN: randomBytes(24).toString('hex'),
  GRAFANA_ADMIN_PASSWORD: randomBytes(12).toString('hex'),
  PAYLOAD_CODEC_KEYS: `prod-202611:${randomBytes(32).toString('base64')}`,
  CODEC_SERVER_TOKEN: randomBytes(24).toString('hex'),
};

let binary: string;

/** The model Compose loads from docker-compose.yml with exactly `env` (no .env file, no other variable). */
async function loadCompose(env: Record<string, string>): Promise<ComposeModel> {
  const { stdout } = await run(binary, [COMPOSE_FILE], { env: { PATH: process.env.PATH ?? '', ...env }, maxBuffer: 16 << 20 });
  return JSON.parse(stdout) as ComposeModel;
}

/** Compose's error for `env`, or undefined when it loads. */
async function composeError(env: Record<string, string>): Promise<string | undefined> {
  return loadCompose(env).then(
    () => undefined,
    (err: { stderr?: string }) => err.stderr ?? String(err),
  );
}

/** A service's environment as its process sees it: a variable without a value in the file and unset is not there at all. */
const processEnv = (service: ComposeService): Record<string, string> =>
  Object.fromEntries(Object.entries(service.environment ?? {}).filter((e): e is [string, string] => e[1] !== null));

/** What each of our images' commands runs, and how that process reads its environment at start-up. */
const ENTRY_POINTS: Record<string, (env: Record<string, string>) => void> = {
  'dist/src/api/main.js': (env) => startup('api', env),
  'dist/workers/main.js': (env) => startup('worker', env),
  'dist/src/topup/main.js': (env) => startup('topup', env),
  'dist/src/db/migrate.js': (env) => loadConfig(env),
  'dist/ops/cli.js': (env) => {
    const problem = payloadCodecProblem(loadConfig(env));
    if (problem) throw new Error(`PAYLOAD_CODEC_KEYS: ${problem}`);
  },
  'dist/src/temporal/codec-server-main.js': (env) => createCodecServer(loadConfig(env)),
};

/** Names a process reads beyond its schemas' keys (the network table's per-network variables), recorded as it starts. */
const readByStartup = new Set<string>();

function startup(role: ProcessRole, env: Record<string, string>): void {
  const recording = new Proxy(env, {
    get(target, name, receiver) {
      if (typeof name === 'string') readByStartup.add(name);
      return Reflect.get(target, name, receiver) as unknown;
    },
  });
  loadStartup(role, recording);
}

const entryOf = (s: ComposeService) => [...(s.entrypoint ?? []), ...(s.command ?? [])].find((arg) => arg.startsWith('dist/'));

beforeAll(async () => {
  // npm test builds it first (`npm run tools`); run alone, this builds it once (seconds, once the modules are cached).
  binary = await ensureGoTool(COMPOSE_CONFIG);
}, 600_000);

describe('docker-compose.yml loads with Compose v2 and configures every process it starts', () => {
  let model: ComposeModel;
  beforeAll(async () => {
    model = await loadCompose(OPERATOR_ENV);
  });

  test('Compose loads it (every profile) once the variables of its header are set, and names each one it lacks', async () => {
    expect(model.name).toBe('x402-facilitator');
    expect(Object.keys(model.services).sort()).toEqual(
      [
        'api',
        'codec-server',
        'grafana',
        'migrate',
        'ops',
        'postgresql',
        'prometheus',
        'redis',
        'temporal',
        'temporal-admin-tools',
        'temporal-ui',
        'topup',
        'worker',
      ].sort(),
    );
    // Every variable the header says to export is one Compose insists on.
    for (const variable of ['SESSION_SECRET', 'PAYLOAD_CODEC_KEYS', 'TOPUP_RELAYER_PRIVATE_KEY', 'METRICS_TOKEN']) {
      const { [variable]: _left, ...rest } = OPERATOR_ENV;
      expect(await composeError(rest)).toContain(`required variable ${variable} is missing a value`);
    }
  });

  test('each of our services runs a known entry point, which starts in production mode with the environment Compose gives it', () => {
    const ours = Object.entries(model.services).filter(([, s]) => s.image === 'x402-facilitator:local');
    expect(ours.map(([name]) => name).sort()).toEqual(['api', 'codec-server', 'migrate', 'ops', 'topup', 'worker']);
    for (const [name, service] of ours) {
      const env = processEnv(service);
      expect({ name, NODE_ENV: env.NODE_ENV }).toEqual({ name, NODE_ENV: 'production' });
      const entry = entryOf(service);
      expect({ name, known: entry !== undefined && entry in ENTRY_POINTS }).toEqual({ name, known: true });
      // Throws (naming the variable) on anything production requires and was not passed.
      expect(() => ENTRY_POINTS[entry!]!(env)).not.toThrow();
    }
    // The API and the worker saw base-sepolia switched on, so the passed-through contracts reached them.
    expect(loadStartup('worker', processEnv(model.services.worker!)).networks.get('base-sepolia')!.enabled).toBe(true);
  });

  test('every variable our services are given is one the service reads (src/config.ts and the configs beside it)', () => {
    const known = new Set([...CONFIG_VARIABLES, ...TOPUP_VARIABLES, ...INFERENCE_VARIABLES, ...MEDIA_VARIABLES, ...readByStartup]);
    // Precondition: the start-ups above ran and read the network table's names.
    expect(readByStartup).toContain('RPC_URLS_BASE_SEPOLIA');
    const unknown = Object.entries(model.services)
      .filter(([, s]) => s.image === 'x402-facilitator:local')
      .flatMap(([name, s]) => Object.keys(s.environment ?? {}).map((variable) => `${name}.${variable}`))
      .filter((entry) => !known.has(entry.slice(entry.indexOf('.') + 1)));
    expect(unknown).toEqual([]);
  });

  test('npm run cluster builds the Temporal server of the version Compose runs', () => {
    expect(model.services.temporal!.image).toBe(`temporalio/auto-setup:${TEMPORAL_SERVER.version.replace(/^v/, '')}`);
  });
});
