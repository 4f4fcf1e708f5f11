/**
 * Finds the Temporal CLI (which embeds the dev server), building it once from Go modules if needed.
 * Order (DESIGN §3): $TEMPORAL_CLI, `temporal` on PATH, <repo>/.tools/bin/temporal, else build it
 * with temporal/build-cli.sh under a lock so concurrent callers (npm start, Jest) build only once.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { prefixedStderr, repoRoot, type LogFn } from '../devnet/process';

const BINARY = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** Where the project caches its own build. */
export function cachedTemporalCliPath(): string {
  return path.join(repoRoot(), '.tools', 'bin', BINARY);
}

/** The CLI if one exists already, without building. */
export function findTemporalCli(): string | undefined {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    // An explicit setting that is wrong is a configuration error, not a reason to build.
    if (!isExecutable(fromEnv)) throw new Error(`TEMPORAL_CLI=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const onPath = findOnPath(BINARY);
  if (onPath) return onPath;
  const cached = cachedTemporalCliPath();
  return isExecutable(cached) ? cached : undefined;
}

export async function ensureTemporalCli(opts: { log?: LogFn } = {}): Promise<string> {
  const found = findTemporalCli();
  if (found) return found;
  const log = opts.log ?? prefixedStderr('temporal-cli');
  const target = cachedTemporalCliPath();
  await withBuildLock(target, log, async () => {
    // Another process may have finished the build while we waited for the lock.
    if (!isExecutable(target)) await runBuildScript(log);
  });
  if (!isExecutable(target)) throw new Error(`the Temporal CLI build did not produce ${target}`);
  return target;
}

function runBuildScript(log: LogFn): Promise<void> {
  const script = path.join(repoRoot(), 'temporal', 'build-cli.sh');
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    // go prints one "go: downloading ..." line per module; pass everything through so a slow build
    // visibly makes progress.
    for (const stream of [child.stdout, child.stderr]) {
      let buffered = '';
      stream.on('data', (chunk: Buffer) => {
        const lines = (buffered + chunk.toString()).split('\n');
        buffered = lines.pop() ?? '';
        lines.forEach((line) => log(line));
      });
      stream.on('end', () => buffered && log(buffered));
    }
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) {
        log(`Temporal CLI ready after ${Math.round((Date.now() - started) / 1000)} s`);
        resolve();
      } else {
        reject(new Error(`${script} failed (${signal ?? `exit code ${code}`}); set TEMPORAL_CLI to an existing binary to skip the build`));
      }
    });
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A lock file beside the binary holding the builder's pid. Waiters poll it; a lock whose pid is dead
 * (builder crashed or was killed) is taken over. Builds take minutes, so polling once a second is fine.
 */
async function withBuildLock(target: string, log: LogFn, fn: () => Promise<void>): Promise<void> {
  const lockFile = `${target}.lock`;
  await fs.mkdir(path.dirname(target), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      const handle = await fs.open(lockFile, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number((await fs.readFile(lockFile, 'utf8').catch(() => '')).trim());
    // An empty lock is one being written, unless it stays empty (its writer died in between).
    const age = Date.now() - ((await fs.stat(lockFile).catch(() => undefined))?.mtimeMs ?? Date.now());
    if (holder ? !isAlive(holder) : age > 10_000) {
      log(`removing stale Temporal CLI build lock (holder ${holder || 'unknown'} is gone)`);
      await fs.rm(lockFile, { force: true });
      continue;
    }
    if (!announced) {
      log(`another process (${holder || 'unknown'}) is building the Temporal CLI; waiting for it`);
      announced = true;
    }
    await sleep(1000);
  }
  try {
    await fn();
  } finally {
    await fs.rm(lockFile, { force: true });
  }
}
