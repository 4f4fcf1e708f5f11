/**
 * The local stack as child processes this script owns: `npm start` (devnet/start.ts) runs it with the
 * Temporal dev server, one worker and one API; `npm run cluster` (devnet/cluster.ts) with the
 * Temporal server on PostgreSQL, two workers and two APIs (`StackPlan`).
 *
 *   1. Temporal dev server (SQLite .data/temporal.db, UI on 8233, our search attributes), unless
 *      TEMPORAL_ADDRESS points at an existing cluster. The first run may build the Temporal CLI.
 *   2. One anvil per devnet chain (every network whose RPC URL is a loopback http URL: by default
 *      base-sepolia = 84532 on 8545 and optimism-sepolia = 11155420 on 8546), with the real chain id
 *      and its state in .data/anvil-<network>.json (dumped on exit and every few seconds).
 *   3. Our contracts deployed (idempotent: skipped when they are already there), the worker's
 *      relayer allowed, demo buyers funded on a fresh chain.
 *   4. The database migrated (SQLite .data/facilitator.sqlite, or DATABASE_URL).
 *   5. The worker (tsx workers/main.ts), the API (tsx src/api/main.ts) and the top-up gateway
 *      (tsx src/topup/main.ts, its own port; destination chain `base` = 8453 on 8547, cross-chain
 *      source `optimism` = 10 on 8548), all with the devnet payload codec key (.data/payload-codec-keys),
 *      and the codec server (src/temporal/codec-server-main.ts, token in .data/codec-server-token).
 *
 * Ctrl-C (SIGINT) or SIGTERM stops everything in order (api, worker, then chains and Temporal), so a
 * second `npm start` finds all its data again. If any child dies, its last output is printed and
 * everything stops with exit code 1.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createPublicClient, formatUnits, http, type Address } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import { ConfigError, DEVNET_RELAYER_KEY, isProductionEnv, type Config } from '../src/config';
import { loadStartup } from '../src/startup';
import { DEVNET_KEY_ID_PREFIX, generatePayloadCodecKey, parsePayloadCodecKeys } from '../src/temporal/codec-keys';
import type { EvmNetwork } from '../src/chains/networks';
import { openDatabase } from '../src/db/orm';
import { startTemporalDevServer, type DevServer } from '../temporal/dev-server';
import { startAnvil, rpc, type Anvil } from './anvil';
import { compileContracts } from './contracts';
import { deployDevnet, devnetAddresses } from './deploy';
import { startDevnetBridgeAttester } from './bridge-attester';
import { DEMO_BUYERS, DEMO_BUYER_USDC } from './demo-accounts';
import { startLocalSolanaDevnet } from './start-solana';
import { deployTopupContracts, topupDevnetEnv, topupEndpoint } from './start-topup';
import { startDevnetInferenceProviders } from './inference-provider';
import { startGatewayForDevnet } from './gateway-devnet';
import { startMediaProvider } from './media-provider';
import { canConnect, describeExit, repoRoot, spawnManaged, waitForHttp, waitUntil, type LogFn, type ManagedProcess } from './process';
import { tokenAbi } from '../src/chains/evm/abi';

const ROOT = repoRoot();
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** What differs between `npm start` and `npm run cluster`. */
export interface StackPlan {
  /** The command, for messages. */
  command: string;
  /** Chain state, secrets and the dev server's database (relative to the repository). */
  dataDir: string;
  /** Variables every child gets on top of the caller's environment (e.g. DATABASE_URL, REDIS_URL). */
  env?: Record<string, string>;
  /** Starts Temporal (default: the dev server on TEMPORAL_ADDRESS's port, SQLite in dataDir, UI). */
  startTemporal?: (config: Config, log: LogFn) => Promise<DevServer>;
  /** What the summary says Temporal is. */
  temporalKind?: string;
  /**
   * Serves the Temporal UI on TEMPORAL_UI_URL once the codec server runs (`codec`: its URL and token);
   * the dev server of `npm start` serves its own.
   */
  startUi?: (
    config: Config,
    codec: { url: string; token: string },
    log: LogFn,
  ) => Promise<{ url: string; pid: number; stop(): Promise<void> }>;
  /** The worker processes, each with its own variables (its relayer lanes); default one, `worker`. */
  workers?: { name: string; env: Record<string, string> }[];
  /** The API processes by name and port; default one, `api` on PORT. */
  apis?: (config: Config) => { name: string; port: number }[];
  /**
   * A worker or API process that ends is reported and the rest keeps running, as on a cluster where
   * they come and go (default: any child that ends stops everything).
   */
  appsMayEnd?: boolean;
}

