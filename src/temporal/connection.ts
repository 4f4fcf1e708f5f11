import { readFileSync } from 'node:fs';
import { ConfigError, type Config } from '../config';

export type TemporalAuthConfig = Pick<
  Config,
  | 'TEMPORAL_ADDRESS'
  | 'TEMPORAL_TLS'
  | 'TEMPORAL_TLS_CERT_PATH'
  | 'TEMPORAL_TLS_KEY_PATH'
  | 'TEMPORAL_TLS_CA_PATH'
  | 'TEMPORAL_TLS_SERVER_NAME'
  | 'TEMPORAL_API_KEY'
>;

/**
 * The options every Temporal connection of ours uses (API and top-up client, worker, operator CLI):
 * the address, TLS (mTLS when a client certificate is given) and the API key. The same shape fits
 * `Connection.connect` and `NativeConnection.connect`. Files are read here, at start-up, so a wrong
 * path stops the process with the variable's name.
 */
export function temporalConnectionOptions(c: TemporalAuthConfig) {
  const read = (variable: string, path: string | undefined) => {
    if (!path) return undefined;
    try {
      return readFileSync(path);
    } catch (err) {
      throw new ConfigError(`Invalid configuration:\n  ${variable}: cannot read ${path} (${(err as NodeJS.ErrnoException).code})`);
    }
  };
  if (!c.TEMPORAL_TLS_CERT_PATH !== !c.TEMPORAL_TLS_KEY_PATH) {
    throw new ConfigError(
      'Invalid configuration:\n  TEMPORAL_TLS_CERT_PATH: mTLS needs both TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH',
    );
  }
  const crt = read('TEMPORAL_TLS_CERT_PATH', c.TEMPORAL_TLS_CERT_PATH);
  const key = read('TEMPORAL_TLS_KEY_PATH', c.TEMPORAL_TLS_KEY_PATH);
  const ca = read('TEMPORAL_TLS_CA_PATH', c.TEMPORAL_TLS_CA_PATH);
  const tlsOn = c.TEMPORAL_TLS || crt !== undefined || ca !== undefined || c.TEMPORAL_API_KEY !== undefined;
  const tls = tlsOn
    ? {
        ...(crt && key ? { clientCertPair: { crt, key } } : {}),
        ...(ca ? { serverRootCACertificate: ca } : {}),
        ...(c.TEMPORAL_TLS_SERVER_NAME ? { serverNameOverride: c.TEMPORAL_TLS_SERVER_NAME } : {}),
      }
    : undefined;
  return { address: c.TEMPORAL_ADDRESS, ...(tls ? { tls } : {}), ...(c.TEMPORAL_API_KEY ? { apiKey: c.TEMPORAL_API_KEY } : {}) };
}
