import type { Middleware } from 'koa';

/**
 * Headers every response of both apps carries: no content sniffing, no framing, no referrer leaks,
 * and our responses are not embeddable by other sites. The media objects add their own CSP
 * (src/api/routes/media.ts); the Swagger UI page needs its scripts, so there is no global CSP.
 */
export function securityHeaders(): Middleware {
  return async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cross-Origin-Resource-Policy', 'same-site');
    await next();
  };
}
