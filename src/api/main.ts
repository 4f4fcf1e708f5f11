import { loadConfig, ConfigError } from '../config';
import { buildNetworkTable } from '../chains/networks';
import { openDatabase } from '../db/orm';
import { createLogger } from '../logger';
import { connectTemporal } from '../temporal/client';
import { createApp } from './app';
import { serveUntilSignal } from '../http/serve';

/** The API process: Koa on HOST:PORT, talking to Temporal and the database. */
async function main() {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, 'api');
  const networks = buildNetworkTable(config.env);
  const db = await openDatabase(config);
  const temporal = await connectTemporal(config);
  const app = createApp({ config, db, networks, temporal, logger });
  serveUntilSignal(app, config.PORT, config.HOST, { temporal, db }, () => logger.info({ url: config.publicUrl }, 'api listening'));
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
