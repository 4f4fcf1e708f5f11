import { ConfigError } from '../config';
import { startUp } from '../startup';
import { openDatabase } from '../db/orm';
import { createLogger } from '../logger';
import { connectTemporal } from '../temporal/client';
import { startTracing } from '../observability/tracing';
import { serveUntilSignal } from '../http/serve';
import { RateLimits } from '../http/rate-limit';
import { createTopupApp, topupErrorBody } from './app';

/** The top-up gateway process: its own Koa app on HOST:TOPUP_PORT, same database and Temporal as the API. */
async function main() {
  // All config parsed, and in production checked (no devnet value, contract code), before anything starts.
  const { config, networks, topup, notices } = await startUp('topup');
  const logger = createLogger(config.LOG_LEVEL, 'topup');
  for (const n of notices) logger.warn(n);
  startTracing('topup', { endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  const db = await openDatabase(config);
  const temporal = await connectTemporal(config);
  const rateLimits = new RateLimits(config, logger);
  await rateLimits.ready(); // shared counters from the first request when REDIS_URL is set
  const app = createTopupApp({ config, topup: topup!, db, networks, temporal, logger, rateLimits });
  serveUntilSignal(
    app,
    topup!.TOPUP_PORT,
    config.HOST,
    { temporal, db },
    () => logger.info({ url: topup!.topupUrl, merchant: topup!.TOPUP_MERCHANT_ID }, 'topup gateway listening'),
    topupErrorBody,
  );
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
