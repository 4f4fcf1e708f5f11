import { randomBytes } from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import type { ServiceDeps } from '../deps';
import type { HttpState } from '../http/context';
import { errorHandler } from '../http/errors';
import { refuseNulInUrl } from '../http/nul-bytes';
import { securityHeaders } from '../http/security-headers';
import { requestId } from '../http/request-id';
import { RateLimits } from '../http/rate-limit';
import { registerRoutes } from './routes';
import { SESSION_COOKIE } from '../auth/session-cookie';
import { Metrics } from '../observability/metrics';
import { httpServerSpans } from '../observability/tracing';

/** The Koa API: request id + logs, error shapes, a fresh ORM context per request, then the routers. */
export function createApp(deps: ServiceDeps): Koa<HttpState> {
  const app = new Koa<HttpState>({ proxy: deps.config.TRUST_PROXY > 0, maxIpsCount: deps.config.TRUST_PROXY });
  // Signs the siwe-session cookie. Without SESSION_SECRET (devnet), sessions last one process.
  app.keys = [deps.config.SESSION_SECRET ?? randomBytes(32).toString('hex')];
  app.silent = true; // errors are logged by errorHandler with the request id
  app.use(requestId(deps.logger));
  // Metrics (created here when not given; shared with the services through deps) see the final status.
  deps.metrics ??= new Metrics({ processMetrics: deps.config.NODE_ENV !== 'test' });
  deps.metrics.observeOperations({ ...deps, relayer: deps.config.RELAYER_ADDRESS, stuck: true });
  app.use(deps.metrics.http());
  app.use(httpServerSpans());
  app.use(securityHeaders({ publicUrl: deps.config.publicUrl }));
  app.use(errorHandler());
  app.use(refuseNulInUrl());
  // Created here when not given; shared with the services through deps (they see its RequestBudgets side).
  const rateLimits = deps.rateLimits instanceof RateLimits ? deps.rateLimits : new RateLimits(deps.config, deps.logger);
  deps.rateLimits = rateLimits;
  // A request with an API key or a session is limited by its caller's budget once it authenticates.
  app.use(
    rateLimits.middleware({
      credentials: (ctx) => ctx.get('authorization') !== '' || ctx.get('cookie').includes(`${SESSION_COOKIE}=`),
    }),
  );
  app.use(async (ctx, next) => {
    ctx.state.em = deps.db.em.fork();
    await next();
  });
  const router = new Router<HttpState>();
  registerRoutes(router, deps);
  app.use(router.routes());
  app.use(router.allowedMethods());
  routers.set(app, router);
  return app;
}

const routers = new WeakMap<Koa<HttpState>, Router<HttpState>>();

/** Every (method, path template) the app's router serves; the OpenAPI test checks each is documented. */
export function listRoutes(app: Koa<HttpState>): { method: string; path: string }[] {
  return (routers.get(app)?.stack ?? []).flatMap((layer) => layer.methods.map((method) => ({ method, path: String(layer.path) })));
}
