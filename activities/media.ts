import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { UniqueConstraintViolationException, type MikroORM } from '@mikro-orm/core';
import type { Config } from '../src/config';
import { InferenceCharge } from '../src/db/entities';
import { MediaAsset, MediaJob } from '../src/db/media';
import { mediaConfig, mediaPrice } from '../src/media/config';
import { inferenceConfig } from '../src/inference/config';
import { INFERENCE_ORGANIZATION_ID } from '../src/inference/types';
import { settleWorkflowId } from '../src/temporal/workflow-ids';
import { asProviderError, cancelJob, download, generateImages, jobStatus, MediaProviderError, submitJob } from '../src/media/provider';
import type { ByteCap } from '../src/media/artifact-download';
import { createMediaStore } from '../src/media/create-store';
import type { MediaStore } from '../src/media/store';
import { FINAL_JOB_STATES, mediaChargeId, type MediaJobInput, type MediaJobState, type ProviderJobStatus } from '../src/media/types';
import { heartbeatWhile } from './heartbeat';

export interface MediaActivityDeps {
  /** The media prices and the revenue wallet a media payment must pay (configuration). */
  config: Pick<Config, 'env'> & Partial<Pick<Config, 'RELAYER_ADDRESS' | 'production'>>;
  db: MikroORM;
}

