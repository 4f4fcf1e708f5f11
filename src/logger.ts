import pino from 'pino';

/**
 * JSON logs. Secrets never reach a log line: known secret-bearing fields are redacted by path, and
 * code never logs request bodies of authentication endpoints or signer keys.
 */
export function createLogger(level: string, name: string) {
  return pino({
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
  });
}
export type Logger = pino.Logger;
