import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, spawnManaged, waitUntil } from '../../devnet/process';
import { CLUSTER_INFO_ENV, type ClusterInfo } from './cluster';

/**
 * `npm run test:cluster`: starts `npm run cluster` (devnet/cluster.ts) once for the run, on fresh
 * databases and a fresh data folder (new chains), and waits for its summary. The teardown stops it
 * with Ctrl-C's signal and drops the databases.
 */
export default async function clusterSetup(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'x402-cluster-'));
  const database = `x402_ct_${randomBytes(4).toString('hex')}`;
  let running = false;
  const quiet = !process.env.CLUSTER_LOG;
  const proc = spawnManaged('cluster', process.execPath, ['--import', 'tsx', 'devnet/cluster.ts'], {
    cwd: repoRoot(),
    env: {
      ...process.env,
      CLUSTER_DATA_DIR: dataDir,
      CLUSTER_DATABASE: database,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
      // The stuck scan test: a settlement unmined for a second is stuck; a pending answer comes after
      // 1.5 s, and the held transaction is not replaced meanwhile (its hash is the final answer's).
      STUCK_AFTER_SECONDS: '1',
      SETTLE_WAIT_MS: '1500',
      RELAYER_REPLACE_AFTER_MS: '600000',
    },
    log: (line) => {
      if (line.includes('x402 facilitator is running')) running = true;
      if (!quiet) process.stderr.write(`[cluster] ${line}\n`);
    },
  });
  (globalThis as any).__X402_CLUSTER__ = { proc, dataDir, database };
  // A first run builds the Temporal server (minutes); later ones start in about a minute.
  await waitUntil('npm run cluster to be running', async () => running, { timeoutMs: 40 * 60_000, intervalMs: 200, process: proc });
  const info: ClusterInfo = { dataDir, database };
  const infoPath = join(dataDir, 'cluster-info.json');
  writeFileSync(infoPath, JSON.stringify(info));
  process.env[CLUSTER_INFO_ENV] = infoPath;
}
