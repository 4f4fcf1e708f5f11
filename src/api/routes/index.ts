import type Router from '@koa/router';
import type { ApiDeps, ApiState } from '../context';

/** Every router of the API, mounted in one place so a reader finds each path here. */
export function registerRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });
  void deps;
}
