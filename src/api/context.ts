import type { Client } from '@temporalio/client';
import type { EntityManager } from '@mikro-orm/core';
import type { ParameterizedContext } from 'koa';
import type { Config } from '../config';
import type { Database } from '../db/orm';
import type { NetworkTable } from '../chains/networks';
import type { Logger } from '../logger';
import type { Metrics } from '../observability/metrics';
import type { ErrorShape } from './errors';

/** Everything the HTTP layer needs, built once at start-up and shared by every router. */
export interface ApiDeps {
  config: Config;
  db: Database;
  networks: NetworkTable;
  temporal: Client;
  logger: Logger;
  /** Prometheus metrics of this app; createApp creates them when absent. */
  metrics?: Metrics;
}

/** Who is calling, as established by the auth middleware. */
export interface AuthContext {
  organizationId: string;
  method: 'api_key' | 'session';
  apiKeyId?: string;
  /** Mode of the API key (test keys settle testnets only). Undefined for sessions. */
  testNet?: boolean;
  address?: string;
}

export interface ApiState {
  requestId: string;
  log: Logger;
  em: EntityManager;
  auth?: AuthContext;
  errorShape?: ErrorShape;
}

export type ApiContext = ParameterizedContext<ApiState>;
