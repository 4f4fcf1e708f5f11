import { createHash, randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { z } from 'zod';
import type { ServiceDeps } from '../deps';
import type { EvmNetwork } from '../chains/networks';
import { MediaJob } from '../db/media';
import { inferenceConfig } from '../inference/config';
import { INFERENCE_ORGANIZATION_ID } from '../inference/types';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { startOrAttach } from '../temporal/start-or-attach';
import { mediaJobWorkflow } from '../../workflows/media-job';
import { settleWorkflowId } from '../temporal/workflow-ids';
import type { ExactEvmPayload, PaymentRequirements } from '../x402/schemas';
import { x402SearchAttributes } from '../temporal/search-attributes';
import { mediaPrice, type MediaConfig } from './config';
import { mediaChargeId, mediaWorkflowId, type MediaJobInput, type MediaKindName } from './types';

/** Request bodies of the media POST routes (decided: docs/decisions/media-generation.md). */
const prompt = z.string().trim().min(1, 'prompt must not be empty').max(4000);
const size = z.enum(['16x16', '32x32', '64x64']).optional();
export const BODY_SCHEMAS = {
  images: z.object({ prompt, n: z.number().int().min(1).max(4).default(1), size }).strict(),
  edits: z
    .object({
      prompt,
      image: z
        .string()
        .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'image must be a base64 PNG')
        .max(700_000),
      n: z.number().int().min(1).max(4).default(1),
      size,
    })
    .strict()
    .refine(
      (b) =>
        Buffer.from(b.image.slice(0, 12), 'base64')
          .subarray(0, 8)
          .equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
      {
        message: 'image must be a base64 PNG',
        path: ['image'],
      },
    ),
  video: z.object({ prompt }).strict(),
  music: z.object({ prompt }).strict(),
};
export type MediaRoute = keyof typeof BODY_SCHEMAS;
export const KIND_OF: Record<MediaRoute, MediaKindName> = { images: 'image', edits: 'image', video: 'video', music: 'music' };

export const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,64}$/;

const ZERO = '0x0000000000000000000000000000000000000000';

/** Price of a request (mediaPrice). */
export const priceOf = (c: MediaConfig, route: MediaRoute, body: { n?: number }) => mediaPrice(c, KIND_OF[route], body.n);

export function mediaRequirements(
  deps: ServiceDeps,
  c: MediaConfig,
  network: EvmNetwork,
  route: MediaRoute,
  price: string,
  resource: string,
): PaymentRequirements {
  const ic = inferenceConfig(deps.config);
  const kind = KIND_OF[route];
  return {
    scheme: 'exact',
    network: network.id,
    maxAmountRequired: price,
    resource,
    description:
      kind === 'image'
        ? `Image generation (${c.models.image})`
        : `${kind === 'video' ? 'Video' : 'Music'} generation job (${c.models[kind]})`,
    mimeType: 'application/json',
    payTo: network.facilitator!,
    maxTimeoutSeconds: ic.paymentTimeoutSeconds,
    asset: network.usdc!,
    extra: { name: ic.usdcName, version: ic.usdcVersion },
  };
}

/** The same key must carry the same request: route and body, hashed. */
export const fingerprintOf = (route: MediaRoute, body: unknown) =>
  createHash('sha256')
    .update(`${route}\n${JSON.stringify(body)}`)
    .digest('hex');

const ORPHAN_AFTER_MS = 30_000;

export type JobClaim = { job: MediaJob; start: boolean } | { conflict: true };

/**
 * Finds or claims the job record of (buyer, idempotency key). A new key inserts the record (its
 * unique workflow id is the durable idempotency record); a key whose payment was rejected is taken
 * over by the new payment; any other existing job is attached to, without charging again.
 */
