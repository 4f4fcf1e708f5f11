import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/config';
import { temporalConnectionOptions, type TemporalAuthConfig } from '../../src/temporal/connection';

const dir = mkdtempSync(join(tmpdir(), 'temporal-tls-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const base: TemporalAuthConfig = { TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_TLS: false };

describe('Temporal connection options (client, worker, ops CLI)', () => {
  test('plain by default: the address only', () => {
    expect(temporalConnectionOptions(base)).toEqual({ address: 'temporal.internal:7233' });
  });

  test('mTLS: client certificate pair, private CA and server name', () => {
    const o = temporalConnectionOptions({
      ...base,
      TEMPORAL_TLS_CERT_PATH: file('client.pem', 'CERT'),
      TEMPORAL_TLS_KEY_PATH: file('client.key', 'KEY'),
      TEMPORAL_TLS_CA_PATH: file('ca.pem', 'CA'),
      TEMPORAL_TLS_SERVER_NAME: 'temporal.example',
    });
    expect(o).toEqual({
      address: 'temporal.internal:7233',
      tls: {
        clientCertPair: { crt: Buffer.from('CERT'), key: Buffer.from('KEY') },
        serverRootCACertificate: Buffer.from('CA'),
        serverNameOverride: 'temporal.example',
      },
    });
  });

  test('an API key turns TLS on (Temporal Cloud)', () => {
    expect(temporalConnectionOptions({ ...base, TEMPORAL_API_KEY: 'tk_123' })).toEqual({
      address: 'temporal.internal:7233',
      tls: {},
      apiKey: 'tk_123',
    });
  });

  test('half a certificate pair or an unreadable file stops start-up, naming the variable', () => {
    expect(() => temporalConnectionOptions({ ...base, TEMPORAL_TLS_CERT_PATH: file('only.pem', 'CERT') })).toThrow(
      new ConfigError('Invalid configuration:\n  TEMPORAL_TLS_CERT_PATH: mTLS needs both TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH'),
    );
    expect(() => temporalConnectionOptions({ ...base, TEMPORAL_TLS_CA_PATH: join(dir, 'missing.pem') })).toThrow(
      `TEMPORAL_TLS_CA_PATH: cannot read ${join(dir, 'missing.pem')} (ENOENT)`,
    );
  });
});
