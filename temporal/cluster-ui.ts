/**
 * The Temporal UI as a cluster serves it (`npm run cluster`; the `temporal-ui` service of
 * docker-compose.yml): the UI server of the version `npm start`'s CLI embeds (tools/go-tools.ts
 * TEMPORAL_UI_SERVER), pointed at the cluster's frontend, read-only as in Compose, and decoding
 * payloads through `codecEndpoint` from the operator's browser.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { prefixedStderr, spawnManaged, waitForHttp, type LogFn, type ManagedProcess } from '../devnet/process';
import { TEMPORAL_UI_SERVER, ensureGoTool } from '../tools/go-tools';

export interface ClusterUiOptions {
  /** The Temporal frontend, host:port. */
  temporalAddress: string;
  /** Where the UI listens: TEMPORAL_UI_URL (its origin is the one the codec server lets call it). */
  url: string;
  namespace: string;
  /** The codec endpoint the browser calls (it must add the codec server's token: devnet/codec-proxy.ts). */
  codecEndpoint: string;
  /** Where the UI server's config file goes. */
  dir: string;
  log?: LogFn;
}

export interface ClusterUi {
  url: string;
  pid: number;
  proc: ManagedProcess;
  stop(): Promise<void>;
}

/** The UI server's config (the fields of its config/development.yaml we set; the rest keep their defaults). */
function uiConfig(o: ClusterUiOptions): string {
  const url = new URL(o.url);
  return `# Written by temporal/cluster-ui.ts for npm run cluster; rewritten at every start.
temporalGrpcAddress: ${JSON.stringify(o.temporalAddress)}
host: ${JSON.stringify(url.hostname)}
port: ${Number(url.port || 80)}
enableUi: true
defaultNamespace: ${JSON.stringify(o.namespace)}
notifyOnNewVersion: false
refreshInterval: 0s
# Read-only, as the Compose UI: operators act through npm run ops.
disableWriteActions: true
hideLogs: true
cors:
  cookieInsecure: true
  allowOrigins:
    - ${JSON.stringify(url.origin)}
codec:
  endpoint: ${JSON.stringify(o.codecEndpoint)}
  passAccessToken: false
  includeCredentials: false
`;
}

export async function startClusterUi(opts: ClusterUiOptions): Promise<ClusterUi> {
  const log = opts.log ?? prefixedStderr('temporal-ui');
  const binary = await ensureGoTool(TEMPORAL_UI_SERVER);
  const configDir = path.join(opts.dir, 'config');
  await fs.mkdir(configDir, { recursive: true });
  await fs.writeFile(path.join(configDir, 'cluster.yaml'), uiConfig(opts));
  const proc = spawnManaged('temporal-ui', binary, ['--root', opts.dir, '--config', 'config', '--env', 'cluster', 'start'], { log });
  try {
    // The UI's own settings endpoint answers once the server is up.
    await waitForHttp(new URL('/api/v1/settings', opts.url).href, { timeoutMs: 60_000, intervalMs: 200, process: proc });
  } catch (err) {
    await proc.stop({ signal: 'SIGINT', timeoutMs: 5_000 });
    throw err;
  }
  return {
    url: opts.url,
    pid: proc.child.pid!,
    proc,
    stop: async () => {
      await proc.stop({ signal: 'SIGINT', timeoutMs: 10_000 });
    },
  };
}
