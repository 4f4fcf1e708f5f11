import type { Client } from '@temporalio/client';
import type { Config } from './config';
import type { Database } from './db/orm';
import type { NetworkTable } from './chains/networks';
import type { Logger } from './logger';
import type { Metrics } from './observability/metrics';

/** What the services need, built once at start-up by the process that hosts them (API or top-up gateway). */
export interface ServiceDeps {
  config: Config;
  db: Database;
  networks: NetworkTable;
  temporal: Client;
  logger: Logger;
  /** Prometheus metrics of this app; createApp creates them when absent. */
  metrics?: Metrics;
  /** Request budgets of this app; createApp creates them (in memory, or Redis with REDIS_URL) when absent. */
  rateLimits?: RequestBudgets;
}

/**
 * The budgets the services charge: per caller, and the organization's gas. `RateLimits`
 * (src/http/rate-limit.ts) implements them; the type is written here so that the modules the worker
 * shares with the API do not load the HTTP layer.
 */
export interface RequestBudgets {
  consumeCaller(caller: string): Promise<void>;
  chargeGas(organizationId: string, gas: bigint): Promise<void>;
  refundGas(organizationId: string, gas: bigint): Promise<void>;
}
