import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpContext, HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { currentSession } from '../middleware/auth';
import { parseBody } from '../../auth/parse-body';
import { issueNonce } from '../../auth/siwe-nonces';
import { signInWithEthereum, siweChainIds, verifyBody } from '../../auth/siwe-sign-in';
import { revokeSession } from '../../auth/sessions';
import { clearSessionCookie, readSessionCookie, setSessionCookie } from '../../auth/session-cookie';

/** SIWE sign-in: nonce, verify (sets the siwe-session cookie), sign-out, and who-am-I. */

/** Nonces are authenticated with the app's cookie key (SESSION_SECRET, or a per-process one on devnet). */
const nonceSecret = (ctx: HttpContext) => (ctx.app.keys as string[])[0]; // createApp sets one string key

/** Sign-in bodies are a short message and a signature. */
export const AUTH_BODY_LIMIT = '8kb';

export function registerAuthRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  const chainIds = siweChainIds(deps.networks);
  router.get('/v1/auth/nonce', async (ctx) => {
    const { nonce } = issueNonce(nonceSecret(ctx), deps.config.SIWE_NONCE_TTL_SECONDS);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { nonce };
  });

  router.post('/v1/auth/verify', jsonBody(AUTH_BODY_LIMIT), async (ctx) => {
    const input = parseBody(verifyBody, ctx.request.body);
    const signedIn = await signInWithEthereum(ctx.state.em, deps.config, { chainIds, nonceSecret: nonceSecret(ctx) }, input);
    setSessionCookie(ctx, deps.config, signedIn.sessionId);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { address: signedIn.address, organizationId: signedIn.organizationId, expiresAt: signedIn.expiresAt.toISOString() };
  });

  // Idempotent: revokes the session when the cookie is valid, always clears the cookie, answers 204.
  router.post('/v1/auth/signout', async (ctx) => {
    const id = readSessionCookie(ctx);
    if (id) await revokeSession(ctx.state.em, id);
    clearSessionCookie(ctx, deps.config);
    ctx.status = 204;
  });

  router.get('/v1/auth/session', async (ctx) => {
    const session = await currentSession(ctx, deps);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      address: session.address,
      organizationId: session.organizationId,
      expiresAt: new Date(session.expiresAt).toISOString(),
    };
  });
}
