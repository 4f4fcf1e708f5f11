/**
 * The Temporal server as a cluster runs it (`npm run cluster`): the server binary of the version
 * docker-compose.yml pins (tools/go-tools.ts TEMPORAL_SERVER), persistence and advanced visibility on
 * PostgreSQL, several history shards. Its two databases are created and brought to the version's
 * schema by Temporal's own SQL tool (temporal-sql-tool, the schemas embedded in it), as
 * temporalio/auto-setup does; the namespace is registered once it serves.
 */
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { prefixedStderr, spawnManaged, waitUntil, type LogFn } from '../devnet/process';
import { registerSearchAttributes } from '../src/temporal/search-attributes';
import { TEMPORAL_SERVER, cachedGoToolPath, ensureGoTool } from '../tools/go-tools';
import { connectWhenServing, type DevServer } from './dev-server';
import { LOW_LATENCY_DYNAMIC_CONFIG } from './dynamic-config';

const run = promisify(execFile);
const HOST = '127.0.0.1';

export interface ClusterServerOptions {
  /** PostgreSQL server, e.g. postgresql://postgres@127.0.0.1:5432/ (its path is ignored). */
  postgresUrl: string;
  /** Prefix of the two databases: `<prefix>` (executions) and `<prefix>_visibility`. */
  databasePrefix: string;
  /** History shards: fixed when the database is first set up (the server refuses another count later). */
  historyShards: number;
  /** Where the server's config files go. */
  dir: string;
  /** Frontend gRPC port; the other services take the next ports (see `ports`). */
  port: number;
  namespace?: string;
  log?: LogFn;
  /** Default 120 s: a first start creates the schemas. */
  readyTimeoutMs?: number;
}

/** The running server; `DevServer`'s shape, so whatever starts one can start the other. */
export type ClusterServer = DevServer & {
  historyShards: number;
  /**
   * Stops and starts the server process again on the same databases (chaos, restart tests): with
   * `kill`, SIGKILL (no shutdown at all) and `downMs` before the new start.
   */
  restart(o?: { kill?: boolean; downMs?: number }): Promise<void>;
};

/** Frontend, history, matching and worker gRPC ports and their membership ports, from the frontend's. */
export function clusterServerPorts(frontend: number) {
  return {
    frontend: { grpc: frontend, membership: frontend + 100, http: frontend + 10 },
    history: { grpc: frontend + 1, membership: frontend + 101 },
    matching: { grpc: frontend + 2, membership: frontend + 102 },
    worker: { grpc: frontend + 6, membership: frontend + 106 },
    metrics: frontend + 767, // 8000 for 7233, as in Temporal's development configs
    pprof: frontend - 1297, // 5936 for 7233
  };
}

/**
 * The server's static config (Temporal's config/development-postgres12.yaml, with our ports, databases
 * and shards). Each of its four services has its own pools: with that file's 20 + 10 connections the
 * idle server held 57 of PostgreSQL's default 100 (max_connections), so a second cluster run or a
 * test database beside it was refused ("too many clients"); 8 + 4 serve 4 shards on a small machine.
 */
function serverConfig(o: ClusterServerOptions, url: URL): string {
  const p = clusterServerPorts(o.port);
  const store = (database: string, maxConns: number) => `
      sql:
        pluginName: postgres12
        databaseName: ${database}
        connectAddr: "${url.hostname}:${url.port || 5432}"
        connectProtocol: tcp
        user: ${JSON.stringify(decodeURIComponent(url.username) || 'postgres')}
        password: ${JSON.stringify(decodeURIComponent(url.password))}
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: 1h`;
  const service = (name: keyof ReturnType<typeof clusterServerPorts>) => {
    const s = p[name] as { grpc: number; membership: number; http?: number };
    return `  ${name}:
    rpc:
      grpcPort: ${s.grpc}
      membershipPort: ${s.membership}
      bindOnLocalHost: true${s.http ? `\n      httpPort: ${s.http}` : ''}`;
  };
  return `# Written by temporal/cluster-server.ts for npm run cluster; rewritten at every start.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${o.historyShards}
  datastores:
    default:${store(o.databasePrefix, 8)}
    visibility:${store(`${o.databasePrefix}_visibility`, 4)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "${HOST}"
  pprof:
    port: ${p.pprof}
  metrics:
    prometheus:
      framework: tally
      timerType: histogram
      listenAddress: "${HOST}:${p.metrics}"
services:
${service('frontend')}
${service('history')}
${service('matching')}
${service('worker')}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "${HOST}:${o.port}"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: ${JSON.stringify(path.join(o.dir, 'dynamicconfig.yaml'))}
  pollInterval: 10s
`;
}

