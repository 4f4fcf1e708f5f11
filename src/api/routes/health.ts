import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { metricsCaller } from '../../http/metrics-route';
import { apiHealth, cachedHealth, healthView } from '../../observability/health';

/**
 * GET /healthz: 200 when Temporal, the database and every enabled network answer, else 503. The
 * answer is reused for HEALTH_CACHE_MS; the checks naming each dependency are shown only to a
 * caller that may read /metrics (METRICS_TOKEN), everyone else gets the state alone.
 */
export function registerHealthRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  const health = cachedHealth(() => apiHealth({ ...deps, onRpcError: (network) => deps.metrics?.rpcError(network) }));
  router.get('/healthz', async (ctx) => {
    const { status, body } = healthView(await health(), metricsCaller(ctx, deps.config.METRICS_TOKEN));
    ctx.set('Cache-Control', 'no-store');
    ctx.status = status;
    ctx.body = body;
  });
}