let PLAN: StackPlan | undefined;

let DATA_DIR = path.join(ROOT, '.data');

// ---------------------------------------------------------------------------------------------
// Output: our own progress on stderr as `[start] ...`, children as `[name] ...`, the summary on stdout.

const say = (line: string) => process.stderr.write(`[start] ${line}\n`);
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

const RECENT_LINES = 40;

/** Output of one child: printed with its name, the last lines kept to explain a crash. */
class ChildLog {
  private readonly lines: string[] = [];
  /** While stopping, children's goodbye noise (closed connections, ...) is not printed. */
  static quiet = false;

  constructor(readonly name: string) {}

  readonly log: LogFn = (line) => {
    const text = formatPinoLine(line);
    this.lines.push(text);
    if (this.lines.length > RECENT_LINES) this.lines.shift();
    if (!ChildLog.quiet) process.stderr.write(`[${this.name}] ${text}\n`);
  };

  recent(): string {
    return this.lines.length ? this.lines.map((l) => `  | ${l}`).join('\n') : '  | (no output)';
  }
}

const PINO_LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** The api and worker log pino JSON; show `LEVEL msg {fields}` without the fields every line repeats. */
function formatPinoLine(line: string): string {
  if (!line.startsWith('{')) return line;
  try {
    const { level, time: _time, pid: _pid, hostname: _host, name: _name, msg, ...rest } = JSON.parse(line) as Record<string, unknown>;
    const fields = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : '';
    return `${PINO_LEVELS[level as number] ?? String(level)} ${String(msg ?? '')}${fields}`;
  } catch {
    return line;
  }
}

// ---------------------------------------------------------------------------------------------
// What is running, and stopping it.

interface Child {
  name: string;
  log: ChildLog;
  pid: number;
  /** Set for processes spawned here (api, worker); others are watched by pid. */
  proc?: ManagedProcess;
  stop(): Promise<void>;
}

const apps: Child[] = []; // api, worker: stopped first
const infra: Child[] = []; // anvils, Temporal: stopped last (anvil dumps its state on the way out)
let stopping = false;
let stoppingSince = 0;
let exitCode = 0;

async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    stoppingSince = Date.now();
    exitCode = code;
    if (apps.length + infra.length > 0) {
      say(`stopping: api and worker, then chains (anvil writes its state to ${path.relative(ROOT, DATA_DIR)}/) and Temporal ...`);
      const started = Date.now();
      ChildLog.quiet = code === 0;
      await Promise.all(apps.map((c) => c.stop().catch(() => undefined)));
      await Promise.all(infra.map((c) => c.stop().catch(() => undefined)));
      say(`stopped everything in ${seconds(started)}`);
    }
    process.exit(exitCode);
  }
  return new Promise<never>(() => undefined); // already stopping: the first caller exits
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    // tsx relays the terminal's Ctrl-C to us a second time right away; only a later one is news.
    if (!stopping) void shutdown(0);
    else if (Date.now() - stoppingSince > 1000) say(`still stopping (${signal} again); anvil may be writing its state`);
  });
}

