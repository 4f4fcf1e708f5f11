import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../logger';

const ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Gives every request an id (the caller's X-Request-Id when well-formed), a child logger and an access log. */
export function requestId(logger: Logger): Middleware {
  return async (ctx, next) => {
    const given = ctx.get('x-request-id');
    const id = ID.test(given) ? given : randomUUID();
    ctx.state.requestId = id;
    ctx.state.log = logger.child({ requestId: id });
    ctx.set('X-Request-Id', id);
    const started = performance.now();
    try {
      await next();
    } finally {
      ctx.state.log.info(
        { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) },
        'request',
      );
    }
  };
}
