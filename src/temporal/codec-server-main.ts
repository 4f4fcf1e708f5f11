import { ConfigError, loadConfig } from '../config';
import { createLogger } from '../logger';
import { createCodecServer } from './codec-server';

/**
 * `npm run codec-server`: the codec server on CODEC_SERVER_HOST:CODEC_SERVER_PORT (src/temporal/codec-server.ts;
 * README "For operators" says how to point the Temporal UI and CLI at it).
 */
function main() {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL, 'codec-server');
  const app = createCodecServer(config);
  const server = app.listen(config.CODEC_SERVER_PORT, config.CODEC_SERVER_HOST, () =>
    log.info(
      { host: config.CODEC_SERVER_HOST, port: config.CODEC_SERVER_PORT, uiOrigin: new URL(config.TEMPORAL_UI_URL).origin },
      'codec server listening',
    ),
  );
  const stop = () => server.close(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

try {
  main();
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
}
