import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { requireApiKey } from '../middleware/auth';
import { answerVerify } from '../../settle/routes';
import { toV1Request, toV2Verify } from '../../settle/v2';
import { isV2Body } from '../../x402/v2';

/** Deprecated since 2026-01-01 (RFC 9745 form); settle is the successor. */
const DEPRECATED_SINCE = '@1767225600';

/** POST /v1/verify (deprecated, legacy EIP-3009 only). */
export function registerVerifyRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  router.post(
    '/v1/verify',
    async (ctx, next) => {
      ctx.set('Deprecation', DEPRECATED_SINCE);
      ctx.set('Link', '</v1/settle>; rel="successor-version"');
      ctx.state.errorShape = (status) =>
        status >= 500
          ? { status: 500, body: { errorReason: 'unexpected_verify_error' } }
          : { status, body: { errorReason: 'invalid_payload' } };
      await next();
    },
    requireApiKey(deps),
    jsonBody(deps.config.BODY_LIMIT),
    async (ctx) => {
      if (!isV2Body(ctx.request.body)) {
        const out = await answerVerify(deps, ctx.state.auth!, ctx.request.body);
        ctx.status = out.status;
        ctx.body = out.body;
        return;
      }
      // x402 v2: the same verification, asked and answered in v2's words.
      const v1 = toV1Request(deps, ctx.request.body);
      const out = v1.ok
        ? await answerVerify(deps, ctx.state.auth!, v1.body, { v2: true })
        : { status: 400, body: { errorReason: v1.reason } };
      ctx.status = out.status;
      ctx.body = toV2Verify(out.body, v1.ok ? v1.network : '');
    },
  );
}
