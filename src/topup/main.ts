import { loadConfig, ConfigError } from '../config';
import { buildNetworkTable } from '../chains/networks';
import { openDatabase } from '../db/orm';
import { createLogger } from '../logger';
import { connectTemporal } from '../temporal/client';
import { createTopupApp } from './app';
import { loadTopupConfig } from './config';

/** The top-up gateway process: its own Koa app on HOST:TOPUP_PORT, same database and Temporal as the API. */
async function main() {
  const config = loadConfig();
  const topup = loadTopupConfig(config.env);
  const logger = createLogger(config.LOG_LEVEL, 'topup');
  const networks = buildNetworkTable(config.env);
  const db = await openDatabase(config);
  const temporal = await connectTemporal(config);
  const app = createTopupApp({ config, topup, db, networks, temporal, logger });
  const server = app.listen(topup.TOPUP_PORT, config.HOST, () =>
    logger.info({ url: topup.topupUrl, merchant: topup.TOPUP_MERCHANT_ID }, 'topup gateway listening'),
  );
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
