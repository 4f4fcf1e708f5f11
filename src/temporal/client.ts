import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { temporalConnectionOptions, type TemporalAuthConfig } from './connection';
import { temporalDataConverter } from './payload-codec';
import { temporalClientInterceptors } from '../observability/tracing';

/**
 * Connects a Temporal client to TEMPORAL_ADDRESS (the dev server of `npm start` by default), with TLS/API key when
 * configured, the payload codec (PAYLOAD_CODEC_KEYS; required in production), and with the tracing interceptors
 * when tracing is on (start it first).
 */
export async function connectTemporal(
  config: TemporalAuthConfig & Pick<Config, 'TEMPORAL_NAMESPACE' | 'PAYLOAD_CODEC_KEYS' | 'production'>,
): Promise<Client> {
  const dataConverter = temporalDataConverter(config); // before connecting: a missing key stops start-up
  const connection = await Connection.connect(temporalConnectionOptions(config));
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter, interceptors: temporalClientInterceptors() });
}