export async function claimJob(
  deps: ServiceDeps,
  hasWorkflow: (workflowId: string) => Promise<boolean>,
  fields: {
    workflowId: string;
    buyer: string;
    kind: MediaKindName;
    model: string;
    prompt: string;
    fingerprint: string;
    price: string;
    network: string;
    chargeId: string;
  },
): Promise<JobClaim> {
  const em = deps.db.em.fork();
  for (let attempt = 0; attempt < 3; attempt++) {
    const existing = await em.findOne(MediaJob, { workflowId: fields.workflowId });
    if (existing) {
      if (existing.fingerprint !== fields.fingerprint) return { conflict: true };
      // A job left in `paying` without a workflow (the API died between the insert and the start)
      // is taken over like a rejected one, once it is old enough not to be a start in progress.
      const orphan =
        existing.state === 'paying' &&
        Date.now() - existing.updatedAt.getTime() > ORPHAN_AFTER_MS &&
        !(await hasWorkflow(existing.workflowId));
      if (existing.state !== 'payment_rejected' && !orphan) return { job: existing, start: false };
      const taken = await em.nativeUpdate(
        MediaJob,
        { id: existing.id, state: existing.state, updatedAt: existing.updatedAt },
        { state: 'paying', chargeId: fields.chargeId, error: null, updatedAt: new Date() },
      );
      if (taken === 1) return { job: (await em.fork().findOne(MediaJob, { id: existing.id }))!, start: true };
      continue;
    }
    const now = new Date();
    const job = { id: randomUUID(), ...fields, state: 'paying', progress: 0, createdAt: now, updatedAt: now };
    try {
      await em.insert(MediaJob, job);
      return { job: Object.assign(new MediaJob(), job), start: true };
    } catch (err) {
      if (!(err instanceof UniqueConstraintViolationException)) throw err;
    }
  }
  throw new Error(`could not claim media job ${fields.workflowId}`);
}

/** Starts (or attaches to) the job's workflow. */
export async function startMediaJob(
  deps: ServiceDeps,
  c: MediaConfig,
  req: {
    job: MediaJob;
    network: EvmNetwork;
    payload: ExactEvmPayload;
    requirements: PaymentRequirements;
    n: number;
    size?: string;
    image?: string;
    requestId: string;
  },
) {
  const { job } = req;
  const a = req.payload.payload.authorization;
  const ic = inferenceConfig(deps.config);
  const input: MediaJobInput = {
    workflowId: job.workflowId,
    jobId: job.id,
    buyer: job.buyer,
    kind: job.kind as MediaKindName,
    model: job.model,
    prompt: job.prompt,
    n: req.n,
    size: req.size,
    image: req.image,
    price: job.price,
    network: req.network.id,
    asset: req.network.usdc!,
    chargeId: job.chargeId,
    revenueWallet: ic.revenueWallet,
    settle: {
      workflowId: settleWorkflowId(req.network.id, a.from.toLowerCase(), a.nonce),
      requestId: req.requestId,
      organizationId: INFERENCE_ORGANIZATION_ID,
      apiKeyId: '',
      route: 'eip3009',
      network: req.network.id,
      payer: a.from,
      amount: a.value,
      paymentPayload: req.payload,
      paymentRequirements: req.requirements,
      payout: ic.revenueWallet,
      fee: '0',
      feeRecipient: ZERO,
    },
    pollIntervalMs: c.pollIntervalMs,
    jobTimeoutMs: c.jobTimeoutMs,
    requestId: req.requestId,
  };
  await awaitPreviousRun(deps, job.workflowId);
  return startOrAttach(deps.temporal, mediaJobWorkflow, {
    workflowId: job.workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    searchAttributes: x402SearchAttributes({
      kind: 'media',
      network: req.network.id,
      payer: job.buyer,
      state: 'paying',
      organization: INFERENCE_ORGANIZATION_ID,
    }),
    memo: { requestId: req.requestId, jobId: job.id },
    onStart: observeWorkflowStart(deps, mediaJobWorkflow.name, req.requestId, job.workflowId),
  });
}

/**
 * A key is only taken over once its job recorded `payment_rejected`, which the workflow writes just
 * before it fails; a new payment arriving in that instant must not attach to the run that is
 * ending (its job would then wait in `paying` with no workflow). Wait (bounded) for it to close.
 */
async function awaitPreviousRun(deps: ServiceDeps, workflowId: string): Promise<void> {
  const handle = deps.temporal.workflow.getHandle(workflowId);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const status = await handle.describe().then(
      (d) => d.status.name,
      () => 'NONE',
    );
    if (status !== 'RUNNING') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export { mediaChargeId, mediaWorkflowId };
