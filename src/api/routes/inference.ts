import { PassThrough } from 'node:stream';
import type Router from '@koa/router';
import { z } from 'zod';
import type { ServiceDeps } from '../../deps';
import type { HttpState } from '../../http/context';
import { jsonBody } from '../../http/json-body';
import { InferenceCharge } from '../../db/entities';
import { CHARGE_HEARTBEAT_MS } from '../../inference/types';
import { inferenceConfig } from '../../inference/config';
import { registryFor, ProvidersUnavailable } from '../../inference/providers';
import { chatRequirements, challengeBody, paymentResponseHeader } from '../../inference/challenge';
import { paymentOfRequest, paymentRequiredHeader, paymentResponseV2Header } from '../../settle/v2';
import { payForChat, startRefund } from '../../inference/chat-payment';
import { openReply, relay } from '../../inference/chat-stream';
import { ProviderFailure } from '../../inference/upstream';

const ROLES = ['user', 'assistant'] as const;
const messagesSchema = z.array(z.object({ role: z.enum(ROLES), content: z.string().max(100_000) }).strict()).min(1);

/**
 * Paid inference (spec "POST /v1/inference/chat", "GET /v1/inference/models|templates|providers").
 * The three lists are free and live; chat validates the body against the live lists, answers 402
 * with the payment requirements when unpaid, settles X-PAYMENT through the settlement workflow,
 * then relays the provider's stream. See docs/decisions/paid-inference.md.
 */
