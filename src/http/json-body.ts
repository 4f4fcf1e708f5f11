import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';
import { jsonProblem, MAX_JSON_DEPTH } from './nul-bytes';

/**
 * JSON body parsing for one route, with a size limit. Mounted per route (after the route's error
 * shape is set) so a malformed or oversized body is answered in that route's shape.
 */
export function jsonBody(limit: string): Middleware {
  const parse = bodyParser({ enableTypes: ['json'], jsonLimit: limit, encoding: 'utf-8' });
  return async (ctx, next) => {
    if (ctx.request.length && !ctx.is('application/json')) {
      const err: any = new Error('Content-Type must be application/json');
      err.status = 415;
      throw err;
    }
    await parse(ctx, async () => {
      const problem = jsonProblem(ctx.request.body);
      if (problem) {
        const message =
          problem === 'nul' ? 'the JSON body contains a NUL byte' : `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`;
        throw Object.assign(new Error(message), { status: 400 });
      }
      await next();
    });
  };
}
