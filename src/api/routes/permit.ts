import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { requireApiKey } from '../middleware/auth';
import { executePermit, permitFailure } from '../../permit/permit-service';
import { rawNetworkOf } from '../../permit/schema';

/**
 * POST /v1/permit: authenticate (API key, or the session cookie as the spec's alternative scheme),
 * parse, hand over to the permit service, map the reply.
 */
export function registerPermitRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  router.post(
    '/v1/permit',
    async (ctx, next) => {
      // Malformed or oversized bodies and crashes answer in the permit shape, echoing the network
      // when the body was parsed (auth errors keep the envelope).
      ctx.state.errorShape = (status, message) => {
        const network = rawNetworkOf(ctx.request.body);
        if (status >= 500) return permitFailure('permit_execution_failed', network, 'unexpected error while executing the permit');
        return { ...permitFailure('invalid_request', network, message), status };
      };
      await next();
    },
    requireApiKey(deps, { allowSession: true }),
    jsonBody(deps.config.BODY_LIMIT),
    async (ctx) => {
      const out = await executePermit(deps, {
        em: ctx.state.em,
        auth: ctx.state.auth!,
        requestId: ctx.state.requestId,
        body: ctx.request.body,
      });
      ctx.status = out.status;
      ctx.body = out.body;
    },
  );
}
