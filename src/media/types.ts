import type { EvmNetworkId } from '../chains/networks';
import type { Eip3009SettleInput } from '../schemes/eip3009/types';

/**
 * Shared by the API, the media job workflow and its activities (pure: workflows import it).
 */

export type MediaKindName = 'image' | 'video' | 'music';

/**
 * Job states (docs/decisions/media-generation.md):
 * paying → (payment_rejected) | submitted → running → storing → succeeded,
 * or failed / cancelling → cancelled. The refund of a failed or cancelled job is tracked on its
 * charge (`refund_pending` → `refunded`), not as a job state.
 */
export const MEDIA_JOB_STATES = [
  'paying',
  'payment_rejected',
  'submitted',
  'running',
  'storing',
  'succeeded',
  'failed',
  'cancelling',
  'cancelled',
] as const;
export type MediaJobState = (typeof MEDIA_JOB_STATES)[number];
export const FINAL_JOB_STATES: readonly MediaJobState[] = ['payment_rejected', 'succeeded', 'failed', 'cancelled'];

/** Workflow id of one paid media request: the buyer's idempotency key (DESIGN §1). */
export const mediaWorkflowId = (buyer: string, idempotencyKey: string) => `media:${buyer.toLowerCase()}:${idempotencyKey}`;

/** Charge id of a media request in the shared charge ledger: the authorization it was paid with. */
export const mediaChargeId = (network: string, payer: string, nonce: string) =>
  `media:${network}:${payer.toLowerCase()}:${nonce.toLowerCase()}`;

/** Failure type of a job whose payment was refused before any transfer (the key may be retried). */
export const MEDIA_PAYMENT_REJECTED = 'MediaPaymentRejected';

export interface MediaJobInput {
  workflowId: string;
  jobId: string;
  buyer: string;
  kind: MediaKindName;
  model: string;
  prompt: string;
  /** Images: how many, and the size; edits: the input image (base64 PNG). */
  n: number;
  size?: string;
  image?: string;
  price: string;
  network: EvmNetworkId;
  asset: string;
  chargeId: string;
  revenueWallet: string;
  settle: Eip3009SettleInput;
  pollIntervalMs: number;
  jobTimeoutMs: number;
  requestId?: string;
}

export interface MediaJobOutcome {
  state: MediaJobState;
  assetIds: string[];
  error?: string;
}

/** What the provider says about an asynchronous job. */
export interface ProviderJobStatus {
  id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  progress: number;
  error?: string;
  output: { url: string; content_type: string }[];
}
