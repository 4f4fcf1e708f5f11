import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { requireApiKey } from '../middleware/auth';
import { verifyPayment } from '../../schemes/registry';

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
      const out = await verifyPayment(deps, ctx.state.auth!, ctx.request.body);
      ctx.status = out.status;
      ctx.body = out.body;
    },
  );
}
