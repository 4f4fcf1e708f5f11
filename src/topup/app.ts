import Koa from 'koa';
import Router from '@koa/router';
import { getAddress } from 'viem';
import { z } from 'zod';
import { requestId } from '../http/request-id';
import { errorHandler } from '../http/errors';
import { refuseNulInUrl } from '../http/nul-bytes';
import { securityHeaders } from '../http/security-headers';
import { jsonBody } from '../http/json-body';
import { RateLimits } from '../http/rate-limit';
import { httpServerSpans } from '../observability/tracing';
import { Metrics } from '../observability/metrics';
import { metricsCaller, registerMetricsRoutes } from '../http/metrics-route';
import { cachedHealth, healthView } from '../observability/health';
import { paymentOfRequest, paymentRequiredHeader, paymentResponseV2Header } from '../settle/v2';
import type { PaymentRequirements, SettleResponse } from '../x402/schemas';
import { ApiError } from '../errors';
import type { HttpState } from '../http/context';
import { TopUp } from '../db/entities';
import { addressSchema, uintStringSchema } from '../x402/schemas';
import type { TopupDeps } from './context';
import { health } from './health';
import { quoteAll, requirementFor, sourceEntry, sourceOf, TopupUnavailable, verdictFor } from './quote';
import { publicTopupRecordJson, topupRecordJson } from './record';
import { verifyBuyerRequest } from '../media/buyer-auth';
import { BUYER_HEADERS } from '../media/buyer-auth-message';
import { postTopup, topupBodySchema } from './topup-service';
import { amountMessage, topupError, type TopupReply } from './replies';

/**
 * The top-up gateway: its own Koa app on its own port ({topup_url}), sharing the codebase, the
 * database and the Temporal cluster with the API. Errors use the top-up shape
 * `{success: false, errorReason, error}`; nothing answers with a stack trace.
 */
/** The gateway's error body `{success: false, errorReason, error}` (also for requests Node refuses itself). */
export const topupErrorBody = (status: number, message: string) => ({
  success: false,
  errorReason: status >= 500 ? 'internal_error' : status === 429 ? 'rate_limited' : 'invalid_request',
  error: message,
});

