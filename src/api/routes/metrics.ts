import type Router from '@koa/router';
import { ConfigError } from '../../config';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';

/**
 * GET /metrics: Prometheus text format, on the API port, without authentication, unless
 * METRICS_ENABLED=false (then the route does not exist: 404). It exposes counts and latencies by
 * route template, network and outcome only: no organization, key, payer or request data. Operators
 * who do not want it public block `/metrics` at the proxy or turn it off. See docs/decisions.md
 * "OpenAPI, metrics and logs".
 */
export function registerMetricsRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  if (!metricsEnabled(deps.config.env)) return;
  router.get('/metrics', async (ctx) => {
    const { contentType, body } = await deps.metrics!.render();
    ctx.set('Cache-Control', 'no-store');
    ctx.type = contentType;
    ctx.body = body;
  });
}

const TRUE = new Set(['true', '1', 'yes']);
const FALSE = new Set(['false', '0', 'no']);

/** METRICS_ENABLED: true unless set to false/0/no; any other value stops start-up. */
export function metricsEnabled(env: Record<string, string | undefined>): boolean {
  const raw = env.METRICS_ENABLED?.trim().toLowerCase();
  if (raw === undefined || raw === '' || TRUE.has(raw)) return true;
  if (FALSE.has(raw)) return false;
  throw new ConfigError('Invalid configuration:\n  METRICS_ENABLED: must be one of true, false, 1, 0, yes, no');
}