/** A UUID derived from the job and the artifact index, so a retried store writes the same asset. */
export function assetIdOf(jobId: string, index: number): string {
  const h = createHash('sha256').update(`${jobId}:${index}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** One artifact to store: its content type, and its body once opened (bytes, or a download's capped stream). */
type Artifact = { contentType: string; open(): Promise<{ body: Buffer | ByteCap; length?: number }> };

const EXT: Record<string, string> = { 'image/png': 'png', 'video/mp4': 'mp4', 'audio/mpeg': 'mp3' };

/** Each asset's share of the price; the remainder goes to the first, so the shares add up. */
export function costShares(price: string, count: number): string[] {
  const total = BigInt(price);
  const each = total / BigInt(count);
  return Array.from({ length: count }, (_, i) => (i === 0 ? each + (total - each * BigInt(count)) : each).toString());
}

const asFailure = (err: unknown) =>
  err instanceof MediaProviderError
    ? err.retryable
      ? ApplicationFailure.retryable(err.message, 'MediaProviderUnavailable')
      : ApplicationFailure.nonRetryable(err.message, 'MediaProviderRejected')
    : err;

/**
 * Activities of the media job workflow. Each is idempotent: job and charge writes are conditional
 * updates, charge claims are inserts on the ledger's primary key, objects are put under keys derived
 * from the job (same bytes, same key) and assets are inserted under derived ids; the provider is
 * given the workflow id as its idempotency key, so a retried submission attaches to the same job.
 */
export function createMediaActivities(deps: MediaActivityDeps) {
  const cfg = () => mediaConfig(deps.config);
  let store: MediaStore | undefined;
  const theStore = () => (store ??= createMediaStore(cfg()));

  /**
   * Why the job's payment is not this service's own (undefined when it is): the authorization must
   * pay the configured price of the job, and its settlement must be the one of that authorization,
   * for the paid service, paying the whole amount to the configured revenue wallet.
   */
  const notOurPayment = (input: MediaJobInput): string | undefined => {
    const a = input.settle.paymentPayload.payload.authorization;
    const n = input.kind === 'image' ? input.n : 1;
    if (!Number.isSafeInteger(n) || n < 1 || BigInt(a.value) !== BigInt(mediaPrice(cfg(), input.kind, n)))
      return 'invalid_exact_evm_payload_authorization_value';
    const s = input.settle;
    const same = (x: string | undefined, y: string) => x?.toLowerCase() === y.toLowerCase();
    const ours =
      s.route === 'eip3009' &&
      s.network === input.network &&
      s.organizationId === INFERENCE_ORGANIZATION_ID &&
      input.chargeId === mediaChargeId(input.network, a.from, a.nonce) &&
      s.workflowId === settleWorkflowId(input.network, a.from, a.nonce) &&
      same(s.payer, a.from) &&
      BigInt(s.amount) === BigInt(a.value) &&
      same(s.payout, inferenceConfig(deps.config).revenueWallet) &&
      BigInt(s.fee) === 0n &&
      BigInt(s.platformFee ?? '0') === 0n;
    return ours ? undefined : 'invalid_payment_requirements';
  };

  /**
   * Stores the artifacts (objects first, each streamed into the store as it is opened), then records
   * the assets; returns their ids.
   */
  async function storeAll(input: MediaJobInput, artifacts: Artifact[]): Promise<string[]> {
    const costs = costShares(input.price, artifacts.length);
    const ids: string[] = [];
    const em = deps.db.em.fork();
    for (const [i, a] of artifacts.entries()) {
      const id = assetIdOf(input.jobId, i);
      const key = `${input.jobId}/${i}.${EXT[a.contentType] ?? 'bin'}`;
      const { body, length } = await a.open();
      // A download refused midway (past its byte cap) is the provider's failure: nothing is stored.
      await theStore()
        .put(key, body, a.contentType, length)
        .catch((err: unknown) => {
          throw asProviderError(err);
        });
      await em.upsert(
        MediaAsset,
        {
          id,
          buyer: input.buyer,
          jobId: input.jobId,
          kind: input.kind,
          model: input.model,
          prompt: input.prompt,
          contentType: a.contentType,
          costUsdc: costs[i]!,
          key,
          size: Buffer.isBuffer(body) ? body.length : body.bytes,
          createdAt: new Date(),
        },
        { onConflictFields: ['id'], onConflictAction: 'ignore' },
      );
      ids.push(id);
    }
    return ids;
  }

  return {
    /** Moves the job record (never out of a final state). */
    async recordMediaJob(
      jobId: string,
      state: MediaJobState,
      extra: { error?: string; progress?: number; providerJobId?: string } = {},
    ): Promise<void> {
      await deps.db.em
        .fork()
        .nativeUpdate(
          MediaJob,
          { id: jobId, state: { $nin: FINAL_JOB_STATES.filter((s) => s !== state) as string[] } },
          { state, ...extra, updatedAt: new Date() },
        );
    },

    /**
     * Claims the charge of this job's authorization in the shared ledger (one charge per
     * authorization). Not claimed, with the reason, when another media job already holds the same
     * authorization, or when the payment is not this service's price paid to its revenue wallet:
     * payer, amount and payee come from the signed authorization and configuration, never from the
     * input's other fields (a workflow started by hand may say anything there).
     */
    async claimMediaCharge(input: MediaJobInput): Promise<{ claimed: boolean; reason?: string }> {
      const refused = notOurPayment(input);
      if (refused) return { claimed: false, reason: refused };
      const a = input.settle.paymentPayload.payload.authorization;
      const em = deps.db.em.fork();
      const other = await em.findOne(MediaJob, { chargeId: input.chargeId, id: { $ne: input.jobId } });
      if (other) return { claimed: false };
      const existing = await em.findOne(InferenceCharge, { id: input.chargeId });
      if (existing) {
        // Our own claim (a retried activity), or a rejected claim of ours tried again with the same key.
        if (existing.requestId !== `media:${input.jobId}`) return { claimed: false };
        if (existing.state === 'rejected')
          await em.nativeUpdate(
            InferenceCharge,
            { id: input.chargeId, state: 'rejected' },
            { state: 'settling', error: null, updatedAt: new Date() },
          );
        return { claimed: true };
      }
      const inserted = em.upsert(
        InferenceCharge,
        {
          id: input.chargeId,
          settlementId: input.settle.workflowId,
          network: input.network,
          payer: a.from.toLowerCase(),
          amount: BigInt(a.value).toString(),
          model: `${input.kind}:${input.model}`,
          state: 'settling',
          // The job id links the charge to its job (the chat uses this column for its request id).
          requestId: `media:${input.jobId}`,
          createdAt: new Date(),
          updatedAt: new Date(),
        },
        { onConflictFields: ['id'], onConflictAction: 'ignore' },
      );
      try {
        await inserted;
      } catch (err) {
        // The settlement already backs another charge (a chat paid with the same authorization): one payment, one charge.
        if (err instanceof UniqueConstraintViolationException) return { claimed: false };
        throw err;
      }
      const row = await em.fork().findOne(InferenceCharge, { id: input.chargeId });
      return { claimed: row?.requestId === `media:${input.jobId}` };
    },

    /** Moves the charge, only from the given states (the refund workflow owns refund states). */
    async setMediaCharge(
      chargeId: string,
      state: string,
      onlyFrom: string[],
      fields: { settlementTx?: string; error?: string } = {},
    ): Promise<void> {
      await deps.db.em
        .fork()
        .nativeUpdate(InferenceCharge, { id: chargeId, state: { $in: onlyFrom } }, { state, ...fields, updatedAt: new Date() });
    },

    /** Synchronous image generation and edits: generate, store every image, record the assets. */
    async generateAndStoreImages(input: MediaJobInput): Promise<string[]> {
      let images: Buffer[];
      try {
        images = await heartbeatWhile(() =>
          generateImages(cfg(), {
            model: input.model,
            prompt: input.prompt,
            n: input.n,
            size: input.size,
            image: input.image,
          }),
        );
      } catch (err) {
        throw asFailure(err);
      }
      return heartbeatWhile(() =>
        storeAll(
          input,
          images.map((body) => ({ contentType: 'image/png', open: async () => ({ body }) })),
        ),
      );
    },

    async submitProviderJob(input: MediaJobInput): Promise<ProviderJobStatus> {
      try {
        return await heartbeatWhile(() =>
          submitJob(cfg(), { kind: input.kind, model: input.model, prompt: input.prompt, idempotencyKey: input.workflowId }),
        );
      } catch (err) {
        throw asFailure(err);
      }
    },

    async pollProviderJob(providerJobId: string): Promise<ProviderJobStatus> {
      try {
        return await jobStatus(cfg(), providerJobId);
      } catch (err) {
        throw asFailure(err);
      }
    },

    async cancelProviderJob(providerJobId: string): Promise<ProviderJobStatus> {
      try {
        return await cancelJob(cfg(), providerJobId);
      } catch (err) {
        throw asFailure(err);
      }
    },

    /** Copies a finished job's artifacts (fresh links from a new status read) into the store. */
    async storeJobArtifacts(input: MediaJobInput, providerJobId: string): Promise<string[]> {
      try {
        return await heartbeatWhile(async () => {
          const status = await jobStatus(cfg(), providerJobId);
          if (status.status !== 'succeeded' || status.output.length === 0)
            throw new MediaProviderError(`job ${providerJobId} has no output (${status.status})`, false);
          const artifacts = status.output.map((o) => ({ contentType: o.content_type, open: () => download(cfg(), o.url) }));
          return await storeAll(input, artifacts);
        });
      } catch (err) {
        throw asFailure(err);
      }
    },
  };
}

export type MediaActivities = ReturnType<typeof createMediaActivities>;
