import { refundWorkflow } from './refund';
import { settlementWorkflow } from './settlement';
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  defineSignal,
  executeChild,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { MediaActivities } from '../activities/media';
import { INFERENCE_ORGANIZATION_ID, refundWorkflowId, type RefundInput, type RefundOutcome } from '../src/inference/types';
import {
  MEDIA_PAYMENT_REJECTED,
  type MediaJobInput,
  type MediaJobOutcome,
  type MediaJobState,
  type ProviderJobStatus,
} from '../src/media/types';
import { settlementRejection, type SettleOutcome } from '../src/settle/types';
import { x402SearchAttributes } from '../src/temporal/search-attributes';
import { x402States } from './x402-state';

// Records: cheap and safe to repeat; retried until the database answers.
const { recordMediaJob, claimMediaCharge, setMediaCharge } = proxyActivities<MediaActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
// Provider calls: a few attempts for transient errors; then the job has failed (and is refunded). They
// heartbeat while the provider works, so an attempt a killed worker held is retried within seconds,
// not after the 3 minutes a slow provider may take.
const { generateAndStoreImages, submitProviderJob, storeJobArtifacts } = proxyActivities<MediaActivities>({
  startToCloseTimeout: '3m',
  heartbeatTimeout: '10s',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumInterval: '30s',
    maximumAttempts: 5,
    nonRetryableErrorTypes: ['MediaProviderRejected'],
  },
});
// Status reads and cancellation: retried for as long as it takes (the job's own timeout bounds it).
const { pollProviderJob, cancelProviderJob } = proxyActivities<MediaActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', nonRetryableErrorTypes: ['MediaProviderRejected'] },
});

export const cancelMediaJob = defineSignal('cancelMediaJob');

/**
 * One paid media request, id `media:<buyer>:<idempotency-key>` (docs/decisions/media-generation.md):
 * claim the charge in the shared ledger, settle the payment through the settlement
 * workflow (a child keyed by the authorization), then generate. Images are generated and stored in
 * one activity; video and music are submitted to the provider (its idempotency key is this
 * workflow's id), polled on durable timers, and their artifacts are stored before the job reports
 * success. A failed job, or one whose cancellation the provider confirmed, is refunded through the
 * refund workflow of its charge (at most one refund per charge, ever).
 */