/** A child that ends while we are not stopping is a failure of the whole stack. */
async function childDied(child: Child, how: string): Promise<void> {
  // Ctrl-C in a terminal signals the whole process group at once: a child may exit before our own
  // SIGINT handler has run. Give that handler a moment before calling the exit unexpected.
  await new Promise((resolve) => setTimeout(resolve, 500));
  if (stopping) return;
  if (PLAN?.appsMayEnd && apps.includes(child) && apps.some((c) => c !== child && !c.proc?.hasExited)) {
    say(`${child.name} ${how}; the other processes keep running`);
    return;
  }
  process.stderr.write(`\n[start] ${child.name} ${how} unexpectedly; its last output:\n${child.log.recent()}\n\n`);
  await shutdown(1);
}

function watch(child: Child): void {
  if (child.proc) {
    void child.proc.exited.then((info) => childDied(child, describeExit(info)));
    return;
  }
  // anvil and the Temporal server are spawned by their own modules, which hand back a pid.
  const timer = setInterval(() => {
    if (stopping) return clearInterval(timer);
    try {
      process.kill(child.pid, 0);
    } catch {
      clearInterval(timer);
      void childDied(child, 'exited');
    }
  }, 1000);
  timer.unref();
}

// ---------------------------------------------------------------------------------------------
// Steps.

/** `variable` from the environment, else the value in `file` if `valid`, else `make()` written there (owner-only). */
function devnetSecret(variable: string, file: string, valid: (v: string) => boolean, make: () => string): string {
  if (process.env[variable]) return process.env[variable]!;
  if (existsSync(file)) {
    const value = readFileSync(file, 'utf8').trim();
    if (valid(value)) return value;
    say(`${path.relative(ROOT, file)} is not valid; writing a new one`);
  }
  const value = make();
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return value;
}

/** SESSION_SECRET from the environment, else the one in .data/session-secret (created on first start; a new one ends existing sessions). */
const sessionSecret = () =>
  devnetSecret(
    'SESSION_SECRET',
    path.join(DATA_DIR, 'session-secret'),
    (v) => v.length >= 32,
    () => randomBytes(32).toString('hex'),
  );

/**
 * PAYLOAD_CODEC_KEYS from the environment, else the devnet key in .data/payload-codec-keys, made on
 * the first start and kept with the Temporal database whose payloads it sealed. Its id starts with
 * `devnet`, which production refuses.
 */
const payloadCodecKeys = () =>
  devnetSecret(
    'PAYLOAD_CODEC_KEYS',
    path.join(DATA_DIR, 'payload-codec-keys'),
    (v) => {
      try {
        return parsePayloadCodecKeys(v).keys.size > 0;
      } catch {
        return false;
      }
    },
    () => generatePayloadCodecKey(`${DEVNET_KEY_ID_PREFIX}-${randomBytes(4).toString('hex')}`),
  );

/** CODEC_SERVER_TOKEN from the environment, else the one in .data/codec-server-token. */
const codecServerToken = () =>
  devnetSecret(
    'CODEC_SERVER_TOKEN',
    path.join(DATA_DIR, 'codec-server-token'),
    (v) => v.length >= 32,
    () => randomBytes(24).toString('hex'),
  );

/** The loopback port of a devnet RPC URL, or undefined when the network points elsewhere. */
function localRpcPort(network: EvmNetwork): number | undefined {
  if (network.rpcUrls.length !== 1) return undefined;
  const url = new URL(network.rpcUrls[0]!);
  if (url.protocol !== 'http:' || !LOOPBACK.has(url.hostname)) return undefined;
  return Number(url.port || 80);
}

async function checkPortsFree(ports: { port: number; what: string }[]): Promise<void> {
  const busy: string[] = [];
  for (const { port, what } of ports) if (await canConnect('127.0.0.1', port, 500)) busy.push(`${port} (${what})`);
  if (busy.length) {
    throw new Error(`port ${busy.join(', ')} already in use: is another \`npm start\` running? Stop it first.`);
  }
}

/** `npm start`'s Temporal: the dev server (SQLite in the data folder, the UI on TEMPORAL_UI_URL's port). */
const startDevServer = (config: Config, log: LogFn): Promise<DevServer> =>
  startTemporalDevServer({
    dbFile: path.join(DATA_DIR, 'temporal.db'),
    port: Number(config.TEMPORAL_ADDRESS.split(':').pop()),
    uiPort: Number(new URL(config.TEMPORAL_UI_URL).port || 80),
    namespace: config.TEMPORAL_NAMESPACE,
    log,
  });

