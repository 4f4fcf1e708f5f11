import pino from 'pino';
import { redactUrls } from './observability/redact';

/**
 * JSON logs. Secrets never reach a log line: known secret-bearing fields are redacted by path, and
 * code never logs request bodies of authentication endpoints or signer keys. Every URL in a line is
 * cut to its origin (RPC URLs carry provider keys), whatever field or error message it is in.
 */
export function createLogger(level: string, name: string, destination: { write(line: string): unknown } = pino.destination(1)) {
  return pino(
    {
      name,
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'res.headers["set-cookie"]',
          '*.api_secret_key',
          '*.privateKey',
          '*.secret',
        ],
        censor: '[redacted]',
      },
    },
    { write: (line: string) => destination.write(redactUrls(line)) },
  );
}
export type Logger = pino.Logger;
