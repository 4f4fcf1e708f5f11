import type { Middleware } from 'koa';
import { ApiError, envelope, type ErrorShape } from '../errors';

/**
 * Last line of defence: every thrown error becomes a response in the route's own error shape
 * or the generic envelope, never a stack trace. Client errors keep their 4xx; the rest is 500.
 */
export function errorHandler(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined || ctx.body === null) {
        // Plain 4xx errors (not ApiError): an app with one error shape (the top-up gateway) answers in it.
        if (ctx.status === 404) ctx.throw(404, 'not found');
        // The router's allowedMethods answers 405 (with Allow), or 501 for a method it does not know:
        // both are the client's mistake, answered in the error shape, never a bare text or a 5xx.
        if (ctx.status === 405 || ctx.status === 501) ctx.throw(405, `method ${ctx.method} not allowed here`);
      }
    } catch (err: any) {
      const status: number =
        err instanceof ApiError ? err.status : Number.isInteger(err?.status) && err.status >= 400 && err.status < 500 ? err.status : 500;
      const message = status >= 500 ? 'internal error' : clientMessage(err);
      if (status >= 500) ctx.state.log?.error({ err }, 'unhandled error');
      // ApiError (auth, not found, ...) always uses the generic envelope, as the spec's 401/403 rules say;
      // everything else (malformed or oversized bodies, crashes) takes the route's own shape.
      const shape: ErrorShape | undefined = err instanceof ApiError ? undefined : ctx.state.errorShape;
      const out = shape ? shape(status, message) : { status, body: envelope(status, message) };
      if (err instanceof ApiError) ctx.set(err.headers);
      ctx.status = out.status;
      ctx.body = out.body;
    }
  };
}

function clientMessage(err: any): string {
  if (err?.type === 'entity.too.large') return 'request body too large';
  if (err?.type === 'entity.parse.failed' || err instanceof SyntaxError) return 'malformed JSON body';
  return typeof err?.message === 'string' ? err.message : 'bad request';
}