async function startTemporal(config: Config, plan: StackPlan): Promise<DevServer> {
  const started = Date.now();
  const log = new ChildLog('temporal');
  const server = await (plan.startTemporal ?? startDevServer)(config, log.log);
  const child: Child = { name: 'temporal', log, pid: server.pid, stop: () => server.stop() };
  infra.push(child);
  watch(child);
  say(`Temporal ready at ${server.address} (${seconds(started)})`);
  return server;
}

async function startChain(network: EvmNetwork, port: number): Promise<Anvil> {
  const started = Date.now();
  const stateFile = path.join(DATA_DIR, `anvil-${network.id}.json`);
  const resumed = existsSync(stateFile);
  const log = new ChildLog(`anvil:${network.id}`);
  const anvil = await startAnvil({ chainId: network.chainId!, port, stateFile, log: log.log });
  const child: Child = { name: `anvil:${network.id}`, log, pid: anvil.pid, stop: () => anvil.stop() };
  infra.push(child);
  watch(child);
  const block = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber'));
  say(
    `anvil ${network.id} (chain ${anvil.chainId}) on ${anvil.rpcUrl}, ${resumed ? `state loaded from .data/, block ${block}` : 'fresh chain'} (${seconds(started)})`,
  );
  return anvil;
}

async function deployContracts(network: EvmNetwork, anvil: Anvil, relayers: Address[], topupRelayer: Address): Promise<void> {
  compileContracts(); // before any request: see deployDevnet (chains are deployed side by side)
  const started = Date.now();
  const { facilitator } = devnetAddresses();
  const code = await rpc<string>(anvil.rpcUrl, 'eth_getCode', [facilitator, 'latest']);
  const present = code !== '0x' && code !== '';
  await deployDevnet({
    rpcUrl: anvil.rpcUrl,
    chainId: anvil.chainId,
    relayers,
    buyers: DEMO_BUYERS.map((b) => ({ address: b.address, amount: DEMO_BUYER_USDC })),
  });
  const topup = await deployTopupContracts(network, anvil.rpcUrl, anvil.chainId, topupRelayer);
  if (topup) say(topup);
  say(
    present
      ? `contracts already on ${network.id}: any missing ones added, relayer checked (${seconds(started)})`
      : `contracts deployed on ${network.id}, relayer allowed, demo buyers funded (${seconds(started)})`,
  );
}

async function migrate(config: Config): Promise<void> {
  const started = Date.now();
  const db = await openDatabase(config, { migrate: true });
  await db.close(true);
  const where = config.DATABASE_URL
    ? new URL(config.DATABASE_URL).pathname.slice(1) || 'postgres'
    : path.relative(ROOT, path.resolve(config.SQLITE_PATH));
  say(`database migrated (${where}, ${seconds(started)})`);
}

function spawnApp(name: string, entry: string, env: NodeJS.ProcessEnv, onLine?: (line: string) => void): Child {
  const log = new ChildLog(name);
  // node --import tsx, not the tsx launcher: the child pid is the app itself, so stopping or
  // killing it never leaves an orphan behind a dead launcher.
  const proc = spawnManaged(name, process.execPath, ['--import', 'tsx', entry], {
    cwd: ROOT,
    env,
    log: (line) => {
      onLine?.(line);
      log.log(line);
    },
  });
  const child: Child = {
    name,
    log,
    pid: proc.child.pid ?? 0,
    proc,
    stop: async () => {
      await proc.stop({ signal: 'SIGINT', timeoutMs: 15_000 });
    },
  };
  apps.push(child);
  return child;
}

