import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { requireApiKey } from '../middleware/auth';
import { settlePayment } from '../../schemes/registry';
import { settleFailure } from '../../settle/run';

/** POST /v1/settle: parse, authenticate, hand over to the settlement service, map the reply. */
export function registerSettleRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  router.post(
    '/v1/settle',
    async (ctx, next) => {
      // Malformed or oversized bodies and crashes answer in the settle shape (auth errors keep the envelope).
      ctx.state.errorShape = (status) =>
        status >= 500 ? settleFailure('unexpected_settle_error') : { ...settleFailure('invalid_payload'), status };
      await next();
    },
    requireApiKey(deps),
    jsonBody(deps.config.BODY_LIMIT),
    async (ctx) => {
      const out = await settlePayment(deps, {
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
