import type Router from '@koa/router';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { registerApiKeyRoutes } from './api-keys';
import { registerAuthRoutes } from './auth';
import { registerOrganizationRoutes } from './organization';
import { registerSettleRoutes } from './settle';
import { registerSupportedRoutes } from './supported';
import { registerVerifyRoutes } from './verify';
import { registerPermitRoutes } from './permit';
import { registerDocsRoutes } from './docs';
import { registerMetricsRoutes } from '../../http/metrics-route';
import { registerInferenceRoutes } from './inference';
import { registerBatchedSampleRoutes } from './batched-sample';
import { registerGatewayRoutes } from './gateway';
import { registerMediaRoutes } from './media';
import { registerHealthRoutes } from './health';

/** Every router of the API, mounted in one place so a reader finds each path here. */
export function registerRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  registerHealthRoutes(router, deps);
  registerAuthRoutes(router, deps);
  registerOrganizationRoutes(router, deps);
  registerApiKeyRoutes(router, deps);
  registerSettleRoutes(router, deps);
  registerVerifyRoutes(router, deps);
  registerSupportedRoutes(router, deps);
  registerPermitRoutes(router, deps);
  registerDocsRoutes(router, deps);
  registerMetricsRoutes(router, deps);
  registerInferenceRoutes(router, deps);
  registerBatchedSampleRoutes(router, deps);
  registerGatewayRoutes(router, deps);
  registerMediaRoutes(router, deps);
}
