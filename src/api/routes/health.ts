import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { apiHealth } from '../../observability/health';

/** GET /healthz: 200 when Temporal, the database and every enabled network answer, else 503 naming the failing one. */
export function registerHealthRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  router.get('/healthz', async (ctx) => {
    const { status, body } = await apiHealth({ ...deps, onRpcError: (network) => deps.metrics?.rpcError(network) });
    ctx.set('Cache-Control', 'no-store');
    ctx.status = status;
    ctx.body = body;
  });
}
