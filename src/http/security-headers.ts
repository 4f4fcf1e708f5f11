import type { Middleware } from 'koa';

/**
 * Headers every response of both apps carries: no content sniffing, no framing, no referrer leaks,
 * and our responses are not embeddable by other sites; HSTS when the app's public URL is https. The media objects add their own CSP
 * (src/api/routes/media.ts); the Swagger UI page needs its scripts, so there is no global CSP.
 */
export function securityHeaders(opts: { publicUrl?: string } = {}): Middleware {
  // Served over https (its public URL says so, whatever the proxy in front speaks to us): browsers
  // must never fall back to plain http, where a session cookie or a payment could be taken.
  const https = opts.publicUrl !== undefined && new URL(opts.publicUrl).protocol === 'https:';
  return async (ctx, next) => {
    if (https) ctx.set('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cross-Origin-Resource-Policy', 'same-site');
    await next();
  };
}
