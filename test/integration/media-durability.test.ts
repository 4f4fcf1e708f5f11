import { WorkflowNotFoundError } from '@temporalio/client';
import { parseEventLogs, type Address, type Hex } from 'viem';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { MediaJob } from '../../src/db/media';
import { refundWorkflowId } from '../../src/inference/types';
import { X402State } from '../../src/temporal/search-attributes';
import { TEST_ACCOUNTS } from '../support/accounts';
import { request } from '../support/http';
import { MEDIA, startMediaHarness, VIDEO_PRICE, type MediaHarness } from '../support/media-harness';
import { readStackInfo } from '../support/stack-info';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * The media job workflow survives its worker: SIGKILL mid-job, restart, and the job finishes with
 * one provider submission and one charge; a cancelled job is refunded exactly once on chain, even
 * with the worker killed while the refund's transfer is out and not yet mined.
 */
const stack = readStackInfo();
const rpcUrl = stack.chains['base-sepolia'].rpcUrl;

describe('media job durability (sqlite)', () => {
  let h: MediaHarness;
  const relayerIndex = 1;
  const revenue = TEST_ACCOUNTS.relayers[relayerIndex]!.address;
  const buyer = TEST_ACCOUNTS.buyers[1]!;

  beforeAll(async () => {
    h = await startMediaHarness('sqlite', { relayerIndex, env: { MEDIA_POLL_INTERVAL_MS: '300' } });
  });
  afterAll(async () => {
    await h?.close();
  });

  const transfers = async (from: Address, to: Address) => {
    const logs = await h.chain.getLogs({ address: stack.usdc, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: tokenAbi, logs, eventName: 'Transfer' }).filter(
      (l) => l.args.from.toLowerCase() === from.toLowerCase() && l.args.to.toLowerCase() === to.toLowerCase(),
    );
  };
  const startVideo = async (prompt: string, idempotencyKey: string) => {
    const xPayment = await h.xPayment(buyer, VIDEO_PRICE);
    const nonce = JSON.parse(Buffer.from(xPayment, 'base64').toString('utf8')).payload.authorization.nonce as Hex;
    const res = await request('POST', `${h.api.baseUrl}${MEDIA}/video`, {
      json: { prompt },
      headers: { 'Idempotency-Key': idempotencyKey, 'X-PAYMENT': xPayment },
    });
    expect(res.status).toBe(202);
    return { jobId: res.body.jobId as string, nonce };
  };

  test('a video job survives a SIGKILLed worker: one provider submission, one charge, stored artifact', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const { jobId, nonce } = await startVideo('a slow sunrise #duration=5000', `sunrise-${Date.now()}`);
    await h.waitForJob(buyer, jobId, (j) => j.state === 'running');
    await h.restartWorker({ kill: true });
    const job = await h.waitForJob(buyer, jobId, (j) => j.state === 'succeeded', 90_000);
    expect(job.assets).toHaveLength(1);
    expect((await (await fetch(job.assets[0].url)).text()).startsWith('MP4 devnet artifact')).toBe(true);

    const row = await h.tdb.db.em.fork().findOneOrFail(MediaJob, { id: jobId });
    const submitted = (await h.providerJobs()).filter((j) => j.idempotencyKey === row.workflowId);
    expect(submitted).toHaveLength(1);
    expect(submitted[0]!.submissions).toBe(1);
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - VIDEO_PRICE);
    expect(job.payment).toMatchObject({ state: 'delivered', refundTx: null });
  });

  test('a worker SIGKILLed while the provider holds its answer to the submission: retried within seconds, one provider job, one charge', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    // The provider creates the job at once and answers the submission 45 s later (a slow provider).
    const { jobId, nonce } = await startVideo('a held submission #slow-submit=45000 #duration=500', `held-${Date.now()}`);
    const row = await waitUntil(
      'the submission at the provider',
      async () => {
        const r = await h.tdb.db.em.fork().findOne(MediaJob, { id: jobId });
        return r && (await h.providerJobs()).some((j) => j.idempotencyKey === r.workflowId) ? r : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const atKill = (await h.providerJobs()).find((j) => j.idempotencyKey === row.workflowId)!;
    expect({ submissions: atKill.submissions, answers: atKill.answers }).toEqual({ submissions: 1, answers: 0 }); // unanswered at the kill
    await h.restartWorker({ kill: true });

    // The heartbeat timeout retries the submission; nothing waits for the held answer or the
    // activity's 3 min start-to-close.
    const job = await h.waitForJob(buyer, jobId, (j) => j.state === 'succeeded', 40_000);
    expect(job.assets).toHaveLength(1);
    const jobs = (await h.providerJobs()).filter((j) => j.idempotencyKey === row.workflowId);
    // One job; the retry's submission answered, the killed one's still held when the job was done.
    expect(jobs.map((j) => ({ id: j.id, submissions: j.submissions, answers: j.answers }))).toEqual([
      { id: atKill.id, submissions: 2, answers: 1 },
    ]);
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - VIDEO_PRICE);
    expect(job.payment).toMatchObject({ state: 'delivered', refundTx: null });
  });

  test('a cancelled job is refunded exactly once, with the worker killed while the refund is in flight', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const refundsBefore = (await transfers(revenue, buyer.address)).length;
    const revenueNonceBefore = await h.chain.getTransactionCount({ address: revenue });
    const { jobId } = await startVideo('an endless film #duration=120000', `endless-${Date.now()}`);
    await h.waitForJob(buyer, jobId, (j) => j.state === 'running');
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - VIDEO_PRICE);

    const cancel = await h.asBuyer(buyer, 'DELETE', `${MEDIA}/jobs/${jobId}`);
    expect(cancel.status).toBe(202);
    expect(cancel.body).toEqual({ jobId, state: 'cancelling' });
    const row = await h.tdb.db.em.fork().findOneOrFail(MediaJob, { id: jobId });
    const refund = h.temporal.workflow.getHandle(refundWorkflowId(row.chargeId));
    // The chain stops mining, so the refund is sent and then waits for its receipt: the worker is
    // killed with the refund in flight, which the chain and the refund's workflow show while it is down.
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    try {
      await waitUntil(
        'the refund sent and waiting for its receipt',
        async () =>
          (
            await refund.describe().catch((err: unknown) => (err instanceof WorkflowNotFoundError ? undefined : Promise.reject(err)))
          )?.typedSearchAttributes.get(X402State) === 'refund_submitted',
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      await h.restartWorker({
        kill: true,
        whileDown: async () => {
          expect((await refund.describe()).status.name).toBe('RUNNING');
          expect(await transfers(revenue, buyer.address)).toHaveLength(refundsBefore);
          expect(await h.chain.getTransactionCount({ address: revenue })).toBe(revenueNonceBefore + 1);
          expect(await h.chain.getTransactionCount({ address: revenue, blockTag: 'pending' })).toBe(revenueNonceBefore + 2);
        },
      });
    } finally {
      await rpc(rpcUrl, 'evm_setAutomine', [true]);
      await rpc(rpcUrl, 'evm_mine', []); // what waited in the pool
    }

    const job = await h.waitForJob(buyer, jobId, (j) => j.payment.state === 'refunded', 90_000);
    expect(job).toMatchObject({ state: 'cancelled', error: 'cancelled by the buyer', assets: [] });
    const provider = (await h.providerJobs()).find((j) => j.idempotencyKey === row.workflowId)!;
    expect(provider.cancelledAt).toEqual(expect.any(Number));
    // The job's workflow and its refund child are closed: nothing is left to send another refund.
    expect(await h.temporal.workflow.getHandle(row.workflowId).result()).toEqual({
      state: 'cancelled',
      assetIds: [],
      error: 'cancelled by the buyer',
    });
    expect((await h.temporal.workflow.getHandle(refundWorkflowId(row.chargeId)).describe()).status.name).toBe('COMPLETED');
    // Exactly one refund transfer, of the full price; the relayer (also the revenue wallet) sent two
    // transactions, the settlement and the refund, and has none pending.
    const refunds = (await transfers(revenue, buyer.address)).slice(refundsBefore);
    expect(refunds).toHaveLength(1);
    expect(refunds[0]!.args.value).toBe(VIDEO_PRICE);
    expect(refunds[0]!.transactionHash).toBe(job.payment.refundTx);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
    expect(await h.chain.getTransactionCount({ address: revenue })).toBe(revenueNonceBefore + 2);
    expect(await h.chain.getTransactionCount({ address: revenue, blockTag: 'pending' })).toBe(revenueNonceBefore + 2);
    // A second DELETE is refused and changes nothing.
    const again = await h.asBuyer(buyer, 'DELETE', `${MEDIA}/jobs/${jobId}`);
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('job_finished');
    expect(await transfers(revenue, buyer.address)).toHaveLength(refundsBefore + 1);
    expect(await h.chain.getTransactionCount({ address: revenue, blockTag: 'pending' })).toBe(revenueNonceBefore + 2);
  });
});
