import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { requireApiKey } from '../middleware/auth';
import { answerSettle } from '../../settle/routes';
import { settleFailure } from '../../settle/run';
import { toV1Request, toV2Settle } from '../../settle/v2';
import { isV2Body } from '../../x402/v2';

/** POST /v1/settle: parse, authenticate, hand over to the settlement service, map the reply. */
export function registerSettleRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  router.post(
    '/v1/settle',
    async (ctx, next) => {
      // Malformed or oversized bodies and crashes answer in the settle shape (auth errors keep the envelope);
      // a crash after the body parsed still names the payment's network, as every settle answer does.
      const networkOf = () => {
        const network = (ctx.request.body as { paymentPayload?: { network?: unknown } } | undefined)?.paymentPayload?.network;
        return typeof network === 'string' && network.length <= 64 ? network : '';
      };
      ctx.state.errorShape = (status) =>
        status >= 500 ? settleFailure('unexpected_settle_error', networkOf()) : { ...settleFailure('invalid_payload'), status };
      await next();
    },
    requireApiKey(deps),
    jsonBody(deps.config.BODY_LIMIT),
    async (ctx) => {
      const settle = (body: unknown, waitMs: number) =>
        answerSettle(deps, { em: ctx.state.em, auth: ctx.state.auth!, requestId: ctx.state.requestId, body, waitMs });
      if (!isV2Body(ctx.request.body)) {
        const out = await settle(ctx.request.body, deps.config.SETTLE_WAIT_MS);
        ctx.status = out.status;
        ctx.body = out.body;
        return;
      }
      // x402 v2 (@x402/core's HTTPFacilitatorClient): the same settlement, asked and answered in v2's words.
      const v1 = toV1Request(deps, ctx.request.body);
      const network = (ctx.request.body as { paymentRequirements?: { network?: unknown } }).paymentRequirements?.network;
      const out = v1.ok ? await settle(v1.body, deps.config.SETTLE_WAIT_V2_MS) : settleFailure(v1.reason);
      ctx.status = out.status;
      ctx.body = toV2Settle(deps, out.body, v1.ok ? v1.network : typeof network === 'string' ? network : '');
    },
  );
}
