/**
 * Runs the real Temporal server via `temporal server start-dev` (SQLite, optional UI) for `npm start`
 * and the integration tests, and waits until it really serves the namespace.
 */
import { Connection } from '@temporalio/client';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import {
  findFreePort,
  prefixedStderr,
  retryOnPortClash,
  spawnManaged,
  waitUntil,
  type LogFn,
  type ManagedProcess,
} from '../devnet/process';
import { ensureTemporalCli } from './cli';
import { registerSearchAttributes, searchAttributeCliFlags } from '../src/temporal/search-attributes';
import { LOW_LATENCY_DYNAMIC_CONFIG } from './dynamic-config';

export interface DevServerOptions {
  /** SQLite file that keeps workflows across restarts; undefined = in memory. */
  dbFile?: string;
  /** Frontend gRPC port; default: a free port. */
  port?: number;
  /** Web UI port; default: a free port; false = headless. */
  uiPort?: number | false;
  /** Namespace to create and wait for; default `default`. */
  namespace?: string;
  log?: LogFn;
  /** `--dynamic-config-value KEY=JSON` settings over LOW_LATENCY_DYNAMIC_CONFIG (./dynamic-config.ts). */
  dynamicConfig?: Record<string, unknown>;
  /** Server log level; default warn. */
  logLevel?: 'debug' | 'info' | 'warn' | 'error' | 'never';
  /** Default 60 s, generous: ready takes about 1 s on 2 cores when idle, far more under a loaded test run. */
  readyTimeoutMs?: number;
  /** CLI binary; default ensureTemporalCli(). */
  cliPath?: string;
}

export interface DevServer {
  /** host:port for `Connection.connect({ address })`. */
  address: string;
  namespace: string;
  uiUrl?: string;
  pid: number;
  /** SIGINT, then SIGKILL after 15 s. Safe to call twice. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';

/** The `temporal server start-dev ...` arguments (exported so scripts can print the command). */
export function devServerArgs(o: {
  port: number;
  uiPort: number | false;
  namespace: string;
  dbFile?: string;
  logLevel: string;
  dynamicConfig: Record<string, unknown>;
}): string[] {
  const args = ['server', 'start-dev', '--ip', HOST, '--port', String(o.port)];
  args.push(...(o.uiPort === false ? ['--headless'] : ['--ui-port', String(o.uiPort)]));
  if (o.dbFile) args.push('--db-filename', o.dbFile);
  // "default" is always created; passing it again would only duplicate work.
  if (o.namespace !== 'default') args.push('--namespace', o.namespace);
  args.push('--log-level', o.logLevel);
  args.push(...searchAttributeCliFlags());
  for (const [key, value] of Object.entries(o.dynamicConfig)) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }
  return args;
}

export async function startTemporalDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const log = opts.log ?? prefixedStderr('temporal');
  // The CLI build keeps its own stderr progress even when the caller silences the server's log:
  // a silent multi-minute build would look like a hang.
  const cli = opts.cliPath ?? (await ensureTemporalCli());
  if (opts.dbFile) await fs.mkdir(path.dirname(path.resolve(opts.dbFile)), { recursive: true });
  return retryOnPortClash(() => startOnce(cli, opts, log), log);
}

async function startOnce(cli: string, opts: DevServerOptions, log: LogFn): Promise<DevServer> {
  const namespace = opts.namespace ?? 'default';
  const port = opts.port ?? (await findFreePort(HOST));
  const uiPort = opts.uiPort === false ? false : (opts.uiPort ?? (await findFreePort(HOST)));
  // Update-with-start and updates need frontend.enableUpdateWorkflowExecution and
  // frontend.enableExecuteMultiOperation, both already true by default in server 1.29.1 (CLI v1.5.1),
  // so nothing is forced for them. The low-latency settings are (see dynamic-config.ts).
  const args = devServerArgs({
    port,
    uiPort,
    namespace,
    dbFile: opts.dbFile && path.resolve(opts.dbFile),
    logLevel: opts.logLevel ?? 'warn',
    dynamicConfig: { ...LOW_LATENCY_DYNAMIC_CONFIG, ...opts.dynamicConfig },
  });
  const address = `${HOST}:${port}`;
  // Shutting down, the server warns about every connection it closes; that is noise, not news.
  let stopping = false;
  const proc = spawnManaged('temporal', cli, args, { log: (line) => stopping || log(line) });
  const stop = async () => {
    stopping = true;
    await proc.stop({ signal: 'SIGINT', timeoutMs: 15_000 });
  };

  try {
    const connection = await connectWhenServing(
      `Temporal at ${address} to serve namespace ${namespace}`,
      address,
      (c) => c.workflowService.describeNamespace({ namespace }),
      { timeoutMs: opts.readyTimeoutMs ?? 60_000, process: proc },
    );
    try {
      // start-dev registers --search-attribute only when it creates the namespace, so a SQLite file
      // from an older version of this project would lack newer attributes.
      await registerSearchAttributes(connection, namespace);
    } finally {
      await connection.close();
    }
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    address,
    namespace,
    uiUrl: uiPort === false ? undefined : `http://${HOST}:${uiPort}`,
    pid: proc.child.pid!,
    stop,
  };
}

/** A connection to the Temporal server at `address` once `probe` answers on it (tried every 250 ms). */
export function connectWhenServing(
  what: string,
  address: string,
  probe: (connection: Connection) => Promise<unknown>,
  opts: { timeoutMs: number; process: ManagedProcess },
): Promise<Connection> {
  return waitUntil(
    what,
    async () => {
      const connection = await Connection.connect({ address, connectTimeout: '2s' });
      try {
        await probe(connection);
        return connection;
      } catch (err) {
        await connection.close();
        throw err;
      }
    },
    { timeoutMs: opts.timeoutMs, intervalMs: 250, process: opts.process },
  );
}