async function startWorker(env: NodeJS.ProcessEnv, name = 'worker'): Promise<void> {
  const started = Date.now();
  let ready = false;
  // Readiness is the worker's own 'worker ready' log line (info level), so it must log at least info.
  const quieter = ['warn', 'error', 'fatal', 'silent'].includes(String(env.LOG_LEVEL));
  const child = spawnApp(name, 'workers/main.ts', quieter ? { ...env, LOG_LEVEL: 'info' } : env, (line) => {
    if (line.includes('worker ready')) ready = true;
  });
  // The first start bundles the workflow code (webpack), which takes a while on small machines.
  await waitUntil('the worker to be ready', async () => ready, { timeoutMs: 180_000, intervalMs: 100, process: child.proc });
  watch(child);
  say(`${name} ready (${seconds(started)})`);
}

async function startApi(config: Config, env: NodeJS.ProcessEnv, api = { name: 'api', port: config.PORT }): Promise<void> {
  const started = Date.now();
  const child = spawnApp(api.name, 'src/api/main.ts', { ...env, PORT: String(api.port) });
  const host = ['0.0.0.0', '::', '[::]'].includes(config.HOST) ? '127.0.0.1' : config.HOST;
  await waitForHttp(`http://${host.includes(':') ? `[${host}]` : host}:${api.port}/healthz`, {
    timeoutMs: 120_000,
    intervalMs: 100,
    process: child.proc,
  });
  watch(child);
  say(`${api.name === 'api' ? 'API' : `${api.name} (port ${api.port})`} ready (${seconds(started)})`);
}

async function startTopupGateway(config: Config, env: NodeJS.ProcessEnv): Promise<void> {
  const started = Date.now();
  const child = spawnApp('topup', 'src/topup/main.ts', env);
  const host = ['0.0.0.0', '::', '[::]'].includes(config.HOST) ? '127.0.0.1' : config.HOST;
  await waitForHttp(`http://${host.includes(':') ? `[${host}]` : host}:${topupEndpoint(env).port}/healthz`, {
    timeoutMs: 120_000,
    intervalMs: 100,
    process: child.proc,
  });
  watch(child);
  say(`top-up gateway ready (${seconds(started)})`);
}

/** The codec server (src/temporal/codec-server-main.ts): operators read sealed payloads through it. */
async function startCodecServer(config: Config, env: NodeJS.ProcessEnv): Promise<void> {
  const child = spawnApp('codec', 'src/temporal/codec-server-main.ts', env);
  const host = ['0.0.0.0', '::', '[::]'].includes(config.CODEC_SERVER_HOST) ? '127.0.0.1' : config.CODEC_SERVER_HOST;
  await waitUntil('the codec server to listen', () => canConnect(host, config.CODEC_SERVER_PORT, 500), {
    timeoutMs: 60_000,
    intervalMs: 100,
    process: child.proc,
  });
  watch(child);
}

/** The plan's Temporal UI, after the codec server it decodes payloads through. */
async function startUi(config: Config, env: NodeJS.ProcessEnv, plan: StackPlan): Promise<string | undefined> {
  if (!plan.startUi) return undefined;
  const started = Date.now();
  const log = new ChildLog('temporal-ui');
  const codec = { url: `http://${config.CODEC_SERVER_HOST}:${config.CODEC_SERVER_PORT}`, token: env.CODEC_SERVER_TOKEN! };
  const ui = await plan.startUi(config, codec, log.log);
  const child: Child = { name: 'temporal-ui', log, pid: ui.pid, stop: () => ui.stop() };
  infra.push(child);
  watch(child);
  say(`Temporal UI ready at ${ui.url} (${seconds(started)})`);
  return ui.url;
}

