import { ConfigError } from '../config';
import { startUp } from '../startup';
import { openDatabase } from '../db/orm';
import { createLogger } from '../logger';
import { connectTemporal } from '../temporal/client';
import { startTracing } from '../observability/tracing';
import { createApp } from './app';
import { serveUntilSignal } from '../http/serve';
import { RateLimits } from '../http/rate-limit';

/** The API process: Koa on HOST:PORT, talking to Temporal and the database. */
async function main() {
  // All config (inference and media too) parsed, and in production checked, before anything starts.
  const { config, networks, notices } = await startUp('api');
  const logger = createLogger(config.LOG_LEVEL, 'api');
  for (const n of notices) logger.warn(n);
  startTracing('api', { endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  const db = await openDatabase(config);
  const temporal = await connectTemporal(config);
  const rateLimits = new RateLimits(config, logger);
  await rateLimits.ready(); // shared counters from the first request when REDIS_URL is set
  const app = createApp({ config, db, networks, temporal, logger, rateLimits });
  serveUntilSignal(app, config.PORT, config.HOST, { temporal, db }, () => logger.info({ url: config.publicUrl }, 'api listening'));
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