export async function mediaJobWorkflow(input: MediaJobInput): Promise<MediaJobOutcome> {
  let cancelRequested = false;
  setHandler(cancelMediaJob, () => {
    cancelRequested = true;
  });
  const state = x402States('media');
  let current: MediaJobState = 'paying';
  const move = async (next: MediaJobState, extra: Parameters<typeof recordMediaJob>[2] = {}) => {
    current = next;
    state(next);
    await recordMediaJob(input.jobId, next, extra);
  };
  const rejectPayment = async (reason: string): Promise<never> => {
    await setMediaCharge(input.chargeId, 'rejected', ['settling'], { error: reason });
    await move('payment_rejected', { error: reason });
    // Failed, so the same idempotency key may run again with a corrected payment (reuse policy).
    throw ApplicationFailure.nonRetryable(reason, MEDIA_PAYMENT_REJECTED, { reason });
  };

  await move('paying');
  const claim = await claimMediaCharge(input);
  if (!claim.claimed) return rejectPayment(claim.reason ?? 'authorization_reused');

  let settled: SettleOutcome;
  try {
    settled = await executeChild(settlementWorkflow, {
      workflowId: input.settle.workflowId,
      args: [input.settle],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      typedSearchAttributes: x402SearchAttributes({
        kind: 'settle',
        network: input.network,
        payer: input.buyer,
        state: 'verifying',
        organization: INFERENCE_ORGANIZATION_ID,
      }),
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return rejectPayment('authorization_reused');
    const rejected = settlementRejection(err);
    if (rejected) return rejectPayment(rejected.response?.errorReason ?? 'settlement_rejected');
    throw err;
  }
  if (settled.organizationId !== INFERENCE_ORGANIZATION_ID) return rejectPayment('authorization_reused');
  if (!settled.response.success) return rejectPayment(settled.response.errorReason ?? 'settlement_failed');
  await setMediaCharge(input.chargeId, 'charged', ['settling'], { settlementTx: settled.response.transaction });

  const refund = async (state: 'failed' | 'cancelled', reason: string): Promise<MediaJobOutcome> => {
    await move(state, { error: reason });
    const refundInput: RefundInput = {
      workflowId: refundWorkflowId(input.chargeId),
      chargeId: input.chargeId,
      settlementId: input.settle.workflowId,
      network: input.network,
      payer: input.buyer,
      amount: input.price,
      asset: input.asset,
      revenueWallet: input.revenueWallet,
      reason: `media job ${state}: ${reason}`,
      requestId: input.requestId,
    };
    await executeChild(refundWorkflow, {
      workflowId: refundInput.workflowId,
      args: [refundInput],
      typedSearchAttributes: x402SearchAttributes({
        kind: 'refund',
        network: input.network,
        payer: input.buyer,
        state: 'refund_pending',
        organization: INFERENCE_ORGANIZATION_ID,
      }),
    }).catch((err) => {
      // Attached elsewhere already (a refund of this charge exists): the ledger has its outcome.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      return undefined as RefundOutcome | undefined;
    });
    return { state, assetIds: [], error: reason };
  };
  const failureMessage = (err: unknown) => (err instanceof ActivityFailure && err.cause ? err.cause.message : String(err));
  const succeed = async (assetIds: string[]): Promise<MediaJobOutcome> => {
    await setMediaCharge(input.chargeId, 'delivered', ['charged']);
    await move('succeeded', { progress: 100 });
    return { state: 'succeeded', assetIds };
  };

  if (input.kind === 'image') {
    await move('running');
    try {
      return await succeed(await generateAndStoreImages(input));
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      return refund('failed', failureMessage(err));
    }
  }

  // Cancelled while the payment was settling: nothing was submitted, so nothing to confirm.
  if (cancelRequested) return refund('cancelled', 'cancelled by the buyer');
  await move('submitted');
  let status: ProviderJobStatus;
  try {
    status = await submitProviderJob(input);
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    return refund('failed', failureMessage(err));
  }
  const providerJobId = status.id;
  await move('submitted', { providerJobId });
  const deadline = Date.now() + input.jobTimeoutMs;
  let cancelSent = false;
  let timedOut = false;
  let progress = -1;
  let interval = input.pollIntervalMs;
  for (;;) {
    if (status.status === 'succeeded') break;
    if (status.status === 'failed') return refund('failed', status.error ?? 'the provider reported a failure');
    if (status.status === 'cancelled')
      return refund(
        timedOut ? 'failed' : 'cancelled',
        timedOut ? `the job took longer than ${input.jobTimeoutMs} ms` : 'cancelled by the buyer',
      );
    if (!cancelSent && (cancelRequested || Date.now() >= deadline)) {
      timedOut = !cancelRequested;
      cancelSent = true;
      if (!timedOut) await move('cancelling');
      // The refund waits for the provider to confirm: a job that finished first is delivered.
      status = await cancelProviderJob(providerJobId);
      continue;
    }
    if (status.status === 'running' && status.progress !== progress && (current as MediaJobState) !== 'cancelling') {
      progress = status.progress;
      await move('running', { progress });
    }
    // A durable timer; a cancellation request wakes the loop at once. The interval grows (up to ten
    // times the configured one) so a long job keeps its history short.
    await condition(() => cancelRequested && !cancelSent, interval);
    interval = Math.min(Math.round(interval * 1.25), input.pollIntervalMs * 10);
    status = await pollProviderJob(providerJobId);
  }

  await move('storing');
  try {
    return await succeed(await storeJobArtifacts(input, providerJobId));
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    return refund('failed', `storing the artifacts failed: ${failureMessage(err)}`);
  }
}
