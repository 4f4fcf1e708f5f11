import type { InferenceCharge } from '../db/entities';
import type { MediaAsset, MediaJob } from '../db/media';
import type { MediaConfig } from './config';
import { mediaUrlOf } from './store';

/** The spec's media asset, plus `jobId` and `size`. The URL is built from the key at answer time. */
export const assetView = (c: MediaConfig, a: MediaAsset) => ({
  id: a.id,
  kind: a.kind,
  model: a.model,
  prompt: a.prompt,
  contentType: a.contentType,
  costUsdc: a.costUsdc,
  createdAt: a.createdAt.toISOString(),
  url: mediaUrlOf(c, a.key),
  jobId: a.jobId,
  size: a.size,
});

/**
 * The job record (spec: "not shown beyond jobId and durable assets"). `payment.state` is the charge
 * ledger's state: settling, charged, delivered, rejected, refund_pending, refunded, refund_failed.
 */
export const jobView = (c: MediaConfig, job: MediaJob, assets: MediaAsset[], charge: InferenceCharge | null) => ({
  jobId: job.id,
  kind: job.kind,
  model: job.model,
  prompt: job.prompt,
  state: job.state,
  progress: job.progress,
  costUsdc: job.price,
  createdAt: job.createdAt.toISOString(),
  updatedAt: job.updatedAt.toISOString(),
  ...(job.error ? { error: job.error } : {}),
  payment: {
    network: job.network,
    state: charge?.state ?? 'settling',
    settlementTx: charge?.settlementTx ?? null,
    refundTx: charge?.refundTx ?? null,
  },
  assets: assets.map((a) => assetView(c, a)),
});

/** Media error body (decided: docs/decisions/media-generation.md): `{error: <code>, message}` plus context fields. */
export const mediaError = (error: string, message: string, extra: Record<string, unknown> = {}) => ({ error, message, ...extra });
