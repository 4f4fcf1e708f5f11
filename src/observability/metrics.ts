import type { Middleware } from 'koa';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { isEvmNetworkId, isSolanaNetworkId } from '../chains/networks';
import { readStuckCounts } from '../db/stuck-payments';
import type { Logger } from '../logger';
import { registerRelayerGauges, type RelayerGaugeSources } from './relayer-gauges';

/**
 * Prometheus metrics of one API or top-up gateway instance (docs/decisions/openapi-metrics-and-logs.md).
 *
 * Every instance has its own prom-client Registry, never the global default one, so several apps
 * in one process (the tests) do not collide. Label values are bounded: HTTP routes are the router's
 * templates (`/v1/api_keys/:id`, never the raw path), networks are known network ids, outcomes are
 * our own reason strings; anything else becomes `unknown` / `unmatched`.
 */

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30];
/** Settlements wait up to SETTLE_WAIT_MS (20 s) for the chain. */
const SETTLE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60];

/** `*_pending` replies (the workflow is still running) are counted as the outcome `pending`. */
const PENDING = new Set(['settlement_pending', 'permit_pending']);
const REASON = /^[a-z0-9_]{1,64}$/;
const WORKFLOW_TYPE = /^[A-Za-z0-9_]{1,64}$/;

export type WorkflowStartResult = 'started' | 'attached';

/** What the operations gauges read on each scrape. */
export interface OperationsSources extends RelayerGaugeSources {
  /** Export x402_stuck_payments (the API). */
  stuck?: boolean;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly settlements: Counter<'route' | 'network' | 'outcome'>;
  private readonly settleDuration: Histogram<'route' | 'network' | 'result'>;
  private readonly workflowStarts: Counter<'workflow' | 'result'>;
  private readonly rpcErrors: Counter<'network'>;
  private readonly gasBudgetRefusals: Counter<'route'>;
  private observing = false;

  constructor(opts: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.httpRequests = new Counter({
      name: 'x402_http_requests_total',
      help: 'HTTP requests by method, route template and status code',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'x402_http_request_duration_seconds',
      help: 'HTTP request latency by method, route template and status code',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.settlements = new Counter({
      name: 'x402_settlements_total',
      help: 'Settle replies by settlement route (solana, batched, permit2, eip3009, or unknown when the payload did not parse), network and outcome (success, pending or the errorReason)',
      labelNames: ['route', 'network', 'outcome'],
      registers,
    });
    this.settleDuration = new Histogram({
      name: 'x402_settle_duration_seconds',
      help: 'Time to answer a settle request (success, failure or pending), by settlement route and network',
      labelNames: ['route', 'network', 'result'],
      buckets: SETTLE_BUCKETS,
      registers,
    });
    this.workflowStarts = new Counter({
      name: 'x402_workflow_starts_total',
      help: 'Workflow start requests by workflow type (fastSettlementWorkflow, permitWorkflow): started a new execution, or attached to the existing one of the same business key',
      labelNames: ['workflow', 'result'],
      registers,
    });
    this.rpcErrors = new Counter({
      name: 'x402_rpc_errors_total',
      help: "Failed RPC calls of this process (health checks, relayer balance and nonce reads) by network; the worker exports its own (its activities' calls without an answer) under the same name",
      labelNames: ['network'],
      registers,
    });
    this.gasBudgetRefusals = new Counter({
      name: 'x402_gas_budget_exhausted_total',
      help: "Settlements and permits refused (429) because the caller's organization had spent its gas budget for the window (GAS_BUDGET_PER_ORG), by route; the API log names the organization",
      labelNames: ['route'],
      registers,
    });
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** One start refused for the organization's spent gas budget. */
  gasBudgetExhausted(route: string): void {
    this.gasBudgetRefusals.inc({ route: REASON.test(route) ? route : 'unknown' });
  }

  /** One failed RPC call of `network`. */
  rpcError(network: string): void {
    this.rpcErrors.inc({ network: isEvmNetworkId(network) || isSolanaNetworkId(network) ? network : 'unknown' });
  }

  /**
   * The gauges read on scrape (once per registry): the relayer's gas and nonces (relayer-gauges.ts)
   * and, when `stuck`, x402_stuck_payments from the stuck scan's latest counts (the worker writes
   * them, src/db/stuck-payments.ts). Those counts are global: only the API exports them, else every
   * sum over the jobs would count each stuck payment twice.
   */
  observeOperations(sources: OperationsSources): void {
    if (this.observing) return;
    this.observing = true;
    registerRelayerGauges(this.registry, sources, (network) => this.rpcError(network));
    if (!sources.stuck) return;
    new Gauge({
      name: 'x402_stuck_payments',
      help: 'Running workflows past STUCK_AFTER_SECONDS in a non-terminal state at the latest stuck scan, by X402Kind, X402State and network',
      labelNames: ['kind', 'state', 'network'],
      registers: [this.registry],
      async collect() {
        this.reset();
        const counts = await Promise.resolve()
          .then(() => readStuckCounts(sources.db.em.fork()))
          .catch((err: unknown) => {
            sources.logger?.warn({ err: String(err) }, 'could not read the stuck counts');
            return [];
          });
        for (const c of counts) this.set({ kind: c.kind, state: c.state, network: c.network }, c.count);
      },
    });
  }

  /**
   * Koa middleware counting every request under the matched route template (`ctx._matchedRoute`,
   * set by @koa/router; `unmatched` for 404s). Mounted outside the error handler, so it sees the
   * final status.
   */
  http(): Middleware<{ log?: Logger }> {
    return async (ctx, next) => {
      const started = performance.now();
      try {
        await next();
      } finally {
        const template = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
        const labels = { method: ctx.method, route: template ? String(template) : 'unmatched', status: String(ctx.status) };
        this.httpRequests.inc(labels);
        this.httpDuration.observe(labels, (performance.now() - started) / 1000);
      }
    };
  }

  /** One settle reply: `outcome` is 'success', the errorReason, or a `*_pending` reason. */
  settlement(route: string, network: string, outcome: string, seconds: number): void {
    const o = PENDING.has(outcome) ? 'pending' : REASON.test(outcome) ? outcome : 'unknown';
    const n = isEvmNetworkId(network) ? network : 'unknown';
    const r = REASON.test(route) ? route : 'unknown';
    this.settlements.inc({ route: r, network: n, outcome: o });
    this.settleDuration.observe({ route: r, network: n, result: o === 'success' || o === 'pending' ? o : 'failure' }, seconds);
  }

  workflowStart(workflow: string, result: WorkflowStartResult): void {
    this.workflowStarts.inc({ workflow: WORKFLOW_TYPE.test(workflow) ? workflow : 'unknown', result });
  }

  /** The Prometheus text exposition of this registry. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
