import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { currentSession, requireSession } from '../middleware/auth';
import { parseBody } from '../../auth/parse-body';
import { getOrganization, patchOrganizationBody, toOrganizationBody, updateOrganization } from '../../auth/organizations';
import { AUTH_BODY_LIMIT } from './auth';

/** The signed-in owner's organization: name, payout wallets and platform fee. */
export function registerOrganizationRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  router.get('/v1/organization', requireSession(deps), async (ctx) => {
    ctx.body = toOrganizationBody(await getOrganization(ctx.state.em, ctx.state.auth!.organizationId));
  });

  router.patch('/v1/organization', requireSession(deps), jsonBody(AUTH_BODY_LIMIT), async (ctx) => {
    const patch = parseBody(patchOrganizationBody, ctx.request.body);
    const session = await currentSession(ctx, deps);
    const by = { address: session.address, signedInAt: new Date(session.createdAt) };
    ctx.body = toOrganizationBody(await updateOrganization(ctx.state.em, ctx.state.auth!.organizationId, patch, by));
  });
}
