/**
 * What every run of the cluster topology shares (`npm run cluster`, `npm run chaos -- --cluster`,
 * `npm run bench:settle -- --cluster`): the Temporal server on PostgreSQL with CLUSTER_HISTORY_SHARDS
 * shards, and the workers' keys.
 *
 * Keys: each worker has its own settlement lanes (RELAYER_PRIVATE_KEYS), but the role keys are one
 * wallet each on every worker. The apps name those wallets by address (the API's RELAYER_ADDRESS is
 * the withdrawals' depositor, INFERENCE_REVENUE_WALLET the revenue wallet refunds come from, the
 * gateway's TOPUP_RELAYER_ADDRESS), and a withdrawal, refund or top-up may run on any worker: a worker
 * with another depositor key refuses the withdrawal. Two processes signing with one key are safe: a
 * nonce is recorded once (the unique (chain, signer, nonce) of relayer_transactions), and the loser
 * takes the next one.
 */
import type { Hex } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import { startTemporalClusterServer, clusterServerPorts, type ClusterServer } from '../temporal/cluster-server';
import { anvilAccount } from './demo-accounts';
import { canConnect, type LogFn } from './process';

/** History shards of a new cluster (fixed when its database is first set up). */
export const clusterHistoryShards = (): number => Number(process.env.CLUSTER_HISTORY_SHARDS ?? 4);

/** The PostgreSQL server (CLUSTER_POSTGRES_URL; default the machine's own, trust authentication). */
export const clusterPostgres = (): URL => new URL(process.env.CLUSTER_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/');

/** The URL of database `name` on the cluster's PostgreSQL server. */
export const clusterDatabaseUrl = (name: string): string => Object.assign(clusterPostgres(), { pathname: `/${name}` }).href;

/** Temporal's two databases for a cluster whose own database is `database`. */
export const temporalDatabases = (database: string): string[] => [`${database}_temporal`, `${database}_temporal_visibility`];

/** The Temporal server of a cluster whose own database is `database` (Temporal's are named after it). */
export function startClusterTemporal(o: {
  database: string;
  dir: string;
  port: number;
  namespace?: string;
  log?: LogFn;
}): Promise<ClusterServer> {
  return startTemporalClusterServer({
    postgresUrl: clusterPostgres().href,
    databasePrefix: temporalDatabases(o.database)[0]!,
    historyShards: clusterHistoryShards(),
    dir: o.dir,
    port: o.port,
    namespace: o.namespace,
    log: o.log,
  });
}

/**
 * A frontend port whose server's other ports (clusterServerPorts) are free too, for a run beside
 * `npm run cluster` (7233) and other runs: tried at random in 20000-29999.
 */
export async function freeClusterPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const p = clusterServerPorts(port);
    const all = [p.frontend.grpc, p.frontend.http, p.frontend.membership, p.history.grpc, p.history.membership, p.matching.grpc];
    all.push(p.matching.membership, p.worker.grpc, p.worker.membership, p.metrics, p.pprof);
    const busy = await Promise.all(all.map((q) => canConnect('127.0.0.1', q, 300)));
    if (!busy.some(Boolean)) return port;
  }
  throw new Error('no free set of Temporal server ports found in 20000-29999');
}

/** A worker of the cluster: its name and the variables that give it its keys. */
export interface ClusterWorker {
  name: string;
  env: Record<string, string>;
  /** Its settlement lanes' keys. */
  lanes: Hex[];
}

/** Workers `worker-1`, `worker-2`, ... each with its own lanes and the same role key (see the module comment). */
export function clusterWorkers(roleKey: Hex, laneSets: Hex[][]): ClusterWorker[] {
  const role = privateKeyToAddress(roleKey);
  return laneSets.map((lanes, i) => ({
    name: `worker-${i + 1}`,
    lanes,
    env: {
      RELAYER_PRIVATE_KEY: roleKey,
      RELAYER_PRIVATE_KEYS: lanes.join(','),
      REVENUE_WALLET_PRIVATE_KEY: roleKey,
      INFERENCE_REVENUE_WALLET: role,
      TOPUP_RELAYER_PRIVATE_KEY: roleKey,
      TOPUP_RELAYER_ADDRESS: role,
    },
  }));
}

/**
 * The cluster's two workers on anvil's test accounts: the role key #1 (the devnet relayer), lanes #1
 * and #2 for worker-1, #3 and #4 for worker-2 (each an allowed facilitator relayer).
 */
export const CLUSTER_WORKERS: ClusterWorker[] = clusterWorkers(anvilAccount(1).privateKey, [
  [anvilAccount(1).privateKey, anvilAccount(2).privateKey],
  [anvilAccount(3).privateKey, anvilAccount(4).privateKey],
]);
