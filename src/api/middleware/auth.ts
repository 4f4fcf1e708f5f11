import type { Middleware } from 'koa';
import type { HttpContext, HttpState } from '../../http/context';
import type { ServiceDeps } from '../../deps';
import type { AuthContext } from '../../auth/key-mode';
import { ApiError } from '../../errors';
import { authenticateApiKey } from '../../auth/api-keys';
import { findActiveSession } from '../../auth/sessions';
import { readSessionCookie, SESSION_COOKIE } from '../../auth/session-cookie';
import type { Session } from '../../db/entities';
import { callerOrganization } from '../../auth/organizations';

/**
 * Authentication middleware. Errors are thrown as ApiError so the error handler answers in the
 * route's own shape (settle/verify/permit set ctx.state.errorShape) or the generic envelope.
 */

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The signed-in session behind the cookie, or 401. */
export async function currentSession(ctx: HttpContext, deps: ServiceDeps): Promise<Session> {
  const id = readSessionCookie(ctx);
  if (!id) throw new ApiError(401, 'sign-in required: missing or invalid siwe-session cookie');
  const em = ctx.state.em ?? deps.db.em.fork();
  const session = await findActiveSession(em, id);
  if (!session) throw new ApiError(401, 'session expired or signed out');
  return session;
}

async function authenticateSession(ctx: HttpContext, deps: ServiceDeps): Promise<AuthContext> {
  const session = await currentSession(ctx, deps);
  return { organizationId: session.organizationId, method: 'session', address: session.address };
}

/** Requires a valid `siwe-session` cookie; sets ctx.state.auth (method 'session'). */
export function requireSession(deps: ServiceDeps): Middleware<HttpState> {
  return async (ctx, next) => {
    ctx.state.auth = await authenticateSession(ctx, deps);
    await deps.rateLimits?.consumeCaller(`org:${ctx.state.auth.organizationId}`);
    await next();
  };
}

/**
 * Requires `Authorization: Bearer <pk_ key>`: missing, malformed or unknown -> 401, revoked -> 403.
 * With `allowSession`, a request without an Authorization header may sign in by cookie instead; a
 * present but bad Authorization header never falls back to the cookie.
 */
export function requireApiKey(deps: ServiceDeps, opts: { allowSession?: boolean } = {}): Middleware<HttpState> {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (!header && opts.allowSession && ctx.cookies.get(SESSION_COOKIE, { signed: false })) {
      ctx.state.auth = await authenticateSession(ctx, deps);
      await deps.rateLimits?.consumeCaller(`org:${ctx.state.auth.organizationId}`);
      return next();
    }
    if (!header) throw new ApiError(401, 'missing API key: send Authorization: Bearer <pk_ key>');
    const match = BEARER.exec(header);
    if (!match) throw new ApiError(401, 'malformed Authorization header: expected Bearer <pk_ key>');
    const em = ctx.state.em ?? deps.db.em.fork();
    const key = await authenticateApiKey(em, match[1]);
    ctx.state.auth = { method: 'api_key', ...key };
    await deps.rateLimits?.consumeCaller(`key:${key.apiKeyId}`);
    await next();
  };
}

/**
 * Operator role (docs/decisions/withdrawal-operators.md): after requireApiKey, lets through only
 * organizations created by a wallet in OPERATOR_ADDRESSES (the SIWE signer that owns them); any
 * other authenticated caller gets 403.
 */
export function requireOperator(deps: ServiceDeps): Middleware<HttpState> {
  const operators = new Set(deps.config.OPERATOR_ADDRESSES.map((a) => a.toLowerCase()));
  return async (ctx, next) => {
    const em = ctx.state.em ?? deps.db.em.fork();
    const org = await callerOrganization(em, ctx.state.auth!);
    if (!org || !operators.has(org.ownerAddress.toLowerCase())) {
      throw new ApiError(403, "operators only: this organization's owner is not in OPERATOR_ADDRESSES");
    }
    await next();
  };
}
