/**
 * `npm run cluster`: the topology of docker-compose.yml as local processes (README "The cluster"),
 * with the devnet chains and doubles of `npm start` (devnet/stack.ts):
 *   - the Temporal server (not the dev server), the version docker-compose.yml pins, built from its
 *     Go module; persistence and advanced visibility on PostgreSQL, CLUSTER_HISTORY_SHARDS (4) shards;
 *   - our database on the same PostgreSQL, Redis for the rate limits every API process shares;
 *   - two workers, each with its own relayer lanes, two API processes, the top-up gateway, the codec server;
 *   - the Temporal UI on TEMPORAL_UI_URL (the UI server of the version `npm start`'s CLI embeds),
 *     read-only, decoding payloads through the codec server behind a devnet stand-in for the
 *     operator's authenticating proxy (devnet/codec-proxy.ts, CODEC_SERVER_PORT + 1).
 * PostgreSQL and Redis are the machine's own: CLUSTER_POSTGRES_URL (default
 * postgresql://postgres@127.0.0.1:5432/, trust authentication) and CLUSTER_REDIS_URL (default
 * redis://127.0.0.1:6379). Databases: x402_cluster (ours), x402_cluster_temporal and
 * x402_cluster_temporal_visibility, named after CLUSTER_DATABASE (default x402_cluster); chain state,
 * secrets and `processes.json` (each process's pid) in CLUSTER_DATA_DIR (default .data/cluster).
 * A worker or API process that ends is reported and the others keep running.
 */
import path from 'node:path';
import { privateKeyToAddress } from 'viem/accounts';
import { startTemporalClusterServer } from '../temporal/cluster-server';
import { startClusterUi } from '../temporal/cluster-ui';
import { TEMPORAL_SERVER } from '../tools/go-tools';
import { startCodecProxy } from './codec-proxy';
import { anvilAccount } from './demo-accounts';
import { repoRoot } from './process';
import { runStack } from './stack';

const DATA_DIR = process.env.CLUSTER_DATA_DIR ?? '.data/cluster';
const DATABASE = process.env.CLUSTER_DATABASE ?? 'x402_cluster';
const postgres = new URL(process.env.CLUSTER_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/');
const historyShards = Number(process.env.CLUSTER_HISTORY_SHARDS ?? 4);
const database = (name: string) => Object.assign(new URL(postgres.href), { pathname: `/${name}` }).href;

// Worker 1: the devnet relayer (anvil #1, every role's key as in `npm start`) and #2 as its lanes.
// Worker 2: its own lanes (#3, #4); the revenue wallet and the top-up relayer are one wallet each,
// whose key every worker holds (docker-compose.yml: one worker service per key set).
const roleKey = anvilAccount(1);
const lanes = (...indexes: number[]) => indexes.map((i) => anvilAccount(i).privateKey).join(',');
const workers: { name: string; env: Record<string, string> }[] = [
  { name: 'worker-1', env: { RELAYER_PRIVATE_KEY: roleKey.privateKey, RELAYER_PRIVATE_KEYS: lanes(1, 2) } },
  {
    name: 'worker-2',
    env: {
      RELAYER_PRIVATE_KEY: anvilAccount(3).privateKey,
      RELAYER_PRIVATE_KEYS: lanes(3, 4),
      REVENUE_WALLET_PRIVATE_KEY: roleKey.privateKey,
      INFERENCE_REVENUE_WALLET: privateKeyToAddress(roleKey.privateKey),
      TOPUP_RELAYER_PRIVATE_KEY: roleKey.privateKey,
      TOPUP_RELAYER_ADDRESS: privateKeyToAddress(roleKey.privateKey),
    },
  },
];

runStack({
  command: 'npm run cluster',
  dataDir: DATA_DIR,
  env: {
    DATABASE_URL: database(DATABASE),
    REDIS_URL: process.env.CLUSTER_REDIS_URL ?? 'redis://127.0.0.1:6379',
  },
  startTemporal: (config, log) =>
    startTemporalClusterServer({
      postgresUrl: postgres.href,
      databasePrefix: `${DATABASE}_temporal`,
      historyShards,
      dir: path.resolve(repoRoot(), DATA_DIR, 'temporal'),
      port: Number(config.TEMPORAL_ADDRESS.split(':').pop()),
      namespace: config.TEMPORAL_NAMESPACE,
      log,
    }),
  temporalKind: `Temporal server ${TEMPORAL_SERVER.version} on PostgreSQL, ${historyShards} history shards, advanced visibility on PostgreSQL`,
  startUi: async (config, codec, log) => {
    const proxy = await startCodecProxy({ port: config.CODEC_SERVER_PORT + 1, codecServer: codec.url, token: codec.token });
    try {
      const ui = await startClusterUi({
        temporalAddress: config.TEMPORAL_ADDRESS,
        url: config.TEMPORAL_UI_URL,
        namespace: config.TEMPORAL_NAMESPACE,
        codecEndpoint: proxy.url,
        dir: path.resolve(repoRoot(), DATA_DIR, 'temporal-ui'),
        log,
      });
      return { ...ui, stop: () => Promise.all([ui.stop(), proxy.stop()]).then(() => undefined) };
    } catch (err) {
      await proxy.stop();
      throw err;
    }
  },
  workers,
  appsMayEnd: true,
  apis: (config) => [
    { name: 'api-1', port: config.PORT },
    { name: 'api-2', port: config.PORT + 10 },
  ],
});
