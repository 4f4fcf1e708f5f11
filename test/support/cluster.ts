import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { clusterDatabaseUrl, temporalDatabases } from '../../devnet/cluster-plan';
import { waitUntil } from '../../devnet/process';
import { loadConfig } from '../../src/config';
import { connectTemporal } from '../../src/temporal/client';
import { request, signIn, type JsonResponse } from './http';

/** What the cluster project's global setup tells the test files (the file named by this variable). */
export const CLUSTER_INFO_ENV = 'X402_CLUSTER_INFO';

export interface ClusterInfo {
  /** npm run cluster's data folder: secrets, chain state, processes.json. */
  dataDir: string;
  /** Its database name (and the prefix of Temporal's two). */
  database: string;
}

export function readClusterInfo(): ClusterInfo {
  const file = process.env[CLUSTER_INFO_ENV];
  if (!file) throw new Error(`${CLUSTER_INFO_ENV} is not set: run these tests with npm run test:cluster`);
  return JSON.parse(readFileSync(file, 'utf8')) as ClusterInfo;
}

/** The pid of each process of the cluster by name (api-1, api-2, worker-1, worker-2, temporal, ...). */
export function clusterPids(info: ClusterInfo): Record<string, number> {
  return JSON.parse(readFileSync(join(info.dataDir, 'processes.json'), 'utf8')) as Record<string, number>;
}

/** A Temporal client to the cluster's server with its payload codec key, as `npm run ops` connects. */
export function connectClusterTemporal(info: ClusterInfo): Promise<Client> {
  const keys = readFileSync(join(info.dataDir, 'payload-codec-keys'), 'utf8').trim();
  return connectTemporal(loadConfig({ PAYLOAD_CODEC_KEYS: keys }));
}

/** The cluster's two API processes (devnet/cluster.ts). */
export const API_1 = 'http://localhost:4021';
export const API_2 = 'http://localhost:4031';

/** A seller on the cluster: a fresh organization paying out to `payout`, and its test API key. */
export interface ClusterSeller {
  apiKey: string;
  settle(api: string, body: unknown, headers?: Record<string, string>): Promise<JsonResponse>;
  /** Repeats the request while it is pending (202), as a seller does; the cluster answers pending after SETTLE_WAIT_MS (1.5 s). */
  settleUntilFinal(api: string, body: unknown): Promise<JsonResponse>;
}

/**
 * Signs a fresh organization in on api-1 and makes its API key on `keyOn` (default api-2: one database,
 * one session secret). A file that runs after settle.test.ts, which SIGKILLs api-2, passes api-1.
 */
export async function newClusterSeller(payout: Address, keyOn: string = API_2): Promise<ClusterSeller> {
  const cookie = await signIn(API_1, privateKeyToAccount(generatePrivateKey()));
  const patched = await request('PATCH', `${API_1}/v1/organization`, { cookie, json: { payoutWalletTest: payout } });
  if (patched.status !== 200) throw new Error(`PATCH /v1/organization: ${patched.status} ${JSON.stringify(patched.body)}`);
  const key = await request('POST', `${keyOn}/v1/api_keys`, { cookie, json: { name: 'cluster test', test_net: true } });
  if (key.status !== 201) throw new Error(`POST /v1/api_keys: ${key.status} ${JSON.stringify(key.body)}`);
  const apiKey = key.body.api_key as string;
  const settle = (api: string, body: unknown, headers: Record<string, string> = {}) =>
    request('POST', `${api}/v1/settle`, { json: body, headers: { authorization: `Bearer ${apiKey}`, ...headers } });
  return {
    apiKey,
    settle,
    settleUntilFinal: (api, body) =>
      waitUntil(
        'the settlement to be final',
        async () => {
          const res = await settle(api, body);
          return res.status === 202 ? undefined : res;
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      ),
  };
}

// `pg` ships without types here (as in ./db.ts); this is the sliver we use.
interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- pg ships no types here; only this narrow shape is used
const { Client: PgClientCtor } = require('pg') as { Client: new (opts: { connectionString: string }) => PgClient };

/** Drops the cluster's database and Temporal's two (the server must be stopped). */
export async function dropClusterDatabases(database: string): Promise<void> {
  const client = new PgClientCtor({ connectionString: clusterDatabaseUrl('postgres') });
  await client.connect();
  try {
    for (const name of [database, ...temporalDatabases(database)]) {
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}
