import { rmSync } from 'node:fs';
import type { ManagedProcess } from '../../devnet/process';
import { dropClusterDatabases } from './cluster';

/** Stops the cluster as Ctrl-C does, then drops its databases and removes its data folder. */
export default async function clusterTeardown(): Promise<void> {
  const c = (globalThis as any).__X402_CLUSTER__ as { proc: ManagedProcess; dataDir: string; database: string } | undefined;
  if (!c) return;
  await c.proc.stop({ signal: 'SIGINT', timeoutMs: 30_000 });
  await dropClusterDatabases(c.database);
  rmSync(c.dataDir, { recursive: true, force: true });
}
