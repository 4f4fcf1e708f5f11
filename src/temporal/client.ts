import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';

/** Connects a Temporal client to TEMPORAL_ADDRESS (the dev server of `npm start` by default). */
export async function connectTemporal(config: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE'>): Promise<Client> {
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
}
