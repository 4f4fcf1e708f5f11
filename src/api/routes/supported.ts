import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { supportedResponse } from '../../settle/supported';

/** GET /v1/supported: public (no key), since it only describes the service. */
export function registerSupportedRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  router.get('/v1/supported', (ctx) => {
    ctx.body = supportedResponse(deps);
  });
}