/** The same low-latency values as the dev server and docker-compose.yml (./dynamic-config.ts). */
function dynamicConfig(): string {
  return Object.entries(LOW_LATENCY_DYNAMIC_CONFIG)
    .map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}\n    constraints: {}\n`)
    .join('');
}

/**
 * Creates `database` if needed and brings it to the newest embedded schema `schema`
 * (postgresql/v12/temporal or postgresql/v12/visibility). Idempotent, as auto-setup's steps are.
 */
async function setUpSchema(sqlTool: string, url: URL, database: string, schema: string, log: LogFn): Promise<void> {
  const conn = [
    '--plugin',
    'postgres12',
    '--endpoint',
    url.hostname,
    '--port',
    url.port || '5432',
    '--user',
    decodeURIComponent(url.username) || 'postgres',
    ...(url.password ? ['--password', decodeURIComponent(url.password)] : []),
    '--database',
    database,
  ];
  const tool = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await run(sqlTool, [...conn, ...args]);
      return `${stdout}${stderr}`;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      throw new Error(
        `temporal-sql-tool ${args[0]} (${database}) failed: ${(e.stderr || e.stdout || e.message).trim().split('\n').slice(-3).join(' | ')}`,
        { cause: err },
      );
    }
  };
  // create-database fails when it exists: that is the state we want.
  await tool('create-database').catch((err: Error) => {
    if (!/already exists/.test(err.message)) throw err;
  });
  // Version 0.0 creates only the version table (a no-op when present); update-schema then applies every
  // versioned step the database lacks, so a later server version upgrades the same databases.
  await tool('setup-schema', '--version', '0.0');
  const out = await tool('update-schema', '--schema-name', schema);
  log(`schema ${schema} on ${database}: ${/found zero updates/.test(out) ? 'up to date' : 'updated'}`);
}

export async function startTemporalClusterServer(opts: ClusterServerOptions): Promise<ClusterServer> {
  const log = opts.log ?? prefixedStderr('temporal');
  const namespace = opts.namespace ?? 'default';
  const server = await ensureGoTool(TEMPORAL_SERVER);
  const sqlTool = cachedGoToolPath(TEMPORAL_SERVER, 'temporal-sql-tool');
  const url = new URL(opts.postgresUrl);
  await setUpSchema(sqlTool, url, opts.databasePrefix, 'postgresql/v12/temporal', log);
  await setUpSchema(sqlTool, url, `${opts.databasePrefix}_visibility`, 'postgresql/v12/visibility', log);

  const configDir = path.join(opts.dir, 'config');
  await fs.mkdir(configDir, { recursive: true });
  await fs.writeFile(path.join(configDir, 'cluster.yaml'), serverConfig(opts, url));
  await fs.writeFile(path.join(opts.dir, 'dynamicconfig.yaml'), dynamicConfig());
  const address = `${HOST}:${opts.port}`;

  let proc: ReturnType<typeof spawnManaged> | undefined;
  let stopping = false;
  const start = async () => {
    stopping = false;
    proc = spawnManaged('temporal', server, ['--root', opts.dir, '--config', 'config', '--env', 'cluster', '--allow-no-auth', 'start'], {
      log: (line) => stopping || log(line),
    });
    const connection = await connectWhenServing(
      `the Temporal server at ${address} to serve`,
      address,
      (c) => c.workflowService.getSystemInfo({}),
      { timeoutMs: opts.readyTimeoutMs ?? 120_000, process: proc },
    );
    try {
      await registerNamespace(connection, namespace);
      await registerSearchAttributes(connection, namespace);
    } finally {
      await connection.close();
    }
  };
  const stop = async () => {
    stopping = true;
    await proc?.stop({ signal: 'SIGINT', timeoutMs: 15_000 });
  };
  try {
    await start();
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    address,
    namespace,
    historyShards: opts.historyShards,
    get pid() {
      return proc!.child.pid!;
    },
    stop,
    restart: async (o = {}) => {
      if (o.kill && proc && !proc.hasExited) {
        stopping = true;
        proc.child.kill('SIGKILL');
      }
      await stop(); // after a SIGKILL: only waits for the exit
      if (o.downMs) await new Promise((r) => setTimeout(r, o.downMs));
      await start();
    },
  };
}

/** Registers the namespace (72 h retention) unless it exists, then waits until the frontend serves it. */
async function registerNamespace(connection: Connection, namespace: string): Promise<void> {
  try {
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('72h') });
  } catch (err) {
    if ((err as { code?: number }).code !== 6) throw err; // ALREADY_EXISTS
  }
  // The frontend caches namespaces and refreshes them every few seconds.
  await waitUntil(
    `namespace ${namespace}`,
    async () => {
      await connection.workflowService.describeNamespace({ namespace });
      return true;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
}
