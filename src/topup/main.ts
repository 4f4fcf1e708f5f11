import { loadConfig, ConfigError } from '../config';
import { buildNetworkTable } from '../chains/networks';
import { openDatabase } from '../db/orm';
import { createLogger } from '../logger';
import { connectTemporal } from '../temporal/client';
import { serveUntilSignal } from '../http/serve';
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
  serveUntilSignal(app, topup.TOPUP_PORT, config.HOST, { temporal, db }, () =>
    logger.info({ url: topup.topupUrl, merchant: topup.TOPUP_MERCHANT_ID }, 'topup gateway listening'),
  );
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
