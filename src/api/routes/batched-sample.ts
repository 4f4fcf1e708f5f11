import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { ApiError } from '../../errors';
import { requireApiKey } from '../middleware/auth';
import { gatewayStatusRecord } from '../../schemes/batched/gateway-status';

/**
 * GET /v1/batched-sample: the gateway status record. Its errors have their own shape: no
 * organization (missing or bad key) -> `{error}` with the auth status, failure -> 500
 * `{error: 'Internal server error', message}`.
 */
export function registerBatchedSampleRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  const auth = requireApiKey(deps);
  router.get('/v1/batched-sample', async (ctx) => {
    try {
      await auth(ctx, async () => undefined);
      ctx.body = { success: true, data: await gatewayStatusRecord(deps, ctx.state.em, ctx.state.auth!) };
    } catch (err) {
      if (err instanceof ApiError) {
        ctx.set(err.headers); // Retry-After on a 429
        ctx.status = err.status;
        ctx.body = { error: err.status === 401 ? `organization required: ${err.message}` : err.message };
        return;
      }
      ctx.state.log?.error({ err }, 'batched-sample failed');
      ctx.status = 500;
      ctx.body = { error: 'Internal server error', message: 'could not build the gateway status record' };
    }
  });
}
