import { timingSafeEqual } from 'node:crypto';
import type Router from '@koa/router';
import { ConfigError } from '../config';
import type { Config } from '../config';
import type { HttpContext, HttpState } from './context';
import type { Metrics } from '../observability/metrics';

/**
 * GET /metrics: Prometheus text format, on the API port, unless METRICS_ENABLED=false (then the route
 * does not exist: 404). Reachable with `Authorization: Bearer <METRICS_TOKEN>` when that is set, else
 * from this host only (127.0.0.1 or ::1; 403 otherwise). It exposes counts and latencies by route template, network and
 * outcome only: no organization, key, payer or request data. See docs/decisions/openapi-metrics-and-logs.md.
 * The top-up gateway serves its own the same way, on its port.
 */
export function registerMetricsRoutes(
  router: Router<HttpState>,
  deps: { config: Pick<Config, 'env' | 'METRICS_TOKEN'>; metrics?: Metrics },
): void {
  if (!metricsEnabled(deps.config.env)) return;
  router.get('/metrics', async (ctx) => {
    const token = deps.config.METRICS_TOKEN;
    const allowed = metricsCaller(ctx, token);
    // A plain 403 (not ApiError): each app answers in its own error shape (the gateway's is the top-up one).
    if (!allowed) ctx.throw(403, token ? 'metrics: send Authorization: Bearer <METRICS_TOKEN>' : 'metrics: loopback only');
    const { contentType, body } = await deps.metrics!.render();
    ctx.set('Cache-Control', 'no-store');
    ctx.type = contentType;
    ctx.body = body;
  });
}

/**
 * Whether the caller may read operational data (/metrics, /healthz's detail): it presents
 * `Bearer <METRICS_TOKEN>` when that is set, else it is this host (the socket's address, not
 * X-Forwarded-For). Production requires the token (src/production.ts).
 */
export function metricsCaller(ctx: HttpContext, token: string | undefined): boolean {
  return token ? safeEqual(ctx.get('authorization'), `Bearer ${token}`) : LOOPBACK.has(ctx.request.socket.remoteAddress ?? '');
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);
const safeEqual = (a: string, b: string) => {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length === y.length && timingSafeEqual(x, y);
};

const TRUE = new Set(['true', '1', 'yes']);
const FALSE = new Set(['false', '0', 'no']);

/** METRICS_ENABLED: true unless set to false/0/no; any other value stops start-up. */
export function metricsEnabled(env: Record<string, string | undefined>): boolean {
  const raw = env.METRICS_ENABLED?.trim().toLowerCase();
  if (raw === undefined || raw === '' || TRUE.has(raw)) return true;
  if (FALSE.has(raw)) return false;
  throw new ConfigError('Invalid configuration:\n  METRICS_ENABLED: must be one of true, false, 1, 0, yes, no');
}