export function createTopupApp(deps: TopupDeps): Koa<HttpState> {
  const app = new Koa<HttpState>({ proxy: deps.config.TRUST_PROXY > 0, maxIpsCount: deps.config.TRUST_PROXY });
  app.silent = true;
  app.use(requestId(deps.logger));
  // Its own /metrics (GET /metrics, guarded as the API's): HTTP by route template, RPC errors, and
  // the gas and nonces of TOPUP_RELAYER_ADDRESS, the key that pays for its deposits.
  deps.metrics ??= new Metrics({ processMetrics: deps.config.NODE_ENV !== 'test' });
  deps.metrics.observeOperations({ ...deps, relayer: deps.topup.TOPUP_RELAYER_ADDRESS });
  app.use(deps.metrics.http());
  app.use(httpServerSpans());
  app.use(securityHeaders({ publicUrl: deps.topup.topupUrl }));
  app.use(errorHandler());
  app.use(async (ctx, next) => {
    // Every error of the gateway, including malformed bodies and URLs, in the top-up shape.
    ctx.state.errorShape = (status, message) => ({ status, body: topupErrorBody(status, message) });
    try {
      await next();
    } catch (err) {
      if (!(err instanceof TopupUnavailable)) throw err;
      ctx.status = 503;
      ctx.set('Retry-After', String(deps.topup.TOPUP_RETRY_AFTER_SECONDS));
      ctx.body = { success: false, errorReason: err.reason, error: err.message };
    }
  });
  app.use(refuseNulInUrl());
  // Per-IP budgets, answered in the top-up shape (429 rate_limited with Retry-After).
  deps.rateLimits ??= new RateLimits(deps.config, deps.logger);
  const limits = deps.rateLimits.middleware();
  app.use(async (ctx, next) => {
    try {
      await limits(ctx, async () => undefined);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 429) throw err;
      ctx.set(err.headers);
      return send(ctx, { status: 429, body: topupErrorBody(429, err.message) });
    }
    await next();
  });

  const send = (ctx: Koa.ParameterizedContext<HttpState>, reply: TopupReply) => {
    ctx.status = reply.status;
    for (const [k, v] of Object.entries(reply.headers ?? {})) ctx.set(k, v);
    ctx.body = reply.body;
  };

  const router = new Router<HttpState>();
  // Reused for HEALTH_CACHE_MS; the checks only for a caller that may read /metrics (the API's rule).
  const cached = cachedHealth(() => health(deps));
  router.get('/healthz', async (ctx) => send(ctx, healthView(await cached(), metricsCaller(ctx, deps.config.METRICS_TOKEN))));
  registerMetricsRoutes(router, deps);

  // Unknown merchants are answered 404 before anything else is looked at.
  router.use('/v1/:merchant', async (ctx, next) => {
    if (ctx.params.merchant !== deps.topup.TOPUP_MERCHANT_ID) {
      return send(ctx, topupError('unknown_merchant', `unknown merchant ${ctx.params.merchant}`));
    }
    await next();
  });

  const quoteQuery = z.object({ buyer: addressSchema, amount: uintStringSchema.optional(), network: z.string().optional() });
  router.get('/v1/:merchant/topups/quote', async (ctx) => {
    const parsed = quoteQuery.safeParse(ctx.query);
    if (!parsed.success)
      return send(
        ctx,
        topupError('invalid_request', `invalid query: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`),
      );
    const { buyer, amount } = parsed.data;
    const network = parsed.data.network ?? 'base';
    const found = sourceOf(deps, network);
    if ('refusal' in found) return send(ctx, topupError('wrong_network', found.refusal));
    const source = found.network;
    const { position, quotes } = await quoteAll(deps, buyer);
    const quote = quotes.find((q) => q.network.id === network)!;
    if (amount !== undefined) {
      const verdict = verdictFor(quote, BigInt(amount));
      if (!verdict.ok) return send(ctx, topupError(verdict.reason, amountMessage(verdict.reason)));
    } else if (!quote.bounds.open) return send(ctx, topupError('credit_limit_reached', amountMessage('credit_limit_reached')));
    send(ctx, {
      status: 200,
      body: {
        buyer: getAddress(buyer.toLowerCase()),
        amount: amount ?? null,
        minAmount: quote.bounds.minAmount.toString(),
        maxAmount: quote.bounds.maxAmount.toString(),
        balance: position.balance.toString(),
        creditLimit: position.creditLimit.toString(),
        headroom: quote.bounds.headroom.toString(),
        minBuyerDeposit: position.minBuyerDeposit.toString(),
        requirements: await requirementFor(deps, source, amount !== undefined ? BigInt(amount) : quote.bounds.maxAmount),
        sources: quotes.map(sourceEntry),
      },
    });
  });

  router.get('/v1/:merchant/topups/:id', async (ctx) => {
    const row = await deps.db.em.fork().findOne(TopUp, { id: ctx.params.id.toLowerCase(), merchant: ctx.params.merchant });
    if (!row) return send(ctx, topupError('topup_not_found', `no top-up ${ctx.params.id}`));
    // The whole record only for its payer or buyer, proven by the buyer-signature headers (the media
    // routes' scheme, with the gateway's host as domain); anyone else gets the public fields.
    if (!ctx.get(BUYER_HEADERS.signature)) return send(ctx, { status: 200, body: publicTopupRecordJson(row) });
    const signer = await verifyBuyerRequest(
      deps.db.em.fork(),
      { method: ctx.method, path: ctx.originalUrl, header: (n) => ctx.get(n) },
      { domain: new URL(deps.topup.topupUrl).host, maxWindowSeconds: 300 },
    );
    if (!signer.ok) return send(ctx, { status: 401, body: { success: false, errorReason: signer.error, error: signer.message } });
    const own = [row.payer, row.buyer].some((a) => a.toLowerCase() === signer.buyer.toLowerCase());
    send(ctx, { status: 200, body: own ? topupRecordJson(row) : publicTopupRecordJson(row) });
  });

  router.post('/v1/:merchant/topups', jsonBody(deps.config.BODY_LIMIT), async (ctx) => {
    const raw = (ctx.request as unknown as { body?: unknown }).body;
    const parsed = topupBodySchema.safeParse(
      raw === undefined || raw === null || (typeof raw === 'object' && Object.keys(raw as object).length === 0) ? {} : raw,
    );
    if (!parsed.success)
      return send(
        ctx,
        topupError('invalid_request', `invalid body: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`),
      );
    const { header: payment, v2 } = paymentOfRequest(deps, (name) => ctx.get(name));
    const reply = await postTopup(deps, {
      body: parsed.data,
      payment: payment === '' ? undefined : payment,
      requestId: ctx.state.requestId,
    });
    const body = reply.body as { error?: string; accepts?: PaymentRequirements[] };
    if (reply.status === 402 && body.accepts?.length) {
      reply.headers = { ...reply.headers, 'PAYMENT-REQUIRED': paymentRequiredHeader(deps, body.error ?? '', body.accepts) };
    }
    const v1Response = reply.headers?.['X-PAYMENT-RESPONSE'];
    if (v2 && v1Response) {
      const settled = JSON.parse(Buffer.from(v1Response, 'base64').toString('utf8')) as SettleResponse;
      reply.headers = { ...reply.headers, 'PAYMENT-RESPONSE': paymentResponseV2Header(deps, settled) };
    }
    send(ctx, reply);
  });

  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
