import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { temporalConnectionOptions, type TemporalAuthConfig } from './connection';
import { temporalClientInterceptors } from '../observability/tracing';

/**
 * Connects a Temporal client to TEMPORAL_ADDRESS (the dev server of `npm start` by default), with TLS/API key when
 * configured, and with the tracing interceptors when tracing is on (start it first).
 */
export async function connectTemporal(config: TemporalAuthConfig & Pick<Config, 'TEMPORAL_NAMESPACE'>): Promise<Client> {
  const connection = await Connection.connect(temporalConnectionOptions(config));
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, interceptors: temporalClientInterceptors() });
}
