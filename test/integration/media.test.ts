import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createWalletClient, defineChain, http, parseEventLogs, type Address } from 'viem';
import { wrapFetchWithPayment } from 'x402-fetch';
import { InferenceCharge } from '../../src/db/entities';
import { MediaJob } from '../../src/db/media';
import { buyerAuthHeaders } from '../../src/media/buyer-auth-client';
import { mediaWorkflowId } from '../../src/media/types';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { request, startApi, type RunningApi } from '../support/http';
import {
  IMAGE_PRICE,
  MEDIA,
  MUSIC_PRICE,
  startMediaHarness,
  startPurgeRecorder,
  VIDEO_PRICE,
  type MediaHarness,
} from '../support/media-harness';
import { fingerprintOf } from '../../src/media/requests';
import { readStackInfo } from '../support/stack-info';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { decodePaymentResponseHeader, v2Payer } from '../support/x402-v2';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * Media generation end to end on the real stack: the media provider double (real PNGs, asynchronous
 * jobs), Temporal, a worker process, anvil with our contracts, the real API over HTTP, the
 * filesystem store served by the API, x402-fetch paying for images, buyer-signed reads.
 */
const stack = readStackInfo();
const ARTIFACT_CAP = 1024 * 1024;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe.each(oneDbKind('postgres'))('media generation (%s)', (kind) => {
  let h: MediaHarness;
  let purge: Awaited<ReturnType<typeof startPurgeRecorder>>;
  const relayerIndex = 2;
  const revenue = TEST_ACCOUNTS.relayers[relayerIndex]!.address;
  const buyer = TEST_ACCOUNTS.buyers[3]!;
  const stranger = TEST_ACCOUNTS.buyers[2]!;
  let payingFetch: typeof fetch;
  const imagesUrl = () => `${h.api.baseUrl}${MEDIA}/images`;
  const key = (name: string) => `${kind}-${name}-${Date.now()}`;

  beforeAll(async () => {
    purge = await startPurgeRecorder();
    h = await startMediaHarness(kind, {
      relayerIndex,
      env: {
        MEDIA_PURGE_URL: purge.url,
        // The double's own host (127.0.0.1, its devnet exception) and a name that resolves to loopback;
        // an artifact of 1 MiB at most.
        MEDIA_ARTIFACT_HOSTS: '127.0.0.1,localhost',
        MEDIA_ARTIFACT_MAX_BYTES: String(ARTIFACT_CAP),
      },
    });
    const chain = defineChain({
      id: 84532,
      name: 'base-sepolia (devnet)',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [stack.chains['base-sepolia'].rpcUrl] } },
    });
    const wallet = createWalletClient({ account: buyer, chain, transport: http(stack.chains['base-sepolia'].rpcUrl) });
    payingFetch = wrapFetchWithPayment(fetch, wallet as any) as typeof fetch;
  });
  afterAll(async () => {
    await h?.close();
    await purge?.stop();
  });

  const postImages = (idempotencyKey: string | undefined, body: unknown) =>
    payingFetch(imagesUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}) },
      body: JSON.stringify(body),
    });
  const refundsTo = async (to: Address) => {
    const logs = await h.chain.getLogs({ address: stack.usdc, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: tokenAbi, logs, eventName: 'Transfer' }).filter(
      (l) => l.args.from.toLowerCase() === revenue.toLowerCase() && l.args.to.toLowerCase() === to.toLowerCase(),
    );
  };

  test('the request is validated before payment: Idempotency-Key, body, then the 402 challenge', async () => {
    const post = (headers: Record<string, string>, json: unknown) => request('POST', imagesUrl(), { json, headers });
    const noKey = await post({}, { prompt: 'a lighthouse' });
    expect(noKey.status).toBe(400);
    expect(noKey.body).toEqual({
      error: 'idempotency_key_required',
      message: 'send an Idempotency-Key header: the same key returns the same result and is charged once',
    });
    const badKey = await post({ 'Idempotency-Key': 'has spaces' }, { prompt: 'a lighthouse' });
    expect(badKey.status).toBe(400);
    expect(badKey.body.error).toBe('invalid_idempotency_key');
    const badBody = await post({ 'Idempotency-Key': 'k1' }, { prompt: '', n: 9 });
    expect(badBody.status).toBe(400);
    expect(badBody.body).toEqual({ error: 'invalid_request', message: expect.stringMatching(/^prompt: /) });
    const extra = await post({ 'Idempotency-Key': 'k1' }, { prompt: 'x', color: 'red' });
    expect(extra.status).toBe(400);
    const notJson = await request('POST', imagesUrl(), { body: 'hi', headers: { 'content-type': 'text/plain', 'Idempotency-Key': 'k1' } });
    expect(notJson.status).toBe(415);
    expect(notJson.body).toEqual({ error: 'invalid_request', message: 'Content-Type must be application/json' });

    const unpaid = await post({ 'Idempotency-Key': 'k1' }, { prompt: 'a lighthouse', n: 2 });
    expect(unpaid.status).toBe(402);
    expect(unpaid.body).toEqual({
      x402Version: 1,
      error: 'X-PAYMENT header is required',
      accepts: [
        {
          scheme: 'exact',
          network: 'base-sepolia',
          maxAmountRequired: (IMAGE_PRICE * 2n).toString(),
          resource: imagesUrl(),
          description: 'Image generation (pixel-1)',
          mimeType: 'application/json',
          payTo: stack.facilitator,
          maxTimeoutSeconds: 120,
          asset: stack.usdc,
          extra: { name: 'USDC', version: '2' },
        },
      ],
    });
    const garbage = await post({ 'Idempotency-Key': 'k1', 'X-PAYMENT': '%%%' }, { prompt: 'a lighthouse' });
    expect(garbage.status).toBe(402);
    expect(garbage.body.error).toBe('X-PAYMENT is not base64');
  });

  test('x402-fetch pays for images; a retry with the same Idempotency-Key returns the same assets and is not charged again', async () => {
    const k = key('lighthouse');
    const buyerBefore = await h.balanceOf(buyer.address);
    const revenueBefore = await h.balanceOf(revenue);
    const first = await postImages(k, { prompt: 'a lighthouse at dusk', n: 2 });
    expect(first.status).toBe(200);
    const paid = JSON.parse(Buffer.from(first.headers.get('x-payment-response')!, 'base64').toString('utf8'));
    expect(paid).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: buyer.address.toLowerCase(),
    });
    const body = (await first.json()) as any;
    expect(body.assets).toHaveLength(2);
    for (const a of body.assets) {
      expect(a).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        kind: 'image',
        model: 'pixel-1',
        prompt: 'a lighthouse at dusk',
        contentType: 'image/png',
        costUsdc: IMAGE_PRICE.toString(),
        createdAt: expect.any(String),
        url: `${h.api.baseUrl}/media/${body.jobId}/${body.assets.indexOf(a)}.png`,
        jobId: body.jobId,
        size: expect.any(Number),
      });
      // The durable URL serves the stored PNG.
      const obj = await fetch(a.url);
      expect(obj.status).toBe(200);
      expect(obj.headers.get('content-type')).toBe('image/png');
      const bytes = Buffer.from(await obj.arrayBuffer());
      expect(bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE);
      expect(bytes.length).toBe(a.size);
    }
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 2n * IMAGE_PRICE);

    // The retry (x402-fetch signs a new payment): same assets, and the new payment is not settled.
    const again = await postImages(k, { prompt: 'a lighthouse at dusk', n: 2 });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(body);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 2n * IMAGE_PRICE);
    expect(await h.balanceOf(revenue)).toBe(revenueBefore + 2n * IMAGE_PRICE);
    const job = await h.tdb.db.em.fork().findOneOrFail(MediaJob, { workflowId: mediaWorkflowId(buyer.address, k) });
    expect(job).toMatchObject({ id: body.jobId, state: 'succeeded', kind: 'image' });
    const charge = await h.tdb.db.em.fork().findOneOrFail(InferenceCharge, { id: job.chargeId });
    expect(charge).toMatchObject({ state: 'delivered', amount: (2n * IMAGE_PRICE).toString(), settlementTx: paid.transaction });

    // The same key with another request is refused (409), before any payment is settled.
    const other = await request('POST', imagesUrl(), {
      json: { prompt: 'a different picture' },
      headers: { 'Idempotency-Key': k, 'X-PAYMENT': await h.xPayment(buyer, IMAGE_PRICE) },
    });
    expect(other.status).toBe(409);
    expect(other.body).toEqual({ error: 'idempotency_key_reused', message: 'this Idempotency-Key was used for a different request' });
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 2n * IMAGE_PRICE);
  });

  test("an Idempotency-Key another buyer already used: the second buyer pays for and gets their own job, never the first buyer's", async () => {
    // docs/security.md threat model, media jobs: the job id is (payment signer, Idempotency-Key).
    const k = key('shared');
    // The second buyer is a fresh wallet with exactly one image's price (the file's `stranger` keeps an empty library).
    const second = privateKeyToAccount(generatePrivateKey());
    const funder = createWalletClient({ account: buyer, transport: http(stack.chains['base-sepolia'].rpcUrl) });
    const funded = await funder.writeContract({
      chain: null,
      address: stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [second.address, IMAGE_PRICE],
    });
    await h.chain.waitForTransactionReceipt({ hash: funded, pollingInterval: 20 });
    const post = async (who: typeof second) =>
      request('POST', imagesUrl(), {
        json: { prompt: 'one key, two buyers' },
        headers: { 'Idempotency-Key': k, 'X-PAYMENT': await h.xPayment(who, IMAGE_PRICE) },
      });
    const before = {
      buyer: await h.balanceOf(buyer.address),
      second: await h.balanceOf(second.address),
      revenue: await h.balanceOf(revenue),
    };
    const first = await post(buyer);
    expect(first.status).toBe(200);
    const again = await post(second);
    expect(again.status).toBe(200);
    const assetShape = (jobId: string) => ({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      kind: 'image',
      model: 'pixel-1',
      prompt: 'one key, two buyers',
      contentType: 'image/png',
      costUsdc: IMAGE_PRICE.toString(),
      createdAt: expect.any(String),
      url: `${h.api.baseUrl}/media/${jobId}/0.png`,
      jobId,
      size: expect.any(Number),
    });
    expect(first.body).toEqual({ jobId: expect.any(String), assets: [assetShape(first.body.jobId)] });
    expect(again.body).toEqual({ jobId: expect.any(String), assets: [assetShape(again.body.jobId)] });
    expect(again.body.jobId).not.toBe(first.body.jobId);
    expect(again.body.assets[0].id).not.toBe(first.body.assets[0].id);
    // Two jobs, one per signer, each charged to its own buyer once.
    const em = h.tdb.db.em.fork();
    const jobs = await Promise.all(
      [buyer, second].map((who) => em.findOneOrFail(MediaJob, { workflowId: mediaWorkflowId(who.address, k) })),
    );
    expect(jobs.map((j) => ({ id: j.id, state: j.state }))).toEqual([
      { id: first.body.jobId, state: 'succeeded' },
      { id: again.body.jobId, state: 'succeeded' },
    ]);
    expect(await h.balanceOf(buyer.address)).toBe(before.buyer - IMAGE_PRICE);
    expect(await h.balanceOf(second.address)).toBe(before.second - IMAGE_PRICE);
    expect(before.second).toBe(IMAGE_PRICE);
    expect(await h.balanceOf(revenue)).toBe(before.revenue + 2n * IMAGE_PRICE);
    // The first buyer's job stays theirs: their signed read answers 200, the second buyer's 404.
    const path = `${MEDIA}/jobs/${first.body.jobId}`;
    expect((await h.asBuyer(buyer, 'GET', path)).status).toBe(200);
    expect((await h.asBuyer(second, 'GET', path)).status).toBe(404);
  });

  test('x402 v2: @x402/fetch 2.x pays an image with PAYMENT-SIGNATURE and gets PAYMENT-RESPONSE (issue 13)', async () => {
    const v2Buyer = privateKeyToAccount(generatePrivateKey());
    const funder = createWalletClient({ account: buyer, transport: http(stack.chains['base-sepolia'].rpcUrl) });
    const hash = await funder.writeContract({
      chain: null,
      address: stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [v2Buyer.address, IMAGE_PRICE],
    });
    await h.chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    const revenueBefore = await h.balanceOf(revenue);
    const { pay, sent } = v2Payer(v2Buyer, 'eip155:84532', stack.usdc);
    const res = await pay(imagesUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Idempotency-Key': key('v2') },
      body: JSON.stringify({ prompt: 'a v2 picture' }),
    });
    expect(res.status).toBe(200);
    expect(sent).toHaveLength(1);
    expect(decodePaymentResponseHeader(res.headers.get('payment-response')!)).toMatchObject({
      success: true,
      network: 'eip155:84532',
      payer: v2Buyer.address.toLowerCase(), // media records the buyer lower-case, as its v1 X-PAYMENT-RESPONSE does
    });
    expect(await h.balanceOf(v2Buyer.address)).toBe(0n);
    expect(await h.balanceOf(revenue)).toBe(revenueBefore + IMAGE_PRICE);
  });

  test('the same key sent twice at once with two payments is charged once', async () => {
    const k = key('race');
    const buyerBefore = await h.balanceOf(buyer.address);
    const send = async () =>
      request('POST', imagesUrl(), {
        json: { prompt: 'two at once' },
        headers: { 'Idempotency-Key': k, 'X-PAYMENT': await h.xPayment(buyer, IMAGE_PRICE) },
      });
    const [a, b] = await Promise.all([send(), send()]);
    expect([a.status, b.status].sort()).toEqual(expect.arrayContaining([200]));
    for (const r of [a, b]) expect([200, 202]).toContain(r.status);
    const final = await send();
    expect(final.status).toBe(200);
    const winner = [a, b].find((r) => r.status === 200)!;
    expect(final.body).toEqual(winner.body);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - IMAGE_PRICE);
  });

  test('an image the provider refuses after payment: 502 generation_failed, refunded in full', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const k = key('refused');
    const res = await request('POST', imagesUrl(), {
      json: { prompt: 'something forbidden #reject' },
      headers: { 'Idempotency-Key': k, 'X-PAYMENT': await h.xPayment(buyer, IMAGE_PRICE) },
    });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({
      error: 'generation_failed',
      message: expect.stringContaining('the prompt was refused by the content policy'),
      jobId: expect.any(String),
      refund: expect.stringMatching(/^(pending|refunded)$/),
    });
    const job = await h.waitForJob(buyer, res.body.jobId, (j) => j.payment.state === 'refunded');
    expect(job).toMatchObject({ state: 'failed', assets: [] });
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
    // The key's answer stays the same, and the refund is not repeated.
    const again = await request('POST', imagesUrl(), {
      json: { prompt: 'something forbidden #reject' },
      headers: { 'Idempotency-Key': k, 'X-PAYMENT': await h.xPayment(buyer, IMAGE_PRICE) },
    });
    expect(again.status).toBe(502);
    expect(again.body).toMatchObject({ error: 'generation_failed', jobId: res.body.jobId, refund: 'refunded' });
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
  });

  test('image edits: a PNG in, a stored PNG out', async () => {
    const source = await fetch(((await (await postImages(key('src'), { prompt: 'a cat' })).json()) as any).assets[0].url);
    const image = Buffer.from(await source.arrayBuffer()).toString('base64');
    const res = await payingFetch(`${h.api.baseUrl}${MEDIA}/images/edits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Idempotency-Key': key('edit') },
      body: JSON.stringify({ prompt: 'the cat in a hat', image }),
    });
    expect(res.status).toBe(200);
    const { assets } = (await res.json()) as any;
    expect(assets).toHaveLength(1);
    const bytes = Buffer.from(await (await fetch(assets[0].url)).arrayBuffer());
    expect(bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    const notPng = await request('POST', `${h.api.baseUrl}${MEDIA}/images/edits`, {
      json: { prompt: 'x', image: 'aGVsbG8=' },
      headers: { 'Idempotency-Key': 'e1' },
    });
    expect(notPng.status).toBe(400);
    expect(notPng.body).toEqual({ error: 'invalid_request', message: 'image: image must be a base64 PNG' });
  });

  test('a video job: 202 with jobId, then succeeded with its artifact stored under a durable URL', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const res = await request('POST', `${h.api.baseUrl}${MEDIA}/video`, {
      json: { prompt: 'waves on a beach #duration=1200' },
      headers: { 'Idempotency-Key': key('waves'), 'X-PAYMENT': await h.xPayment(buyer, VIDEO_PRICE) },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      jobId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      kind: 'video',
      state: expect.stringMatching(/^(submitted|running)$/),
      statusUrl: `${h.api.baseUrl}${MEDIA}/jobs/${res.body.jobId}`,
    });
    expect(res.headers.get('x-payment-response')).toBeTruthy();
    const job = await h.waitForJob(buyer, res.body.jobId, (j) => j.state === 'succeeded');
    expect(job).toMatchObject({
      jobId: res.body.jobId,
      kind: 'video',
      model: 'motion-1',
      progress: 100,
      costUsdc: VIDEO_PRICE.toString(),
      payment: { state: 'delivered', network: 'base-sepolia', refundTx: null },
    });
    expect(job.assets).toHaveLength(1);
    expect(job.assets[0]).toMatchObject({
      kind: 'video',
      contentType: 'video/mp4',
      costUsdc: VIDEO_PRICE.toString(),
      url: `${h.api.baseUrl}/media/${res.body.jobId}/0.mp4`,
    });
    const obj = await fetch(job.assets[0].url);
    expect(obj.headers.get('content-type')).toBe('video/mp4');
    // Served from our origin: never sniffed, never run as a page.
    expect(obj.headers.get('x-content-type-options')).toBe('nosniff');
    expect(obj.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(obj.headers.get('content-disposition')).toBe('inline; filename="0.mp4"');
    expect((await obj.text()).startsWith('MP4 devnet artifact')).toBe(true);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - VIDEO_PRICE);
  });

  test('a video job the provider fails is refunded in full from the charge ledger', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const refundsBefore = (await refundsTo(buyer.address)).length;
    const res = await request('POST', `${h.api.baseUrl}${MEDIA}/video`, {
      json: { prompt: 'a storm #fail #duration=400' },
      headers: { 'Idempotency-Key': key('storm'), 'X-PAYMENT': await h.xPayment(buyer, VIDEO_PRICE) },
    });
    expect(res.status).toBe(202);
    const job = await h.waitForJob(buyer, res.body.jobId, (j) => j.payment.state === 'refunded');
    expect(job).toMatchObject({
      state: 'failed',
      error: 'the renderer crashed',
      assets: [],
      payment: { refundTx: expect.stringMatching(/^0x[0-9a-f]{64}$/) },
    });
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
    expect((await refundsTo(buyer.address)).length).toBe(refundsBefore + 1);
    const cancel = await h.asBuyer(buyer, 'DELETE', `${MEDIA}/jobs/${res.body.jobId}`);
    expect(cancel.status).toBe(409);
    expect(cancel.body).toEqual({ error: 'job_finished', message: 'the job is already failed', jobId: res.body.jobId, state: 'failed' });
  });

  test('a provider whose artifact is on a host off the allow-list, on a private address, redirected off the list or over the size cap: each job failed and refunded once, nothing stored, nothing fetched past the rules', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const refundsBefore = (await refundsTo(buyer.address)).length;
    const OVERSIZE = 64 * 1024 * 1024;
    const cases = [
      { prompt: 'a harbour #artifact-host=attacker.invalid', error: 'the artifact host attacker.invalid is not on MEDIA_ARTIFACT_HOSTS' },
      // On the allow-list by name, but the name resolves to loopback: the connection is never made.
      { prompt: 'a harbour #artifact-host=localhost', error: 'localhost resolves to 127.0.0.1, a private or reserved address' },
      {
        prompt: 'a harbour #redirect-to=attacker.invalid',
        error: 'the artifact download redirected: the artifact host attacker.invalid is not on MEDIA_ARTIFACT_HOSTS',
      },
      { prompt: `a harbour #artifact-bytes=${OVERSIZE}`, error: `the artifact is larger than ${ARTIFACT_CAP} bytes` },
    ];
    const started = await Promise.all(
      cases.map(async (c, i) => {
        const res = await request('POST', `${h.api.baseUrl}${MEDIA}/video`, {
          json: { prompt: `${c.prompt} #duration=300` },
          headers: { 'Idempotency-Key': key(`artifact-${i}`), 'X-PAYMENT': await h.xPayment(buyer, VIDEO_PRICE) },
        });
        expect(res.status).toBe(202);
        return res.body.jobId as string;
      }),
    );
    for (const [i, jobId] of started.entries()) {
      const job = await h.waitForJob(buyer, jobId, (j) => j.payment.state === 'refunded');
      expect(job).toMatchObject({
        state: 'failed',
        error: `storing the artifacts failed: ${cases[i]!.error}`,
        assets: [],
        payment: { refundTx: expect.stringMatching(/^0x[0-9a-f]{64}$/) },
      });
      // No object, and no partial file left behind.
      const dir = join(h.storeDir, jobId);
      expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
    }
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
    expect((await refundsTo(buyer.address)).length).toBe(refundsBefore + cases.length);
    // What the double served: nothing for a refused host, the redirect itself, and of the oversize
    // artifact no more than the cap and what the sockets' buffers held when the download stopped.
    const served = new Map((await h.providerJobs()).map((j) => [j.prompt.split(' #duration')[0], j]));
    const seen = cases.map((c) => ({
      downloads: served.get(c.prompt)!.downloads,
      under: served.get(c.prompt)!.bytesSent < 16 * ARTIFACT_CAP,
    }));
    expect(seen).toEqual([
      { downloads: 0, under: true },
      { downloads: 0, under: true },
      { downloads: 1, under: true },
      { downloads: 1, under: true },
    ]);
  });

  test('a music job runs the same way: 202, then succeeded with an audio asset', async () => {
    const res = await request('POST', `${h.api.baseUrl}${MEDIA}/music`, {
      json: { prompt: 'a lullaby #duration=300' },
      headers: { 'Idempotency-Key': key('lullaby'), 'X-PAYMENT': await h.xPayment(buyer, MUSIC_PRICE) },
    });
    expect(res.status).toBe(202);
    expect(res.body.kind).toBe('music');
    const job = await h.waitForJob(buyer, res.body.jobId, (j) => j.state === 'succeeded');
    expect(job.assets).toEqual([
      expect.objectContaining({ kind: 'music', model: 'tone-1', contentType: 'audio/mpeg', costUsdc: MUSIC_PRICE.toString() }),
    ]);
    expect((await (await fetch(job.assets[0].url)).text()).startsWith('MP3 devnet artifact')).toBe(true);
    // A wrong amount is refused before any job row or workflow exists; the same key may then be paid correctly.
    const k = key('underpaid');
    const under = await request('POST', `${h.api.baseUrl}${MEDIA}/music`, {
      json: { prompt: 'a march' },
      headers: { 'Idempotency-Key': k, 'X-PAYMENT': await h.xPayment(buyer, MUSIC_PRICE - 1n) },
    });
    expect(under.status).toBe(402);
    expect(under.body.error).toBe('invalid_exact_evm_payload_authorization_value');
    expect(under.body.accepts[0].maxAmountRequired).toBe(MUSIC_PRICE.toString());
    expect(under.headers.get('x-media-job-id')).toBeNull();
    expect(await h.tdb.db.em.fork().findOne(MediaJob, { workflowId: mediaWorkflowId(buyer.address, k) })).toBeNull();
    const paid = await request('POST', `${h.api.baseUrl}${MEDIA}/music`, {
      json: { prompt: 'a march' },
      headers: { 'Idempotency-Key': k, 'X-PAYMENT': await h.xPayment(buyer, MUSIC_PRICE) },
    });
    expect(paid.status).toBe(202);
    expect(paid.body.jobId).toEqual(expect.any(String));
    await h.waitForJob(buyer, paid.body.jobId, (j) => j.state === 'succeeded');
  });

  test('a job record left in paying without a workflow (API died before starting it) is taken over by the next request', async () => {
    const k = key('orphan');
    const old = new Date(Date.now() - 60_000);
    await h.tdb.db.em.fork().insert(MediaJob, {
      id: '00000000-0000-4000-8000-000000000001'.replace('0001', String(Date.now() % 10000).padStart(4, '0')),
      workflowId: mediaWorkflowId(buyer.address, k),
      buyer: buyer.address.toLowerCase(),
      kind: 'image',
      model: 'pixel-1',
      prompt: 'an orphan',
      fingerprint: fingerprintOf('images', { prompt: 'an orphan', n: 1 }),
      price: IMAGE_PRICE.toString(),
      network: 'base-sepolia',
      chargeId: 'media:base-sepolia:lost:0x00',
      state: 'paying',
      progress: 0,
      createdAt: old,
      updatedAt: old,
    });
    const res = await postImages(k, { prompt: 'an orphan' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).assets).toHaveLength(1);
  });

  test('the library pages with a stable cursor, filtered by kind', async () => {
    // A buyer of its own, so its library holds exactly what this test makes: 2 + 1 images, 1 video, 2 music.
    const reader = privateKeyToAccount(generatePrivateKey());
    const funder = createWalletClient({ account: buyer, transport: http(stack.chains['base-sepolia'].rpcUrl) });
    const funding = 4n * IMAGE_PRICE + VIDEO_PRICE + 2n * MUSIC_PRICE;
    const hash = await funder.writeContract({
      chain: null,
      address: stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [reader.address, funding],
    });
    await h.chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    let n = 0;
    const paid = async (route: string, json: object, price: bigint) =>
      request('POST', `${h.api.baseUrl}${MEDIA}/${route}`, {
        json,
        headers: { 'Idempotency-Key': key(`library-${++n}`), 'X-PAYMENT': await h.xPayment(reader, price) },
      });
    expect((await paid('images', { prompt: 'two for the library', n: 2 }, 2n * IMAGE_PRICE)).status).toBe(200);
    expect((await paid('images', { prompt: 'one for the library' }, IMAGE_PRICE)).status).toBe(200);
    for (const [route, price] of [
      ['video', VIDEO_PRICE],
      ['music', MUSIC_PRICE],
      ['music', MUSIC_PRICE],
    ] as const) {
      const job = await paid(route, { prompt: `${route} for the library #duration=300` }, price);
      expect(job.status).toBe(202);
      await h.waitForJob(reader, job.body.jobId, (j) => j.state === 'succeeded');
    }

    const all = await h.asBuyer(reader, 'GET', `${MEDIA}/library?limit=100`);
    expect(all.status).toBe(200);
    const ids = all.body.data.map((a: any) => a.id);
    expect(ids).toHaveLength(6);
    expect(all.body.nextCursor).toBeNull();

    const page1 = await h.asBuyer(reader, 'GET', `${MEDIA}/library?limit=2`);
    expect(page1.body.data.map((a: any) => a.id)).toEqual(ids.slice(0, 2));
    expect(page1.body.nextCursor).toEqual(expect.any(String));
    // A new asset lands on top; the next page continues where the cursor left off, no repeats.
    expect((await paid('images', { prompt: 'a new one' }, IMAGE_PRICE)).status).toBe(200);
    const page2 = await h.asBuyer(reader, 'GET', `${MEDIA}/library?limit=2&cursor=${page1.body.nextCursor}`);
    expect(page2.body.data.map((a: any) => a.id)).toEqual(ids.slice(2, 4));
    const rest = await h.asBuyer(reader, 'GET', `${MEDIA}/library?limit=100&cursor=${page2.body.nextCursor}`);
    expect(rest.body.data.map((a: any) => a.id)).toEqual(ids.slice(4));
    expect(rest.body.nextCursor).toBeNull();

    const videos = await h.asBuyer(reader, 'GET', `${MEDIA}/library?kind=video`);
    expect(videos.body.data.map((a: any) => a.kind)).toEqual(['video']);
    expect((await h.asBuyer(reader, 'GET', `${MEDIA}/library?kind=music`)).body.data).toHaveLength(2);
    expect((await h.asBuyer(reader, 'GET', `${MEDIA}/library?kind=podcast`)).body).toEqual({
      error: 'invalid_request',
      message: 'kind must be one of image, video, music',
    });
    expect((await h.asBuyer(reader, 'GET', `${MEDIA}/library?cursor=nope!`)).status).toBe(400);
    expect((await h.asBuyer(reader, 'GET', `${MEDIA}/library?limit=0`)).status).toBe(400);
    // Another buyer's library is their own (empty).
    expect((await h.asBuyer(stranger, 'GET', `${MEDIA}/library`)).body).toEqual({ data: [], nextCursor: null });
  });

  test('buyer signatures: missing, replayed, for another path, expired or forged are refused; another buyer sees 404', async () => {
    const made = await postImages(key('signed'), { prompt: 'a signed read' });
    expect(made.status).toBe(200);
    const asset = ((await made.json()) as any).assets[0];
    const path = `${MEDIA}/assets/${asset.id}`;
    const url = `${h.api.baseUrl}${path}`;

    const none = await request('GET', url);
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('buyer_auth_required');

    const headers = await buyerAuthHeaders(buyer, { method: 'GET', url });
    const ok = await request('GET', url, { headers });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual(asset);
    const replay = await request('GET', url, { headers });
    expect(replay.status).toBe(401);
    expect(replay.body).toEqual({ error: 'buyer_nonce_reused', message: 'this nonce was already used' });

    const otherPath = await request('GET', `${h.api.baseUrl}${MEDIA}/library`, {
      headers: await buyerAuthHeaders(buyer, { method: 'GET', url }),
    });
    expect(otherPath.status).toBe(401);
    expect(otherPath.body.error).toBe('invalid_buyer_signature');
    const otherMethod = await request('DELETE', url, { headers: await buyerAuthHeaders(buyer, { method: 'GET', url }) });
    expect(otherMethod.body.error).toBe('invalid_buyer_signature');
    const otherDomain = await request('GET', url, {
      headers: await buyerAuthHeaders(buyer, { method: 'GET', url, domain: 'evil.example' }),
    });
    expect(otherDomain.body.error).toBe('invalid_buyer_signature');
    const expired = await request('GET', url, {
      headers: await buyerAuthHeaders(buyer, { method: 'GET', url, now: Math.floor(Date.now() / 1000) - 200, ttlSeconds: 60 }),
    });
    expect(expired.body).toEqual({ error: 'buyer_auth_expired', message: 'the signature has expired' });
    const tooLong = await request('GET', url, { headers: await buyerAuthHeaders(buyer, { method: 'GET', url, ttlSeconds: 3600 }) });
    expect(tooLong.body.error).toBe('invalid_buyer_auth');
    const forged = { ...(await buyerAuthHeaders(stranger, { method: 'GET', url })), 'X-Buyer-Address': buyer.address };
    expect((await request('GET', url, { headers: forged })).body.error).toBe('invalid_buyer_signature');

    // Another buyer, correctly signed: the asset and its job do not exist for them.
    const theirs = await h.asBuyer(stranger, 'GET', path);
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual({ error: 'asset_not_found', message: `no asset ${asset.id} for this buyer` });
    expect((await h.asBuyer(stranger, 'GET', `${MEDIA}/jobs/${asset.jobId}`)).status).toBe(404);
    expect((await h.asBuyer(stranger, 'DELETE', path)).status).toBe(404);
  });

  test('DELETE /assets/:id removes the object and calls the purge hook', async () => {
    const res = await postImages(key('doomed'), { prompt: 'a sandcastle' });
    const asset = ((await res.json()) as any).assets[0];
    expect((await fetch(asset.url)).status).toBe(200);
    const del = await h.asBuyer(buyer, 'DELETE', `${MEDIA}/assets/${asset.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: asset.id, deleted: true, purged: true });
    expect((await fetch(asset.url)).status).toBe(404);
    expect(purge.calls).toContainEqual({ url: asset.url, key: `${asset.jobId}/0.png`, assetId: asset.id });
    expect((await h.asBuyer(buyer, 'GET', `${MEDIA}/assets/${asset.id}`)).status).toBe(404);
    expect((await h.asBuyer(buyer, 'DELETE', `${MEDIA}/assets/${asset.id}`)).status).toBe(404);
  });

  test('capability gate: video and music switched off answer 503 capability_unavailable while images work', async () => {
    const mediaChargeCount = () => h.tdb.db.em.fork().count(InferenceCharge, { id: { $like: 'media:%' } });
    const chargesBefore = await mediaChargeCount();
    let gated: RunningApi | undefined;
    try {
      const config = { ...h.tdb.config, env: { ...h.tdb.config.env, MEDIA_CAPABILITIES: 'image' } };
      gated = await startApi({ db: h.tdb.db, config, temporal: h.temporal });
      for (const route of ['video', 'music']) {
        const res = await request('POST', `${gated.baseUrl}${MEDIA}/${route}`, {
          json: { prompt: 'x' },
          headers: { 'Idempotency-Key': 'g1' },
        });
        expect(res.status).toBe(503);
        expect(res.body).toEqual({
          error: 'capability_unavailable',
          message: `${route} generation is switched off`,
          kind: route,
          available: ['image'],
        });
      }
      const images = await request('POST', `${gated.baseUrl}${MEDIA}/images`, {
        json: { prompt: 'x' },
        headers: { 'Idempotency-Key': 'g1' },
      });
      expect(images.status).toBe(402);
    } finally {
      await gated?.close();
    }
    expect(await mediaChargeCount()).toBe(chargesBefore); // none of it charged anything
  });
});
