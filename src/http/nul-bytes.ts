import type { Middleware } from 'koa';
import { ApiError } from '../errors';

/**
 * NUL bytes are refused at the door: PostgreSQL cannot store them in text, so a NUL reaching the
 * database became a 500. A path or query with one answers 400 here; JSON bodies are checked by
 * jsonBody after parsing (in the route's own error shape).
 */
export function refuseNulInUrl(): Middleware {
  return async (ctx, next) => {
    if (ctx.originalUrl.includes('%00') || ctx.originalUrl.includes('\u0000')) throw new ApiError(400, 'the URL contains a NUL byte');
    await next();
  };
}

/** Whether any string (or key) in a parsed JSON value holds a NUL byte. */
export function containsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(containsNul);
  if (value && typeof value === 'object') return Object.entries(value).some(([k, v]) => k.includes('\u0000') || containsNul(v));
  return false;
}
