/**
 * `npm run cluster`: the topology of docker-compose.yml as local processes (README "The cluster"),
 * with the devnet chains and doubles of `npm start` (devnet/stack.ts):
 *   - the Temporal server (not the dev server), the version docker-compose.yml pins, built from its
 *     Go module; persistence and advanced visibility on PostgreSQL, CLUSTER_HISTORY_SHARDS (4) shards;
 *   - our database on the same PostgreSQL, Redis for the rate limits every API process shares;
 *   - two workers, each with its own relayer lanes and the same role keys (devnet/cluster-plan.ts), two
 *     API processes, the top-up gateway, the codec server;
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
import { TEMPORAL_SERVER } from '../tools/go-tools';
import { startClusterUi } from '../temporal/cluster-ui';
import { CLUSTER_WORKERS, clusterDatabaseUrl, clusterHistoryShards, startClusterTemporal } from './cluster-plan';
import { startCodecProxy } from './codec-proxy';
import { repoRoot } from './process';
import { runStack } from './stack';

const DATA_DIR = process.env.CLUSTER_DATA_DIR ?? '.data/cluster';
const DATABASE = process.env.CLUSTER_DATABASE ?? 'x402_cluster';

runStack({
  command: 'npm run cluster',
  dataDir: DATA_DIR,
  env: {
    DATABASE_URL: clusterDatabaseUrl(DATABASE),
    REDIS_URL: process.env.CLUSTER_REDIS_URL ?? 'redis://127.0.0.1:6379',
  },
  startTemporal: (config, log) =>
    startClusterTemporal({
      database: DATABASE,
      dir: path.resolve(repoRoot(), DATA_DIR, 'temporal'),
      port: Number(config.TEMPORAL_ADDRESS.split(':').pop()),
      namespace: config.TEMPORAL_NAMESPACE,
      log,
    }),
  temporalKind: `Temporal server ${TEMPORAL_SERVER.version} on PostgreSQL, ${clusterHistoryShards()} history shards, advanced visibility on PostgreSQL`,
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
  workers: CLUSTER_WORKERS,
  appsMayEnd: true,
  apis: (config) => [
    { name: 'api-1', port: config.PORT },
    { name: 'api-2', port: config.PORT + 10 },
  ],
});
