import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { spawnManaged, entryArgs, waitUntil, type ManagedProcess } from '../../devnet/process';
import type { Config } from '../../src/config';
import { temporalDataConverter } from '../../src/temporal/payload-codec';
import { readStackInfo } from './stack-info';

const ROOT = join(__dirname, '..', '..');

/**
 * Environment of one test file's services on the shared stack: its own task queue (so only its
 * own workers pick up its workflows), its own relayer key and its own database.
 */
export function stackEnv(opts: { taskQueue: string; relayerKey: string }): Record<string, string> {
  const stack = readStackInfo();
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', // the worker's 'worker ready' line is info
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_TASK_QUEUE: opts.taskQueue,
    RELAYER_PRIVATE_KEY: opts.relayerKey,
    RPC_URLS_BASE_SEPOLIA: stack.chains['base-sepolia'].rpcUrl,
    RPC_URLS_OPTIMISM_SEPOLIA: stack.chains['optimism-sepolia'].rpcUrl,
    WORKFLOW_BUNDLE_PATH: stack.workflowBundlePath,
    SOLANA_RPC_URL_SOLANA_DEVNET: stack.solana.rpcUrl,
  };
  return env;
}

/** The database variables of a test database's config, for a worker process. */
export function dbEnv(config: Config): Record<string, string> {
  return config.DATABASE_URL ? { DATABASE_URL: config.DATABASE_URL } : { SQLITE_PATH: config.SQLITE_PATH };
}

/**
 * A real worker process (workers/main.ts, compiled or through tsx: devnet/process.ts entryArgs), ready
 * once it has said so. `onLine` sees every line it prints on stdout and stderr.
 */
export async function startWorker(env: Record<string, string>, opts: { onLine?: (line: string) => void } = {}): Promise<ManagedProcess> {
  let ready = false;
  // `node <entry>` (not the tsx launcher): the spawned pid is the worker itself, so SIGKILL really
  // kills it instead of orphaning a child that keeps polling.
  const spawned = Date.now();
  const proc = spawnManaged('worker', process.execPath, entryArgs(join(ROOT, 'workers', 'main.ts')), {
    env: { ...process.env, ...env },
    cwd: ROOT,
    log: (line) => {
      opts.onLine?.(line);
      if (line.includes('worker ready')) ready = true;
      if (process.env.TEST_WORKER_LOGS) process.stderr.write(`[worker] ${line}\n`);
    },
  });
  await waitUntil('worker ready', async () => ready, { timeoutMs: 60_000, intervalMs: 50, process: proc });
  recordSpawnTime('worker', Date.now() - spawned);
  return proc;
}

/**
 * The metrics URL a worker names on its 'worker metrics' line. Tests give the worker
 * WORKER_METRICS_ADDRESS=127.0.0.1:0: it binds a free port itself (no port picked here that another
 * process could take before the worker binds it) and says which.
 */
export function reportedMetricsUrl(line: string): string | undefined {
  const m = /"metricsAddress":"([^"]+)".*"msg":"worker metrics"/.exec(line);
  return m ? `http://${m[1]}/metrics` : undefined;
}

/** Appends a spawned process's time to ready to SPAWN_TIMES_FILE (scripts/test-integration.js sums them up). */
export function recordSpawnTime(what: string, ms: number): void {
  if (process.env.SPAWN_TIMES_FILE) appendFileSync(process.env.SPAWN_TIMES_FILE, `${what} ${ms}\n`);
}

/**
 * A client of the stack's Temporal. With the environment of a worker that has PAYLOAD_CODEC_KEYS, it
 * seals and opens payloads with the same keys (as the API does), else it writes plain payloads.
 */
export async function connectTestTemporal(env: Record<string, string> = {}): Promise<Client> {
  const connection = await Connection.connect({ address: readStackInfo().temporalAddress });
  return new Client({ connection, dataConverter: testDataConverter(env) });
}

/** The payload codec of a test environment (its PAYLOAD_CODEC_KEYS), or none. */
export const testDataConverter = (env: Record<string, string | undefined>) =>
  temporalDataConverter({ PAYLOAD_CODEC_KEYS: env.PAYLOAD_CODEC_KEYS, production: false });
