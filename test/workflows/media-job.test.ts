import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { randomBytes } from 'node:crypto';
import { INFERENCE_ORGANIZATION_ID, type RefundInput } from '../../src/inference/types';
import { MEDIA_PAYMENT_REJECTED, type MediaJobInput, type ProviderJobStatus } from '../../src/media/types';
import type { Eip3009SettleInput } from '../../src/schemes/eip3009/types';
import { cancelMediaJob, mediaJobWorkflow } from '../../workflows/media-job';
import { recorded, untilState, upsertedStates } from '../support/activity-calls';
import { HASH, input as settleInput, mocks as settlementMocks, rejected } from '../support/settlement-workflow-mocks';
import { useWorkflowTestEnv } from '../support/workflow-env';

/**
 * One paid media job (workflows/media-job.ts) against mocked activities, its settlement and refund
 * children included (their activities mocked too): the charge claimed, the payment settled once, then
 * images generated, or a provider job submitted, polled on timers and stored. A payment that is not
 * ours or does not settle is rejected with nothing to refund; a job that fails, times out or that the
 * buyer cancels after paying is refunded once, through the refund workflow of its charge.
 */
describe('mediaJobWorkflow (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const BUYER = '0xAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAa';
  const REFUND_TX = `0x${'71'.repeat(32)}`;
  let n = Math.floor(Math.random() * 1e9);
  const jobInput = (extra: Partial<MediaJobInput> = {}): MediaJobInput => {
    const key = randomBytes(6).toString('hex');
    return {
      workflowId: `media:${BUYER}:${key}`,
      jobId: `job-${key}`,
      buyer: BUYER,
      kind: 'video',
      model: 'veo-test',
      prompt: 'a cat',
      n: 1,
      price: '250000',
      network: 'base-sepolia',
      asset: `0x${'72'.repeat(20)}`,
      chargeId: `charge-${key}`,
      revenueWallet: `0x${'73'.repeat(20)}`,
      settle: { ...settleInput(++n), organizationId: INFERENCE_ORGANIZATION_ID } as Eip3009SettleInput,
      pollIntervalMs: 50,
      jobTimeoutMs: 60_000,
      requestId: 'req-m',
      ...extra,
    };
  };
  const status = (s: ProviderJobStatus['status'], progress = 0, error?: string): ProviderJobStatus => ({
    id: 'pj-1',
    status: s,
    progress,
    output: [],
    ...(error ? { error } : {}),
  });
  type Script = {
    claim?: () => unknown;
    images?: () => unknown;
    submit?: () => unknown;
    polls?: ProviderJobStatus[];
    cancel?: () => unknown;
    store?: () => unknown;
    settle?: Parameters<typeof settlementMocks>[0];
  };
  const mocks = (script: Script = {}) => {
    let polls = 0;
    const settlement = settlementMocks(script.settle);
    const media = recorded({
      recordMediaJob: (_jobId: string, _state: string, _extra?: unknown) => undefined,
      claimMediaCharge: (_i: MediaJobInput) => (script.claim ?? (() => ({ claimed: true })))(),
      setMediaCharge: (_chargeId: string, _state: string, _from: string[], _fields?: unknown) => undefined,
      generateAndStoreImages: (_i: MediaJobInput) => (script.images ?? (() => ['asset-1', 'asset-2']))(),
      submitProviderJob: (_i: MediaJobInput) => (script.submit ?? (() => status('queued')))(),
      pollProviderJob: (_id: string) => {
        const list = script.polls ?? [status('succeeded', 100)];
        return list[Math.min(polls++, list.length - 1)];
      },
      cancelProviderJob: (_id: string) => (script.cancel ?? (() => status('cancelled')))(),
      storeJobArtifacts: (_i: MediaJobInput, _id: string) => (script.store ?? (() => ['asset-v']))(),
      // The refund child's activities.
      markRefundPending: (_i: RefundInput) => undefined,
      claimStaleCharge: (_i: RefundInput) => true,
      chargeSettlement: (_i: RefundInput) => ({ settled: true }),
      sendRefund: (_i: RefundInput) => ({ hash: REFUND_TX }),
      awaitRefundReceipt: (_i: RefundInput) => ({ status: 'success' }),
      recordRefundOutcome: (_o: unknown) => undefined,
    });
    return { ...media, settlement, activities: { ...settlement.activities, ...media.activities } };
  };
  const outcome = async (handle: WorkflowHandle) => {
    const result = await handle.result().then(
      (value) => ({ value, error: undefined }),
      (error: unknown) => ({ value: undefined, error }),
    );
    return { ...result, states: await upsertedStates(handle) };
  };
  const run = (m: ReturnType<typeof mocks>, i: MediaJobInput) =>
    t.withWorker(m.activities, async (taskQueue) =>
      outcome(await t.env.client.workflow.start(mediaJobWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] })),
    );
  const refundOf = (i: MediaJobInput, reason: string): RefundInput => ({
    workflowId: `refund:${i.chargeId}`,
    chargeId: i.chargeId,
    settlementId: i.settle.workflowId,
    network: 'base-sepolia',
    payer: BUYER,
    amount: '250000',
    asset: i.asset,
    revenueWallet: i.revenueWallet,
    reason,
    requestId: 'req-m',
  });
  const refundCalls = (r: RefundInput) => [
    { name: 'markRefundPending', args: [r] },
    { name: 'chargeSettlement', args: [r] },
    { name: 'sendRefund', args: [r] },
    { name: 'awaitRefundReceipt', args: [r] },
    { name: 'recordRefundOutcome', args: [{ chargeId: r.chargeId, state: 'refunded', refundTx: REFUND_TX }] },
  ];
  const settledOnce = (m: ReturnType<typeof mocks>) => expect(m.settlement.calls).toMatchObject({ settlePayment: 1, submit: 1 });

  test('image: claimed, settled once, generated and stored; the charge delivered, nothing refunded', async () => {
    const m = mocks();
    const i = jobInput({ kind: 'image' });
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'succeeded', assetIds: ['asset-1', 'asset-2'] });
    settledOnce(m);
    expect(m.calls).toEqual([
      { name: 'recordMediaJob', args: [i.jobId, 'paying', {}] },
      { name: 'claimMediaCharge', args: [i] },
      { name: 'setMediaCharge', args: [i.chargeId, 'charged', ['settling'], { settlementTx: HASH }] },
      { name: 'recordMediaJob', args: [i.jobId, 'running', {}] },
      { name: 'generateAndStoreImages', args: [i] },
      { name: 'setMediaCharge', args: [i.chargeId, 'delivered', ['charged']] },
      { name: 'recordMediaJob', args: [i.jobId, 'succeeded', { progress: 100 }] },
    ]);
    expect(out.states).toEqual(['paying', 'running', 'succeeded']);
  });

  test('the charge not claimed (authorization used by another job): payment_rejected, nothing settled or refunded', async () => {
    const m = mocks({ claim: () => ({ claimed: false }) });
    const i = jobInput();
    const out = await run(m, i);
    expect(out.error).toBeInstanceOf(WorkflowFailedError);
    expect((out.error as WorkflowFailedError).cause).toMatchObject({
      type: MEDIA_PAYMENT_REJECTED,
      message: 'authorization_reused',
      details: [{ reason: 'authorization_reused' }],
    });
    expect(m.settlement.calls.settlePayment).toBe(0);
    expect(m.names()).toEqual(['recordMediaJob', 'claimMediaCharge', 'setMediaCharge', 'recordMediaJob']);
    expect(m.calls.slice(-2)).toEqual([
      { name: 'setMediaCharge', args: [i.chargeId, 'rejected', ['settling'], { error: 'authorization_reused' }] },
      { name: 'recordMediaJob', args: [i.jobId, 'payment_rejected', { error: 'authorization_reused' }] },
    ]);
    expect(out.states).toEqual(['paying', 'payment_rejected']);
  });

  test('a payment the settlement rejects: payment_rejected with its reason, no job, no refund', async () => {
    const m = mocks({ settle: { verify: [() => ({ isValid: false, response: rejected('insufficient_funds') })] } });
    const i = jobInput();
    const out = await run(m, i);
    expect((out.error as WorkflowFailedError).cause).toMatchObject({ type: MEDIA_PAYMENT_REJECTED, message: 'insufficient_funds' });
    expect(m.settlement.calls).toMatchObject({ settlePayment: 1, submit: 0 });
    expect(m.names()).toEqual(['recordMediaJob', 'claimMediaCharge', 'setMediaCharge', 'recordMediaJob']);
    expect(m.argsOf('setMediaCharge')).toEqual([[i.chargeId, 'rejected', ['settling'], { error: 'insufficient_funds' }]]);
  });

  test('a settlement of another organization (the authorization paid someone else): authorization_reused, nothing generated', async () => {
    const m = mocks();
    const i = jobInput();
    i.settle = { ...i.settle, organizationId: 'org-1' };
    const out = await run(m, i);
    expect((out.error as WorkflowFailedError).cause).toMatchObject({ type: MEDIA_PAYMENT_REJECTED, message: 'authorization_reused' });
    expect(m.argsOf('submitProviderJob')).toHaveLength(0);
    expect(m.argsOf('sendRefund')).toHaveLength(0);
  });

  test('a payment that reverted on chain: payment_rejected with the reason, nothing refunded', async () => {
    const m = mocks({ settle: { confirm: [() => rejected('invalid_transaction_state')] } });
    const out = await run(m, jobInput());
    expect((out.error as WorkflowFailedError).cause).toMatchObject({ type: MEDIA_PAYMENT_REJECTED, message: 'invalid_transaction_state' });
    expect(m.argsOf('sendRefund')).toHaveLength(0);
    expect(out.states).toEqual(['paying', 'payment_rejected']);
  });

  test('image generation the provider refuses: failed, refunded once to the charge through its refund workflow', async () => {
    const m = mocks({
      images: () => {
        throw ApplicationFailure.nonRetryable('content policy', 'MediaProviderRejected');
      },
    });
    const i = jobInput({ kind: 'image' });
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'failed', assetIds: [], error: 'content policy' });
    expect(m.argsOf('generateAndStoreImages')).toHaveLength(1);
    expect(m.calls.slice(4)).toEqual([
      { name: 'generateAndStoreImages', args: [i] },
      { name: 'recordMediaJob', args: [i.jobId, 'failed', { error: 'content policy' }] },
      ...refundCalls(refundOf(i, 'media job failed: content policy')),
    ]);
    expect(m.argsOf('setMediaCharge')).toEqual([[i.chargeId, 'charged', ['settling'], { settlementTx: HASH }]]);
    expect(out.states).toEqual(['paying', 'running', 'failed']);
  });

  test('video: submitted, polled on timers until it succeeds, artifacts stored, delivered; nothing refunded', async () => {
    const m = mocks({ polls: [status('running', 40), status('running', 40), status('succeeded', 100)] });
    const i = jobInput();
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'succeeded', assetIds: ['asset-v'] });
    settledOnce(m);
    expect(m.calls.slice(3)).toEqual([
      { name: 'recordMediaJob', args: [i.jobId, 'submitted', {}] },
      { name: 'submitProviderJob', args: [i] },
      { name: 'recordMediaJob', args: [i.jobId, 'submitted', { providerJobId: 'pj-1' }] },
      { name: 'pollProviderJob', args: ['pj-1'] },
      { name: 'recordMediaJob', args: [i.jobId, 'running', { progress: 40 }] },
      { name: 'pollProviderJob', args: ['pj-1'] },
      { name: 'pollProviderJob', args: ['pj-1'] },
      { name: 'recordMediaJob', args: [i.jobId, 'storing', {}] },
      { name: 'storeJobArtifacts', args: [i, 'pj-1'] },
      { name: 'setMediaCharge', args: [i.chargeId, 'delivered', ['charged']] },
      { name: 'recordMediaJob', args: [i.jobId, 'succeeded', { progress: 100 }] },
    ]);
    expect(out.states).toEqual(['paying', 'submitted', 'submitted', 'running', 'storing', 'succeeded']);
  });

  test('video the provider reports failed: refunded once with its error', async () => {
    const m = mocks({ polls: [status('failed', 0, 'model crashed')] });
    const i = jobInput();
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'failed', assetIds: [], error: 'model crashed' });
    expect(m.calls.slice(-6)).toEqual([
      { name: 'recordMediaJob', args: [i.jobId, 'failed', { error: 'model crashed' }] },
      ...refundCalls(refundOf(i, 'media job failed: model crashed')),
    ]);
    expect(m.argsOf('storeJobArtifacts')).toHaveLength(0);
  });

  test('artifacts that cannot be stored: failed and refunded once', async () => {
    const m = mocks({
      store: () => {
        throw ApplicationFailure.nonRetryable('job pj-1 has no output (succeeded)', 'MediaProviderRejected');
      },
    });
    const i = jobInput();
    const out = await run(m, i);
    const error = 'storing the artifacts failed: job pj-1 has no output (succeeded)';
    expect(out.value).toEqual({ state: 'failed', assetIds: [], error });
    expect(m.argsOf('sendRefund')).toEqual([[refundOf(i, `media job failed: ${error}`)]]);
    expect(m.argsOf('setMediaCharge').map((a) => a[1])).toEqual(['charged']);
  });

  test('cancelled by the buyer while running: cancelling, the provider confirms, cancelled and refunded once', async () => {
    const m = mocks({ polls: [status('running', 10)] });
    const i = jobInput();
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(mediaJobWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      expect(await untilState(handle, 'running')).toBe('running');
      await handle.signal(cancelMediaJob);
      const out = await outcome(handle);
      expect(out.value).toEqual({ state: 'cancelled', assetIds: [], error: 'cancelled by the buyer' });
      expect(out.states.slice(-3)).toEqual(['running', 'cancelling', 'cancelled']);
    });
    expect(m.argsOf('cancelProviderJob')).toEqual([['pj-1']]);
    expect(m.argsOf('sendRefund')).toEqual([[refundOf(i, 'media job cancelled: cancelled by the buyer')]]);
    expect(m.argsOf('storeJobArtifacts')).toHaveLength(0);
  });

  test('cancelled, but the provider finished first: delivered, not refunded', async () => {
    const m = mocks({ polls: [status('running', 10)], cancel: () => status('succeeded', 100) });
    const i = jobInput();
    await t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(mediaJobWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      expect(await untilState(handle, 'running')).toBe('running');
      await handle.signal(cancelMediaJob);
      expect((await outcome(handle)).value).toEqual({ state: 'succeeded', assetIds: ['asset-v'] });
    });
    expect(m.argsOf('cancelProviderJob')).toHaveLength(1);
    expect(m.argsOf('storeJobArtifacts')).toEqual([[i, 'pj-1']]);
    expect(m.argsOf('sendRefund')).toHaveLength(0);
  });

  test('a job past its timeout: cancelled at the provider, then failed (not cancelled) and refunded once', async () => {
    const m = mocks({ polls: [status('running', 10)] });
    const i = jobInput({ jobTimeoutMs: 500 });
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'failed', assetIds: [], error: 'the job took longer than 500 ms' });
    expect(m.argsOf('cancelProviderJob')).toEqual([['pj-1']]);
    expect(m.argsOf('sendRefund')).toEqual([[refundOf(i, 'media job failed: the job took longer than 500 ms')]]);
    expect(out.states).not.toContain('cancelling');
    expect(out.states.at(-1)).toBe('failed');
  });
});