export function registerInferenceRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  const cfg = () => inferenceConfig(deps.config);
  const registry = () => registryFor(deps, cfg());

  router.get('/v1/inference/providers', async (ctx) => {
    ctx.body = { data: await registry().providers() };
  });

  router.get('/v1/inference/models', async (ctx) => {
    const { models } = await registry().models();
    ctx.body = {
      data: models.map((m) => ({ id: m.id, provider: m.provider, default: m.id === cfg().defaultModel })),
      default: cfg().defaultModel,
    };
  });

  router.get('/v1/inference/templates', async (ctx) => {
    try {
      const list = await registry().templateList();
      ctx.body = { data: list.map((t) => ({ name: t.name, label: t.label })) };
    } catch (err) {
      if (!(err instanceof ProvidersUnavailable)) throw err;
      ctx.status = 503;
      ctx.body = { error: err.message };
    }
  });

  router.post(
    '/v1/inference/chat',
    async (ctx, next) => {
      // Malformed or oversized bodies and crashes answer in the chat's `{error}` shape.
      ctx.state.errorShape = (status, message) => ({ status, body: { error: message } });
      await next();
    },
    jsonBody(deps.config.BODY_LIMIT),
    async (ctx) => {
      const c = cfg();
      const reg = registry();
      // Client disconnects (at any point, even during settlement) stop the upstream request. The
      // response's close, not the request's: a request "closes" once its body is read.
      const upstreamAbort = new AbortController();
      let clientGone = false;
      ctx.res.once('close', () => {
        if (!ctx.res.writableFinished) {
          clientGone = true;
          upstreamAbort.abort(new Error('client disconnected'));
        }
      });
      const body = (ctx.request.body ?? {}) as Record<string, unknown>;
      const fail = (status: number, error: string, supported: string[]) => {
        ctx.status = status;
        ctx.body = { error, supported };
      };
      if (typeof body !== 'object' || Array.isArray(body)) return fail(400, 'body must be a JSON object', []);

      // 1. messages, 2. model, 3. template: all before any payment is asked for.
      const messages = messagesSchema.safeParse(body.messages);
      if (!messages.success)
        return fail(400, 'messages must be a non-empty array of {role, content} with role user or assistant', [...ROLES]);
      const modelId = body.model === undefined ? c.defaultModel : body.model;
      const { models, down } = await reg.models();
      const model = typeof modelId === 'string' ? models.find((m) => m.id === modelId) : undefined;
      if (!model) {
        const supported = models.map((m) => m.id);
        const provider = typeof modelId === 'string' ? modelId.split(':')[0] : '';
        if (provider && down.includes(provider)) return fail(503, `provider ${provider} is unavailable`, supported);
        return fail(400, `unknown model ${JSON.stringify(modelId)}`, supported);
      }
      let templates;
      try {
        templates = await reg.templateList();
      } catch (err) {
        if (!(err instanceof ProvidersUnavailable)) throw err;
        return fail(503, err.message, []);
      }
      const templateName = body.template === undefined ? c.defaultTemplate : body.template;
      const template = templates.find((t) => t.name === templateName);
      if (!template)
        return fail(
          400,
          `unknown template ${JSON.stringify(templateName)}`,
          templates.map((t) => t.name),
        );

      const network = deps.networks.get(c.network);
      if (!network?.enabled || !network.usdc || !network.facilitator) {
        ctx.status = 503;
        ctx.body = { error: `chat payments on ${c.network} are not configured` };
        return;
      }
      const requirements = chatRequirements(c, network, `${deps.config.publicUrl}/v1/inference/chat`, model.id);
      const { header, v2 } = paymentOfRequest(deps, (name) => ctx.get(name));
      const challenge = (error: string) => {
        ctx.status = 402;
        ctx.set('PAYMENT-REQUIRED', paymentRequiredHeader(deps, error, requirements));
        ctx.set('Access-Control-Expose-Headers', 'PAYMENT-REQUIRED');
        ctx.body = challengeBody(error, requirements);
      };
      if (!header) return challenge('X-PAYMENT header is required');

      const started = performance.now();
      const paid = await payForChat(deps, c, network, requirements, { header, model: model.id, requestId: ctx.state.requestId });
      // Counted with the settlements (route "chat"): success, settlement_pending, or the refusal reason.
      const outcome = paid.ok ? 'success' : paid.status === 503 ? 'settlement_pending' : paid.error;
      deps.metrics?.settlement('chat', network.id, outcome, (performance.now() - started) / 1000);
      if (!paid.ok) {
        if (paid.status === 402) return challenge(paid.error);
        ctx.status = paid.status;
        if (paid.retryAfter) ctx.set('Retry-After', String(paid.retryAfter));
        ctx.body = { error: paid.error };
        return;
      }
      const { charge } = paid;
      ctx.set('X-PAYMENT-RESPONSE', paymentResponseHeader(charge.settleResponse));
      if (v2) ctx.set('PAYMENT-RESPONSE', paymentResponseV2Header(deps, charge.settleResponse));
      ctx.set('Access-Control-Expose-Headers', v2 ? 'X-PAYMENT-RESPONSE, PAYMENT-RESPONSE' : 'X-PAYMENT-RESPONSE');

      const em = deps.db.em.fork();
      const setCharge = (state: string) =>
        em.nativeUpdate(InferenceCharge, { id: charge.chargeId, state: 'charged' }, { state, updatedAt: new Date() });
      const refund = async (message: string) => {
        // The proof the refund activity asks for (activities/refund.ts): the provider, not the
        // client, ended this chat. Written before the refund starts; a client that left or stalled
        // is `client_closed` instead and never refunded.
        await em.nativeUpdate(
          InferenceCharge,
          { id: charge.chargeId, state: 'charged' },
          { state: 'provider_failed', error: message.slice(0, 2000), updatedAt: new Date() },
        );
        await startRefund(deps, c, { ...charge, network, requestId: ctx.state.requestId }, message);
        return { error: 'provider_failed', message, chargeId: charge.chargeId, refund: 'pending' };
      };

      const system = template.prompt ?? template.name;
      const upstreamMessages = [{ role: 'system', content: system }, ...messages.data];
      const provider = reg.provider(model.provider)!;
      // The provider is asked while the charge's `charged` row commits: its first byte need not wait
      // for that write, but nothing is served (or refunded) before it is recorded.
      const opening = openReply(provider, model.upstreamModel, upstreamMessages, upstreamAbort.signal, c.firstByteTimeoutMs);
      opening.catch(() => undefined); // awaited below
      try {
        await charge.charged;
      } catch (err) {
        upstreamAbort.abort(err);
        throw err; // 500; the guard refunds the charge it never saw finished
      }
      let upstream;
      try {
        upstream = await opening;
      } catch (err) {
        if (clientGone) {
          await setCharge('client_closed');
          ctx.status = 499;
          ctx.body = { error: 'client closed the request' };
          return;
        }
        const message = err instanceof ProviderFailure ? err.message : 'the provider failed before the reply';
        ctx.state.log.warn({ err, detail: err instanceof ProviderFailure ? err.detail : undefined }, 'chat provider failed');
        ctx.status = 502;
        ctx.body = await refund(message);
        return;
      }

      ctx.status = 200;
      ctx.set('Content-Type', 'text/event-stream; charset=utf-8');
      ctx.set('Cache-Control', 'no-cache');
      ctx.set('X-Accel-Buffering', 'no');
      const out = new PassThrough();
      ctx.body = out;
      // A reply may not stream for ever: past the bound it is cut (the guard relies on it), and refunded
      // only if the provider, not a slow reader, held it that long (relay); a write waits for the
      // client at most writeTimeoutMs, so the stream ends within maxStreamMs + writeTimeoutMs.
      let cutByDeadline = false;
      const maxStream = setTimeout(() => {
        cutByDeadline = true;
        upstreamAbort.abort(new Error(`the reply took longer than ${c.maxStreamMs} ms`));
      }, c.maxStreamMs);
      // The charge guard waits while this stream is alive (CHARGE_ALIVE_MS): the row is touched meanwhile.
      const heartbeat = setInterval(() => {
        deps.db.em
          .fork()
          .nativeUpdate(InferenceCharge, { id: charge.chargeId, state: 'charged' }, { updatedAt: new Date() })
          .catch((err) => ctx.state.log.warn({ err, chargeId: charge.chargeId }, 'could not touch the streaming charge'));
      }, CHARGE_HEARTBEAT_MS);
      void relay(upstream, out, model.id, () => clientGone, refund, {
        writeTimeoutMs: c.writeTimeoutMs,
        cutByDeadline: () => cutByDeadline,
      })
        .finally(() => {
          clearTimeout(maxStream);
          clearInterval(heartbeat);
          upstreamAbort.abort(new Error('the relay ended')); // a stalled client's stream stops pulling from the provider
        })
        .then(async (end) => {
          ctx.state.log.info(
            { chargeId: charge.chargeId, end: end.kind, ...(end.kind === 'provider_failed' ? { detail: end.message } : {}) },
            'chat relay ended',
          );
          if (end.kind === 'delivered') await setCharge('delivered');
          else if (end.kind === 'client_closed') await setCharge('client_closed');
          // provider_failed: the refund workflow moves the ledger to refund_pending, then refunded.
        })
        .catch((err) => ctx.state.log.error({ err, chargeId: charge.chargeId }, 'chat relay bookkeeping failed'));
    },
  );
}
