import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { requireSession } from '../middleware/auth';
import { parseBody } from '../../auth/parse-body';
import { createApiKey, createApiKeyBody, findActiveApiKey, listApiKeys, revokeApiKey, toApiKeyRecord } from '../../auth/api-keys';
import { AUTH_BODY_LIMIT } from './auth';

/** API key management for the signed-in organization (spec: "API keys"). */
export function registerApiKeyRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  router.post('/v1/api_keys', requireSession(deps), jsonBody(AUTH_BODY_LIMIT), async (ctx) => {
    const input = parseBody(createApiKeyBody, ctx.request.body);
    ctx.set('Cache-Control', 'no-store'); // the body carries the secret, shown this once
    ctx.status = 201;
    ctx.body = await createApiKey(ctx.state.em, ctx.state.auth!.organizationId, input);
  });

  router.get('/v1/api_keys', requireSession(deps), async (ctx) => {
    ctx.body = { apiKeys: await listApiKeys(ctx.state.em, ctx.state.auth!.organizationId) };
  });

  router.get('/v1/api_keys/:id', requireSession(deps), async (ctx) => {
    ctx.body = toApiKeyRecord(await findActiveApiKey(ctx.state.em, ctx.state.auth!.organizationId, ctx.params.id));
  });

  router.delete('/v1/api_keys/:id', requireSession(deps), async (ctx) => {
    ctx.body = await revokeApiKey(ctx.state.em, ctx.state.auth!.organizationId, ctx.params.id);
  });
}
