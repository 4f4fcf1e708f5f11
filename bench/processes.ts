/**
 * The service processes of the settlement benchmark: the API and the floor worker as real processes
 * (like workers/main.ts, which test/support/services.ts starts), so their CPU and memory can be read
 * from /proc apart from the load generator's.
 */
import { join } from 'node:path';
import {
  findFreePort,
  repoRoot,
  retryOnPortClash,
  spawnManaged,
  entryArgs,
  waitForHttp,
  waitUntil,
  type ManagedProcess,
} from '../devnet/process';
import { isAlive, processTree } from './proc';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A TypeScript entry point as its own process (devnet/process.ts entryArgs). */
function spawnTs(name: string, script: string, env: Record<string, string>, logs: boolean, onLine?: (line: string) => void) {
  return spawnManaged(name, process.execPath, entryArgs(join(repoRoot(), script)), {
    env: { ...process.env, ...env },
    cwd: repoRoot(),
    log: (line) => {
      onLine?.(line);
      if (logs) process.stderr.write(`[${name}] ${line}\n`);
    },
  });
}

/**
 * The API (src/api/main.ts) on `port` (default: a free one, picked again if another process took it
 * before the API bound it); ready when GET /v1/supported answers.
 */
export async function spawnApi(
  env: Record<string, string>,
  logs: boolean,
  port?: number,
): Promise<{ proc: ManagedProcess; baseUrl: string }> {
  if (port === undefined)
    return retryOnPortClash(
      async () => spawnApiOn(env, logs, await findFreePort()),
      () => undefined,
    );
  return spawnApiOn(env, logs, port);
}

async function spawnApiOn(env: Record<string, string>, logs: boolean, port: number): Promise<{ proc: ManagedProcess; baseUrl: string }> {
  const baseUrl = `http://127.0.0.1:${port}`;
  // The bench is one client on 127.0.0.1 sending thousands of requests: no budget applies to it.
  const unlimited = { RATE_LIMIT_IP: '100000000', RATE_LIMIT_AUTH_IP: '100000000', RATE_LIMIT_KEY: '100000000' };
  const proc = spawnTs(
    'api',
    'src/api/main.ts',
    { ...unlimited, ...env, HOST: '127.0.0.1', PORT: String(port), PUBLIC_URL: baseUrl },
    logs,
  );
  await waitForHttp(`${baseUrl}/v1/supported`, { timeoutMs: 60_000, intervalMs: 100, process: proc });
  return { proc, baseUrl };
}

/**
 * The top-up gateway (src/topup/main.ts) on `port`; ready when its quote route answers (any status
 * below 500: a quote may be refused, the gateway is up).
 */
export async function spawnTopup(env: Record<string, string>, logs: boolean, port: number): Promise<{ proc: ManagedProcess; url: string }> {
  const url = `http://127.0.0.1:${port}`;
  const unlimited = { RATE_LIMIT_IP: '100000000', RATE_LIMIT_AUTH_IP: '100000000', RATE_LIMIT_KEY: '100000000' };
  const proc = spawnTs(
    'topup',
    'src/topup/main.ts',
    { ...unlimited, ...env, HOST: '127.0.0.1', TOPUP_PORT: String(port), TOPUP_URL: url },
    logs,
  );
  await waitForHttp(`${url}/healthz`, { timeoutMs: 60_000, intervalMs: 100, process: proc, accept: (res) => res.status < 600 });
  return { proc, url };
}

/** The orchestration floor's worker (bench/orchestration-floor/worker.ts); ready when it says so. */
export async function spawnFloorWorker(env: Record<string, string>, logs: boolean): Promise<ManagedProcess> {
  let ready = false;
  const proc = spawnTs('floor-worker', 'bench/orchestration-floor/worker.ts', env, logs, (line) => {
    if (line.includes('worker ready')) ready = true;
  });
  await waitUntil('floor worker ready', async () => ready, { timeoutMs: 60_000, intervalMs: 50, process: proc });
  return proc;
}

/**
 * Stops a process as a tree: SIGINT, wait, then SIGKILL whatever of its tree is left, by pid, so
 * a launcher killed on a slow shutdown can never orphan the real process.
 */
export async function stopTree(proc: ManagedProcess, timeoutMs = 20_000): Promise<void> {
  const tree = processTree(proc.child.pid!);
  await proc.stop({ signal: 'SIGINT', timeoutMs });
  const deadline = Date.now() + 5_000;
  while (tree.some(isAlive) && Date.now() < deadline) await sleep(100);
  for (const pid of tree.filter(isAlive).reverse()) process.kill(pid, 'SIGKILL');
  const killed = Date.now() + 5_000;
  while (tree.some(isAlive) && Date.now() < killed) await sleep(50);
}
