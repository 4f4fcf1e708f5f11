import { cancelMediaJob } from '../../../workflows/media-job';
import { checkWithoutChain } from '../../schemes/eip3009';
import type Router from '@koa/router';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import type { HttpContext, HttpState } from '../../http/context';
import type { ServiceDeps } from '../../deps';
import { jsonBody } from '../../http/json-body';
import { InferenceCharge } from '../../db/entities';
import { MediaAsset, MediaJob } from '../../db/media';
import { decodePaymentHeader } from '../../inference/chat-payment';
import { challengeBody, paymentResponseHeader } from '../../inference/challenge';
import { paymentOfRequest, paymentRequiredHeader, paymentResponseV2Header } from '../../settle/v2';
import { verifyBuyerRequest } from '../../media/buyer-auth';
import { mediaConfig, MEDIA_KINDS, type MediaKind } from '../../media/config';
import { decodeCursor, encodeCursor } from '../../media/cursor';
import {
  BODY_SCHEMAS,
  claimJob,
  fingerprintOf,
  IDEMPOTENCY_KEY,
  KIND_OF,
  mediaChargeId,
  mediaRequirements,
  mediaWorkflowId,
  priceOf,
  startMediaJob,
  type MediaRoute,
} from '../../media/requests';
import { createMediaStore } from '../../media/create-store';
import type { MediaStore } from '../../media/store';
import { FINAL_JOB_STATES, type MediaJobOutcome } from '../../media/types';
import { assetView, jobView, mediaError } from '../../media/views';
import { resultBefore } from '../../temporal/start-or-attach';

const BASE = '/v1/inference/media';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Media generation (spec "Media routes"; docs/decisions/media-generation.md): paid POSTs start a
 * MediaJobWorkflow keyed by (buyer, Idempotency-Key); jobs, library and assets are read with the
 * buyer signature headers; stored objects are served under /media when the filesystem store is used.
 */
