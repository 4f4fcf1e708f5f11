import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Database } from '../db/orm';
import type { NetworkTable } from '../chains/networks';
import type { Logger } from '../logger';
import type { TopupConfig } from './config';
import type { RateLimits } from '../http/rate-limit';
import type { Metrics } from '../observability/metrics';

/** Everything the gateway's HTTP layer needs, built once at start-up. */
export interface TopupDeps {
  config: Config;
  topup: TopupConfig;
  db: Database;
  networks: NetworkTable;
  temporal: Client;
  logger: Logger;
  /** Per-IP request budgets; createTopupApp creates them when absent. */
  rateLimits?: RateLimits;
  /** Prometheus metrics of this gateway (its own registry); createTopupApp creates them when absent. */
  metrics?: Metrics;
}
