/**
 * One anvil (a real EVM node, npm package @foundry-rs/anvil) per devnet chain, started with the real
 * chain id of the network it stands for (DESIGN §3), optionally persisting its state in a file.
 */
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { canConnect, findFreePort, prefixedStderr, repoRoot, retryOnPortClash, spawnManaged, waitUntil, type LogFn } from './process';

export interface AnvilOptions {
  chainId: number;
  /** Default: a free port. */
  port?: number;
  /** Loaded on start if it exists, dumped on exit and every `stateIntervalSec`. */
  stateFile?: string;
  /** Periodic dump interval while running (default 5 s when stateFile is set), so a crash loses little. */
  stateIntervalSec?: number;
  /** Interval mining in seconds; default automine (one block per transaction). */
  blockTime?: number;
  /** Dev accounts from the default test mnemonic (default 10) and their ETH balance (default 10000). */
  accounts?: number;
  balance?: number;
  /** anvil logs every RPC call and transaction unless quiet; default true (errors are printed anyway). */
  quiet?: boolean;
  extraArgs?: string[];
  log?: LogFn;
  /** Default 30 s. */
  readyTimeoutMs?: number;
}

export interface Anvil {
  rpcUrl: string;
  port: number;
  chainId: number;
  pid: number;
  /** SIGINT and wait (anvil dumps its state on the way out), SIGKILL after 20 s. Safe to call twice. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';

/**
 * The native anvil binary. node_modules/.bin/anvil is a Node wrapper that spawns it; running the
 * binary directly saves a Node process per chain and means a SIGKILL reaches anvil itself instead of
 * orphaning it behind a killed wrapper. ANVIL_BIN overrides.
 */
export function anvilBinary(): string {
  if (process.env.ANVIL_BIN) return process.env.ANVIL_BIN;
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const exe = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  try {
    return require.resolve(`@foundry-rs/anvil-${process.platform}-${arch}/bin/${exe}`);
  } catch {
    const wrapper = path.join(repoRoot(), 'node_modules', '.bin', 'anvil');
    if (existsSync(wrapper)) return wrapper;
    throw new Error('anvil not found: run npm install (it comes with the @foundry-rs/anvil dev dependency)');
  }
}

/** One JSON-RPC call with a short timeout; throws on an RPC error. */
export async function rpc<T = unknown>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(2000),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

export async function startAnvil(opts: AnvilOptions): Promise<Anvil> {
  const log = opts.log ?? prefixedStderr(`anvil:${opts.chainId}`);
  if (opts.stateFile) await fs.mkdir(path.dirname(path.resolve(opts.stateFile)), { recursive: true });
  // A port we picked ourselves may be taken before anvil binds it; an explicit one is not retried.
  return retryOnPortClash(() => startOnce(opts, log), log, opts.port === undefined ? 3 : 1);
}

async function startOnce(opts: AnvilOptions, log: LogFn): Promise<Anvil> {
  const { chainId } = opts;
  const port = opts.port ?? (await findFreePort(HOST));
  // Fail clearly instead of mistaking another node on this port for ours.
  if (await canConnect(HOST, port)) throw new Error(`port ${port} is already in use; cannot start anvil for chain ${chainId}`);
  const args = ['--host', HOST, '--port', String(port), '--chain-id', String(chainId)];
  if (opts.quiet ?? true) args.push('--quiet');
  if (opts.accounts !== undefined) args.push('--accounts', String(opts.accounts));
  if (opts.balance !== undefined) args.push('--balance', String(opts.balance));
  if (opts.blockTime !== undefined) args.push('--block-time', String(opts.blockTime));
  if (opts.stateFile) {
    // --state = --load-state (when the file exists) + --dump-state on exit.
    args.push('--state', path.resolve(opts.stateFile), '--state-interval', String(opts.stateIntervalSec ?? 5));
  }
  args.push(...(opts.extraArgs ?? []));

  const rpcUrl = `http://${HOST}:${port}`;
  const proc = spawnManaged(`anvil:${chainId}`, anvilBinary(), args, { log });
  const stop = async () => {
    await proc.stop({ signal: 'SIGINT', timeoutMs: 20_000 });
  };

  try {
    // Checking the id (not just the port) also catches a stranger already listening on this port.
    const answered = await waitUntil(`anvil at ${rpcUrl} to answer eth_chainId`, () => rpc<string>(rpcUrl, 'eth_chainId'), {
      timeoutMs: opts.readyTimeoutMs ?? 30_000,
      intervalMs: 50,
      process: proc,
    });
    if (Number(answered) !== chainId) {
      throw new Error(`${rpcUrl} answered chain id ${Number(answered)}, expected ${chainId}`);
    }
  } catch (err) {
    await stop();
    throw err;
  }

  return { rpcUrl, port, chainId, pid: proc.child.pid!, stop };
}
