/**
 * Small helpers for the local stack's child processes (Temporal dev server, anvil, doubles):
 * spawn with prefixed logs, wait for readiness with a deadline, stop gracefully, pick free ports.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';

export type LogFn = (line: string) => void;

/** Default logger: `[name] line` on stderr (stdout stays free for a script's real output). */
export function prefixedStderr(name: string): LogFn {
  return (line) => process.stderr.write(`[${name}] ${line}\n`);
}

/** The repository root: the nearest directory above this file holding a package.json (works from dist/ too). */
export function repoRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${__dirname}`);
    dir = parent;
  }
  return dir;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be spawned at all (e.g. ENOENT). */
  error?: Error;
}

export interface StopOptions {
  /** First signal; SIGINT lets anvil dump state and Temporal shut down cleanly. */
  signal?: NodeJS.Signals;
  /** How long to wait after the first signal before SIGKILL. */
  timeoutMs?: number;
}

export interface ManagedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Resolves (never rejects) when the process has exited. */
  readonly exited: Promise<ExitInfo>;
  /** True once the process has exited. */
  readonly hasExited: boolean;
  /** The last lines of output, to explain a failed start. */
  recentOutput(): string;
  /** Signal, wait, then SIGKILL if needed. Safe to call more than once. */
  stop(opts?: StopOptions): Promise<ExitInfo>;
}

// Children still running when this Node process exits get SIGTERM, so a crashed test run or script
// does not leave orphans holding ports (SIGTERM, not SIGKILL, so anvil can still dump its state).
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function trackForExit(child: ChildProcess): void {
  live.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of live) c.kill('SIGTERM');
    });
  }
}

const RECENT_LINES = 40;

/**
 * Node's arguments to run a TypeScript entry point in-process (`node --import tsx <script>`: the
 * spawned pid is the process itself, so a kill reaches it), or, when SERVICE_DIST_DIR is set, its
 * compiled JavaScript there with the image's NODE_OPTIONS (`node <flags> <dir>/<script>.js`, as the
 * Docker image runs the service): the benches compile with tsc, the integration tests with swc
 * (scripts/compile-service.js). V8 CPU profiles are written to BENCH_CPU_PROF when that is set
 * (bench/README.md).
 */
export function entryArgs(script: string): string[] {
  const prof = process.env.BENCH_CPU_PROF;
  const dist = process.env.SERVICE_DIST_DIR;
  const profiling = prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [];
  if (dist) return [...profiling, ...imageNodeOptions(), path.join(dist, path.relative(repoRoot(), script)).replace(/\.ts$/, '.js')];
  return [...profiling, '--import', 'tsx', script];
}

/** The Docker image's NODE_OPTIONS (its heap flags), so the compiled service runs here as it does there. */
function imageNodeOptions(): string[] {
  const line = /^ENV NODE_OPTIONS="([^"]*)"/m.exec(readFileSync(path.join(repoRoot(), 'Dockerfile'), 'utf8'));
  return line ? line[1].split(/\s+/).filter(Boolean) : [];
}

/** Spawns `command args`, sends every output line to `log` and remembers the last few for errors. */
export function spawnManaged(
  name: string,
  command: string,
  args: readonly string[],
  opts: { log?: LogFn; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): ManagedProcess {
  const log = opts.log ?? prefixedStderr(name);
  const recent: string[] = [];
  const child = spawn(command, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackForExit(child);

  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      recent.push(line);
      if (recent.length > RECENT_LINES) recent.shift();
      log(line);
    });
  }

  let hasExited = false;
  const exited = new Promise<ExitInfo>((resolve) => {
    const done = (info: ExitInfo) => {
      hasExited = true;
      live.delete(child);
      resolve(info);
    };
    child.once('exit', (code, signal) => done({ code, signal }));
    child.once('error', (error) => done({ code: null, signal: null, error }));
  });

  const managed: ManagedProcess = {
    name,
    child,
    exited,
    get hasExited() {
      return hasExited;
    },
    recentOutput: () => recent.join('\n'),
    stop: (stopOpts) => stopProcess(managed, stopOpts),
  };
  return managed;
}

/** Sends `signal` (default SIGINT), waits up to `timeoutMs` (default 10 s), then SIGKILLs. */
export async function stopProcess(proc: ManagedProcess, opts: StopOptions = {}): Promise<ExitInfo> {
  const { signal = 'SIGINT', timeoutMs = 10_000 } = opts;
  if (proc.hasExited) return proc.exited;
  proc.child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const first = await Promise.race([proc.exited, timedOut]);
  clearTimeout(timer);
  if (first !== 'timeout') return first;
  proc.child.kill('SIGKILL');
  return proc.exited;
}

export function describeExit(info: ExitInfo): string {
  if (info.error) return `failed to start: ${info.error.message}`;
  return info.signal ? `killed by ${info.signal}` : `exited with code ${info.code}`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface WaitOptions {
  timeoutMs: number;
  /** Pause between probes; default 100 ms. */
  intervalMs?: number;
  /** Give up at once (with its output) if this process exits while we wait. */
  process?: ManagedProcess;
}

/**
 * Calls `probe` until it returns a value other than undefined/false, a deadline passes, or the watched
 * process exits. A probe that throws counts as "not yet"; its last error goes into the timeout message.
 * Probes must bound their own duration (connect timeouts); this only checks the deadline between them.
 */
export async function waitUntil<T>(what: string, probe: () => Promise<T | undefined | false>, opts: WaitOptions): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  const interval = opts.intervalMs ?? 100;
  let lastError: unknown;
  for (;;) {
    if (opts.process?.hasExited) {
      const info = await opts.process.exited;
      throw new Error(`${opts.process.name} ${describeExit(info)} while waiting for ${what}\n${opts.process.recentOutput()}`);
    }
    try {
      const result = await probe();
      if (result !== undefined && result !== false) return result;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const cause = lastError instanceof Error ? `: ${lastError.message}` : '';
      const output = opts.process ? `\n${opts.process.recentOutput()}` : '';
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${what}${cause}${output}`);
    }
    await sleep(interval);
  }
}

/** Resolves true if a TCP connection to host:port succeeds within `timeoutMs`. */
export function canConnect(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

export function waitForPort(host: string, port: number, opts: WaitOptions): Promise<true> {
  return waitUntil(`${host}:${port} to accept connections`, () => canConnect(host, port), opts);
}

/** Waits until `url` answers with a status `accept` likes (default: any 2xx). */
export function waitForHttp(
  url: string,
  opts: WaitOptions & { init?: RequestInit; accept?: (res: Response) => boolean | Promise<boolean> },
): Promise<Response> {
  const accept = opts.accept ?? ((res: Response) => res.ok);
  return waitUntil(
    `${url} to answer`,
    async () => {
      const res = await fetch(url, { ...opts.init, signal: AbortSignal.timeout(2000) });
      return (await accept(res)) ? res : undefined;
    },
    opts,
  );
}

/**
 * Runs `start` again (up to `attempts` times) when it fails because a port was taken between choosing
 * it and binding it: findFreePort is racy, and the Temporal dev server also picks internal ports itself.
 * Relies on the failure message quoting the process output (waitUntil does).
 */
export async function retryOnPortClash<T>(start: () => Promise<T>, log: LogFn, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts || !/already in use/i.test(String((err as Error)?.message))) throw err;
      log(`port already in use, retrying (attempt ${attempt + 1} of ${attempts})`);
    }
  }
}

/**
 * A port that was free a moment ago (the OS picks it). Another process can still take it before the
 * caller binds, so callers that spawn a server should treat "address in use" as retryable.
 */
export function findFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0 }, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