/** Runs the starts in parallel; every one that succeeded is registered (and so stopped on failure). */
async function all<T>(starts: Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(starts);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

// ---------------------------------------------------------------------------------------------

/** Starts the stack `plan` describes, prints the summary, and stops everything on Ctrl-C. */
export function runStack(plan: StackPlan): void {
  PLAN = plan;
  DATA_DIR = path.resolve(ROOT, plan.dataDir);
  main(plan).catch(async (err) => {
    if (stopping) return;
    const message = err instanceof ConfigError ? err.message : err instanceof Error ? err.message : String(err);
    process.stderr.write(`\n[start] could not start: ${message}\n\n`);
    await shutdown(1);
  });
}

async function main(plan: StackPlan): Promise<void> {
  const started = Date.now();
  process.chdir(ROOT); // relative paths in the config (SQLITE_PATH) mean the repository
  mkdirSync(DATA_DIR, { recursive: true });

  const externalTemporal = process.env.TEMPORAL_ADDRESS;
  // Every process that talks to Temporal seals its payloads with the same devnet key (docs/security.md).
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ...plan.env,
    SESSION_SECRET: sessionSecret(),
    PAYLOAD_CODEC_KEYS: payloadCodecKeys(),
    CODEC_SERVER_TOKEN: codecServerToken(),
  };
  Object.assign(childEnv, topupDevnetEnv(childEnv));
  if (isProductionEnv(childEnv)) {
    throw new ConfigError(
      `Invalid configuration:\n  NODE_ENV: ${plan.command} runs the devnet; production (or MAINNETS_ENABLED) runs the processes themselves`,
    );
  }
  // Every child's whole configuration (inference, media and top-up included) is parsed before anything starts.
  const { config, networks } = loadStartup('api', childEnv);
  const workers = (plan.workers ?? [{ name: 'worker', env: {} }]).map((w) => ({
    ...w,
    keys: loadStartup('worker', { ...childEnv, ...w.env }).keys!,
  }));
  const apis = plan.apis?.(config) ?? [{ name: 'api', port: config.PORT }];
  loadStartup('topup', childEnv);
  const devnets = [...networks.values()]
    .filter((n) => n.enabled)
    .map((n) => ({ network: n, port: localRpcPort(n) }))
    .filter((d): d is { network: EvmNetwork; port: number } => d.port !== undefined);
  // Every lane of every worker is an allowed relayer of the facilitator contracts, with gas.
  const relayers = [...new Set(workers.flatMap((w) => [w.keys.relayer, ...w.keys.lanes].map((k) => privateKeyToAddress(k))))];

  await checkPortsFree([
    ...apis.map((a) => ({ port: a.port, what: a.name })),
    { port: topupEndpoint(childEnv).port, what: 'top-up gateway' },
    { port: config.CODEC_SERVER_PORT, what: 'codec server' },
    ...(externalTemporal
      ? []
      : [
          { port: Number(config.TEMPORAL_ADDRESS.split(':').pop()), what: 'Temporal' },
          ...(plan.startTemporal && !plan.startUi
            ? []
            : [{ port: Number(new URL(config.TEMPORAL_UI_URL).port || 80), what: 'Temporal UI' }]),
        ]),
    ...devnets.map((d) => ({ port: d.port, what: `anvil ${d.network.id}` })),
  ]);

  say(
    `starting ${externalTemporal ? `(Temporal at ${externalTemporal}) ` : 'Temporal, '}` +
      `${devnets.map((d) => `anvil ${d.network.id}`).join(', ')}; data in ${path.relative(process.cwd(), DATA_DIR) || '.'}/`,
  );
  const [temporal, ...anvils] = await all<DevServer | Anvil | undefined>([
    externalTemporal ? Promise.resolve(undefined) : startTemporal(config, plan),
    ...devnets.map((d) => startChain(d.network, d.port)),
  ]);
  if (stopping) return;
  await startLocalSolanaDevnet(childEnv, config, say); // in this process; ends with it
  await all<void>([
    ...devnets.map((d, i) => deployContracts(d.network, anvils[i] as Anvil, relayers, privateKeyToAddress(workers[0]!.keys.topupRelayer))),
    migrate(config),
  ]);
  say(`bridge attestation double at ${(await startDevnetBridgeAttester(childEnv)).url} (BRIDGE_ATTESTATION_URL)`);
  if (stopping) return;
  const gatewayChains = devnets.map((d, i) => ({
    network: d.network.id,
    chainId: d.network.chainId!,
    rpcUrl: (anvils[i] as Anvil).rpcUrl,
  }));
  await startGatewayForDevnet(config.GATEWAY_API_URL_TESTNET, gatewayChains, devnetAddresses().usdc, say);

  // The inference provider doubles (in this process) on the ports the default INFERENCE_PROVIDERS names.
  if (!childEnv.INFERENCE_PROVIDERS) {
    const p = await startDevnetInferenceProviders({ modelserver: 8600, modelserver2: 8601 });
    infra.push({ name: 'inference', log: new ChildLog('inference'), pid: process.pid, stop: p.stop });
    say(`inference provider doubles at ${p.modelserver.url} and ${p.modelserver2.url}`);
  }
  // The media provider double (in this process) on the port the default MEDIA_PROVIDER_URL names.
  if (!childEnv.MEDIA_PROVIDER_URL) {
    const m = await startMediaProvider({ port: 8610 });
    infra.push({ name: 'media', log: new ChildLog('media'), pid: process.pid, stop: m.stop });
    say(`media provider double at ${m.url}`);
  }
  childEnv.TEMPORAL_ADDRESS = (temporal as DevServer | undefined)?.address ?? config.TEMPORAL_ADDRESS;
  await all([
    ...workers.map((w) => startWorker({ ...childEnv, ...w.env }, w.name)),
    ...apis.map((a) => startApi(config, childEnv, a)),
    startTopupGateway(config, childEnv),
    startCodecServer(config, childEnv),
  ]);
  if (stopping) return;
  const uiUrl = await startUi(config, childEnv, plan);
  if (stopping) return;
  // Which pid is which process, for scripts and tests that stop one (`processes.json` in the data folder).
  const pids = Object.fromEntries([...apps, ...infra].filter((c) => c.pid !== process.pid).map((c) => [c.name, c.pid]));
  writeFileSync(path.join(DATA_DIR, 'processes.json'), `${JSON.stringify({ stack: process.pid, ...pids }, null, 2)}\n`);

  await printSummary({
    plan,
    config,
    chains: devnets.map((d) => d.network),
    workers: workers.map((w) => ({ name: w.name, lanes: w.keys.lanes.map((k) => privateKeyToAddress(k)) })),
    apis,
    temporal: temporal as DevServer | undefined,
    uiUrl,
    elapsedMs: Date.now() - started,
  });
}

