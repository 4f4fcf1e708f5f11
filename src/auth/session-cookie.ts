import type { ParameterizedContext } from 'koa';
import type { Config } from '../config';

/** The `siwe-session` cookie: signed with app.keys (SESSION_SECRET), httpOnly, SameSite=Lax. */

export const SESSION_COOKIE = 'siwe-session';

type Ctx = Pick<ParameterizedContext, 'cookies'>;

const isHttps = (config: Pick<Config, 'publicUrl'>) => new URL(config.publicUrl).protocol === 'https:';

function baseOptions(ctx: Ctx, config: Pick<Config, 'publicUrl'>) {
  const secure = isHttps(config);
  // Behind a TLS-terminating proxy Koa sees plain http (proxy trust is off), and `cookies` refuses to
  // set a Secure cookie then; the public URL is the authority on whether clients use https.
  if (secure) ctx.cookies.secure = true;
  return { signed: true, httpOnly: true, sameSite: 'lax' as const, secure, path: '/', overwrite: true };
}

export function setSessionCookie(ctx: Ctx, config: Pick<Config, 'publicUrl' | 'SESSION_TTL_SECONDS'>, sessionId: string): void {
  ctx.cookies.set(SESSION_COOKIE, sessionId, { ...baseOptions(ctx, config), maxAge: config.SESSION_TTL_SECONDS * 1000 });
}

export function clearSessionCookie(ctx: Ctx, config: Pick<Config, 'publicUrl'>): void {
  ctx.cookies.set(SESSION_COOKIE, null, baseOptions(ctx, config));
}

/** The session id if the cookie is present and its signature verifies; a tampered cookie reads as absent. */
export function readSessionCookie(ctx: Ctx): string | undefined {
  return ctx.cookies.get(SESSION_COOKIE, { signed: true }) || undefined;
}