export function registerMediaRoutes(router: Router<HttpState>, deps: ServiceDeps): void {
  const cfg = () => mediaConfig(deps.config);
  let store: MediaStore | undefined;
  const theStore = () => (store ??= createMediaStore(cfg()));
  const answer = (ctx: HttpContext, status: number, body: unknown) => {
    ctx.status = status;
    ctx.body = body;
  };
  const mediaShape = async (ctx: HttpContext, next: () => Promise<unknown>) => {
    // Malformed or oversized bodies and crashes answer in the media error shape.
    ctx.state.errorShape = (status, message) => ({
      status,
      body: mediaError(status >= 500 ? 'internal_error' : status === 413 ? 'body_too_large' : 'invalid_request', message),
    });
    await next();
  };

  for (const route of Object.keys(BODY_SCHEMAS) as MediaRoute[]) {
    const path = route === 'edits' ? `${BASE}/images/edits` : `${BASE}/${route}`;
    router.post(path, mediaShape, jsonBody(route === 'edits' ? '1mb' : deps.config.BODY_LIMIT), async (ctx) => {
      const c = cfg();
      const kind = KIND_OF[route];
      if (!c.capabilities.has(kind)) {
        return answer(
          ctx,
          503,
          mediaError('capability_unavailable', `${kind} generation is switched off`, {
            kind,
            available: MEDIA_KINDS.filter((k) => c.capabilities.has(k)),
          }),
        );
      }
      const parsed = BODY_SCHEMAS[route].safeParse(ctx.request.body ?? {});
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return answer(ctx, 400, mediaError('invalid_request', `${issue?.path.join('.') || 'body'}: ${issue?.message}`));
      }
      const body = parsed.data as { prompt: string; n?: number; size?: string; image?: string };
      const key = ctx.get('Idempotency-Key');
      if (!key)
        return answer(
          ctx,
          400,
          mediaError(
            'idempotency_key_required',
            'send an Idempotency-Key header: the same key returns the same result and is charged once',
          ),
        );
      if (!IDEMPOTENCY_KEY.test(key))
        return answer(ctx, 400, mediaError('invalid_idempotency_key', 'Idempotency-Key must be 1-64 characters of [A-Za-z0-9._:-]'));
      const network = deps.networks.get(c.network);
      if (!network?.enabled || !network.usdc || !network.facilitator)
        return answer(ctx, 503, mediaError('payments_unavailable', `media payments on ${c.network} are not configured`));

      const price = priceOf(c, route, body);
      const requirements = mediaRequirements(deps, c, network, route, price, `${deps.config.publicUrl}${path}`);
      const { header, v2 } = paymentOfRequest(deps, (name) => ctx.get(name));
      const challenge = (error: string) => {
        ctx.set('PAYMENT-REQUIRED', paymentRequiredHeader(deps, error, requirements));
        ctx.set('Access-Control-Expose-Headers', 'PAYMENT-REQUIRED');
        return answer(ctx, 402, challengeBody(error, requirements));
      };
      if (!header) return challenge('X-PAYMENT header is required');
      const decoded = decodePaymentHeader(header);
      if ('error' in decoded) return challenge(decoded.error!);
      const payload = decoded.payload;
      if (payload.network !== network.id) return challenge(`network ${payload.network} is not accepted; pay on ${network.id}`);
      // The payment's signature binds the buyer (and so the idempotency key) before any row or workflow.
      const offChain = await checkWithoutChain({ network: network.id, paymentPayload: payload, paymentRequirements: requirements }, deps);
      if (!offChain.isValid) return challenge(offChain.invalidReason);
      const auth = payload.payload.authorization;
      const buyer = auth.from.toLowerCase();

      const claim = await claimJob(deps, hasWorkflow, {
        workflowId: mediaWorkflowId(buyer, key),
        buyer,
        kind,
        model: c.models[kind],
        prompt: body.prompt,
        fingerprint: fingerprintOf(route, body),
        price,
        network: network.id,
        chargeId: mediaChargeId(network.id, buyer, auth.nonce),
      });
      if ('conflict' in claim)
        return answer(ctx, 409, mediaError('idempotency_key_reused', 'this Idempotency-Key was used for a different request'));
      const { job } = claim;
      // A known key is answered from its job, and the payment sent with it is never settled.
      const handle = claim.start
        ? await startMediaJob(deps, c, {
            job,
            network,
            payload,
            requirements,
            n: body.n ?? 1,
            size: body.size,
            image: body.image,
            requestId: ctx.state.requestId,
          })
        : deps.temporal.workflow.getHandle(job.workflowId);
      ctx.set('X-Media-Job-Id', job.id);

      const reload = () => deps.db.em.fork().findOne(MediaJob, { id: job.id });
      const rejected = async () => {
        const j = await reload();
        return challenge(j?.error ?? 'payment rejected');
      };
      const paymentHeader = async () => {
        const charge = await deps.db.em.fork().findOne(InferenceCharge, { id: job.chargeId });
        if (charge?.settlementTx) {
          const settled = { success: true, transaction: charge.settlementTx, network: job.network, payer: job.buyer };
          ctx.set('X-PAYMENT-RESPONSE', paymentResponseHeader(settled));
          if (v2) ctx.set('PAYMENT-RESPONSE', paymentResponseV2Header(deps, settled));
          ctx.set('Access-Control-Expose-Headers', `X-PAYMENT-RESPONSE, ${v2 ? 'PAYMENT-RESPONSE, ' : ''}X-Media-Job-Id`);
        }
        return charge;
      };

      if (kind !== 'image') {
        // Video and music: answer once the payment is settled (or refused), then the job runs on.
        const until = Date.now() + deps.config.SETTLE_WAIT_MS;
        let j = await reload();
        while (j?.state === 'paying' && Date.now() < until) {
          await new Promise((r) => setTimeout(r, 100));
          j = await reload();
        }
        if (j?.state === 'payment_rejected') return rejected();
        await paymentHeader();
        return answer(ctx, 202, {
          jobId: job.id,
          kind,
          state: j?.state ?? 'paying',
          statusUrl: `${deps.config.publicUrl}${BASE}/jobs/${job.id}`,
        });
      }

      const pending = async () =>
        answer(ctx, 202, {
          jobId: job.id,
          kind,
          state: (await reload())?.state ?? 'paying',
          statusUrl: `${deps.config.publicUrl}${BASE}/jobs/${job.id}`,
        });
      // The job record is the durable answer (Temporal keeps finished workflows only for a while):
      // wait for the workflow unless the record is already final, then answer from the record.
      if (claim.start || !(FINAL_JOB_STATES as readonly string[]).includes(job.state)) {
        try {
          if (!(await resultBefore<MediaJobOutcome>(deps.temporal, handle, Date.now() + c.imageWaitMs)).done) return pending();
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) return pending(); // a concurrent request is starting it
          if (!(err instanceof WorkflowFailedError)) throw err;
        }
      }
      const done = await reload();
      if (done?.state === 'payment_rejected') return rejected();
      if (done?.state === 'failed') {
        const charge = await paymentHeader();
        const refund = charge?.state === 'refunded' ? 'refunded' : 'pending';
        return answer(ctx, 502, mediaError('generation_failed', done.error ?? 'the provider failed', { jobId: job.id, refund }));
      }
      if (done?.state !== 'succeeded') return pending();
      await paymentHeader();
      const assets = await deps.db.em.fork().find(MediaAsset, { jobId: job.id });
      const index = (a: MediaAsset) => Number(/\/(\d+)\./.exec(a.key)?.[1] ?? 0);
      assets.sort((a, b) => index(a) - index(b));
      return answer(ctx, 200, { jobId: job.id, assets: assets.map((a) => assetView(c, a)) });
    });
  }

  const hasWorkflow = (workflowId: string) =>
    deps.temporal.workflow
      .getHandle(workflowId)
      .describe()
      .then(() => true)
      .catch((err) => {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      });

  /** Buyer signature check for the read/delete routes; answers 401 itself when it fails. */
  const buyerOf = async (ctx: HttpContext): Promise<string | undefined> => {
    const c = cfg();
    const r = await verifyBuyerRequest(
      deps.db.em.fork(),
      { method: ctx.method, path: ctx.originalUrl, header: (n) => ctx.get(n) },
      { domain: c.authDomain, maxWindowSeconds: c.authMaxWindowSeconds },
    );
    if (r.ok) return r.buyer;
    answer(ctx, 401, mediaError(r.error, r.message));
    return undefined;
  };
  const ownJob = async (ctx: HttpContext, buyer: string) => {
    const id = String(ctx.params.id);
    const job = UUID.test(id) ? await deps.db.em.fork().findOne(MediaJob, { id, buyer }) : null;
    // Another buyer's job is indistinguishable from a missing one.
    if (!job) answer(ctx, 404, mediaError('job_not_found', `no job ${id} for this buyer`));
    return job;
  };
  const ownAsset = async (ctx: HttpContext, buyer: string) => {
    const id = String(ctx.params.id);
    const asset = UUID.test(id) ? await deps.db.em.fork().findOne(MediaAsset, { id, buyer }) : null;
    if (!asset) answer(ctx, 404, mediaError('asset_not_found', `no asset ${id} for this buyer`));
    return asset;
  };

  router.get(`${BASE}/jobs/:id`, mediaShape, async (ctx) => {
    const buyer = await buyerOf(ctx);
    if (!buyer) return;
    const job = await ownJob(ctx, buyer);
    if (!job) return;
    const em = deps.db.em.fork();
    const [assets, charge] = await Promise.all([
      em.find(MediaAsset, { jobId: job.id }, { orderBy: { createdAt: 'asc', id: 'asc' } }),
      em.findOne(InferenceCharge, { id: job.chargeId }),
    ]);
    answer(ctx, 200, jobView(cfg(), job, assets, charge));
  });

  router.delete(`${BASE}/jobs/:id`, mediaShape, async (ctx) => {
    const buyer = await buyerOf(ctx);
    if (!buyer) return;
    const job = await ownJob(ctx, buyer);
    if (!job) return;
    if (job.kind === 'image')
      return answer(
        ctx,
        409,
        mediaError('job_not_cancellable', 'image requests are synchronous and cannot be cancelled', { jobId: job.id, state: job.state }),
      );
    if ((FINAL_JOB_STATES as readonly string[]).includes(job.state))
      return answer(ctx, 409, mediaError('job_finished', `the job is already ${job.state}`, { jobId: job.id, state: job.state }));
    await deps.temporal.workflow.getHandle(job.workflowId).signal(cancelMediaJob);
    // Refunded by the job's workflow once the provider confirms the cancellation.
    answer(ctx, 202, { jobId: job.id, state: 'cancelling' });
  });

  router.get(`${BASE}/library`, mediaShape, async (ctx) => {
    const buyer = await buyerOf(ctx);
    if (!buyer) return;
    const q = ctx.query;
    const kind = typeof q.kind === 'string' && q.kind ? q.kind : undefined;
    if (kind !== undefined && !(MEDIA_KINDS as readonly string[]).includes(kind))
      return answer(ctx, 400, mediaError('invalid_request', `kind must be one of ${MEDIA_KINDS.join(', ')}`));
    const limitText = typeof q.limit === 'string' && q.limit ? q.limit : '20';
    if (!/^\d{1,3}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > 100)
      return answer(ctx, 400, mediaError('invalid_request', 'limit must be a whole number from 1 to 100'));
    const limit = Number(limitText);
    let after;
    if (typeof q.cursor === 'string' && q.cursor) {
      after = decodeCursor(q.cursor);
      if (!after) return answer(ctx, 400, mediaError('invalid_cursor', 'cursor is not one this API returned'));
    }
    const where: Record<string, unknown> = { buyer, ...(kind ? { kind: kind as MediaKind } : {}) };
    if (after) where.$or = [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }];
    const rows = await deps.db.em.fork().find(MediaAsset, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const more = rows.length > limit;
    answer(ctx, 200, { data: page.map((a) => assetView(cfg(), a)), nextCursor: more ? encodeCursor(page[page.length - 1]!) : null });
  });

  router.get(`${BASE}/assets/:id`, mediaShape, async (ctx) => {
    const buyer = await buyerOf(ctx);
    if (!buyer) return;
    const asset = await ownAsset(ctx, buyer);
    if (asset) answer(ctx, 200, assetView(cfg(), asset));
  });

  router.delete(`${BASE}/assets/:id`, mediaShape, async (ctx) => {
    const buyer = await buyerOf(ctx);
    if (!buyer) return;
    const asset = await ownAsset(ctx, buyer);
    if (!asset) return;
    const c = cfg();
    // The object first: if that fails the record stays and the delete can be repeated.
    await theStore().delete(asset.key);
    await deps.db.em.fork().nativeDelete(MediaAsset, { id: asset.id });
    const url = assetView(c, asset).url;
    let purged: boolean | null = null;
    if (c.purgeUrl) {
      purged = await fetch(c.purgeUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url, key: asset.key, assetId: asset.id }),
        signal: AbortSignal.timeout(5000),
      })
        .then((r) => r.ok)
        .catch(() => false);
      if (!purged) ctx.state.log.warn({ assetId: asset.id }, 'media cache purge failed');
    }
    answer(ctx, 200, { id: asset.id, deleted: true, purged });
  });

  // The filesystem store's objects, at {media_url}/<job id>/<file> (public capability URLs).
  router.get('/media/:job/:file', async (ctx) => {
    const c = cfg();
    const key = `${ctx.params.job}/${ctx.params.file}`;
    if (c.store !== 'fs' || !UUID.test(String(ctx.params.job)) || !/^\d{1,3}\.[a-z0-9]{2,4}$/.test(String(ctx.params.file)))
      return answer(ctx, 404, mediaError('object_not_found', 'no such object'));
    const obj = await theStore().get(key);
    if (!obj) return answer(ctx, 404, mediaError('object_not_found', 'no such object'));
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    // Served from the API's origin with the provider's content type: never run as a page.
    ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
    ctx.set('Content-Disposition', `inline; filename="${ctx.params.file}"`);
    ctx.type = obj.contentType;
    ctx.body = obj.body;
  });
}