async function printSummary(o: {
  plan: StackPlan;
  config: Config;
  chains: EvmNetwork[];
  workers: { name: string; lanes: Address[] }[];
  apis: { name: string; port: number }[];
  temporal: DevServer | undefined;
  uiUrl: string | undefined;
  elapsedMs: number;
}): Promise<void> {
  const { config, chains } = o;
  const data = path.relative(ROOT, DATA_DIR);
  const api = config.publicUrl;
  const { usdc, facilitator } = devnetAddresses();
  const balances = await Promise.all(
    chains.map(async (n) => {
      const client = createPublicClient({ transport: http(n.rpcUrls[0]) });
      return Promise.all(
        DEMO_BUYERS.map((b) => client.readContract({ address: n.usdc!, abi: tokenAbi, functionName: 'balanceOf', args: [b.address] })),
      );
    }),
  );
  const usd = (v: bigint) => formatUnits(v, 6);
  const pad = (s: string, n: number) => s.padEnd(n);
  const devnetRelayer = privateKeyToAddress(DEVNET_RELAYER_KEY);
  const note = (a: Address) => (a === devnetRelayer ? ' (anvil account #1)' : '');
  const temporalUi = o.uiUrl ?? o.temporal?.uiUrl;

  const lines = [
    '',
    `x402 facilitator is running (started in ${(o.elapsedMs / 1000).toFixed(1)} s). Ctrl-C stops everything; data stays in ${data}/.`,
    '',
    ...o.apis.map(
      (a, i) =>
        `  ${i === 0 ? 'API         ' : '            '}  ${a.port === config.PORT ? api : `http://localhost:${a.port}`}   (${o.apis.length > 1 ? `${a.name}, ` : ''}listening on ${config.HOST}:${a.port})`,
    ),
    `  Top-up        ${topupEndpoint(config.env).url}/v1/${topupEndpoint(config.env).merchant}/topups   (gateway, quote at .../topups/quote?buyer=0x...)`,
    ...(o.plan.temporalKind ? [`  Temporal      ${o.temporal?.address ?? config.TEMPORAL_ADDRESS}   (${o.plan.temporalKind})`] : []),
    ...(!o.plan.temporalKind || temporalUi
      ? [
          `  Temporal UI   ${temporalUi ?? `${config.TEMPORAL_UI_URL} (TEMPORAL_UI_URL)`}   (namespace ${config.TEMPORAL_NAMESPACE}, task queue ${config.TEMPORAL_TASK_QUEUE})`,
        ]
      : []),
    `  Codec server  http://${config.CODEC_SERVER_HOST}:${config.CODEC_SERVER_PORT}   (payloads in Temporal are sealed with ${data}/payload-codec-keys; read them with`,
    `                temporal workflow show -w <id> --codec-endpoint http://${config.CODEC_SERVER_HOST}:${config.CODEC_SERVER_PORT} --codec-auth "Bearer $(cat ${data}/codec-server-token)")`,
    `  Operators     PAYLOAD_CODEC_KEYS=$(cat ${data}/payload-codec-keys) npm run ops -- list   (the ops CLI needs the key too)`,
    ...chains.map(
      (n, i) => `  ${i === 0 ? 'Chains      ' : '            '}  ${pad(n.id, 17)} chain ${pad(String(n.chainId), 9)} ${n.rpcUrls[0]}`,
    ),
    `  Contracts     USDC ${usdc}, facilitator ${facilitator} (same on every devnet chain)`,
    ...(o.workers.length === 1 && o.workers[0]!.lanes.length === 1
      ? [`  Relayer       ${o.workers[0]!.lanes[0]}${note(o.workers[0]!.lanes[0]!)}`]
      : o.workers.map(
          (w, i) =>
            `  ${i === 0 ? 'Workers     ' : '            '}  ${w.name}: relayer lanes ${w.lanes.map((a) => `${a}${note(a)}`).join(', ')}`,
        )),
    `  Database      ${config.DATABASE_URL ? `PostgreSQL (DATABASE_URL, ${new URL(config.DATABASE_URL).pathname.slice(1)})` : path.relative(ROOT, path.resolve(config.SQLITE_PATH))}`,
    ...(config.REDIS_URL ? [`  Rate limits   Redis ${config.REDIS_URL} (shared by every API and the top-up gateway)`] : []),
    '',
    'Sign in with Ethereum (EIP-4361), then create an API key:',
    `  1. GET   ${api}/v1/auth/nonce                        -> {"nonce"}`,
    `  2. POST  ${api}/v1/auth/verify  {"message","signature"} -> sets the siwe-session cookie`,
    `           (SIWE message domain "${new URL(api).host}", uri "${api}", the nonce from step 1)`,
    `  3. PATCH ${api}/v1/organization {"payoutWalletTest":"0x..."}   (where test payments are paid out)`,
    `  4. POST  ${api}/v1/api_keys     {"name":"my backend","test_net":true} -> api_key pk_test_... (shown once)`,
    `  Then sellers call POST ${api}/v1/settle with "Authorization: Bearer pk_test_...".`,
    '  `npm run smoke` does all of this with a fresh account and settles 1 USDC from the first demo buyer.',
    '',
    "DEVNET ONLY - demo buyer accounts (anvil's public test mnemonic; never send real funds to them):",
    ...DEMO_BUYERS.map(
      (b, i) =>
        `  #${b.index}  ${b.address}  private key ${b.privateKey}\n` +
        `      USDC: ${chains.map((n, c) => `${usd(balances[c]![i]!)} on ${n.id}`).join(', ')}`,
    ),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
