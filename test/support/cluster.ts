import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { loadConfig } from '../../src/config';
import { connectTemporal } from '../../src/temporal/client';

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
  const server = process.env.CLUSTER_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/';
  const client = new PgClientCtor({ connectionString: new URL('postgres', server).toString() });
  await client.connect();
  try {
    for (const name of [database, `${database}_temporal`, `${database}_temporal_visibility`]) {
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}
