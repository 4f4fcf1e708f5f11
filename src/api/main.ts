import { loadConfig, ConfigError } from '../config';
import { buildNetworkTable } from '../chains/networks';
import { openDatabase } from '../db/orm';
import { createLogger } from '../logger';
import { connectTemporal } from '../temporal/client';
import { createApp } from './app';

/** The API process: Koa on HOST:PORT, talking to Temporal and the database. */
async function main() {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, 'api');
  const networks = buildNetworkTable(config.env);
  const db = await openDatabase(config);
  const temporal = await connectTemporal(config);
  const app = createApp({ config, db, networks, temporal, logger });
  const server = app.listen(config.PORT, config.HOST, () => logger.info({ url: config.publicUrl }, 'api listening'));
  const stop = () => {
    server.close(async () => {
      await temporal.connection.close();
      await db.close();
      process.exit(0);
    });
    setTimeout(() => process.exit(0), 5000).unref();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
