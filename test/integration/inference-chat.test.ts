import { createWalletClient, defineChain, http, numberToHex, parseAbi, parseEventLogs, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment, decodeXPaymentResponse } from 'x402-fetch';
import { rpc } from '../../devnet/anvil';
import { DEFAULT_TEMPLATES, doubleReply, type StreamRecord } from '../../devnet/inference-provider';
import { join } from 'node:path';
import { entryArgs, findFreePort, retryOnPortClash, spawnManaged, waitForHttp, waitUntil } from '../../devnet/process';
import { InferenceCharge, RelayerTransaction } from '../../src/db/entities';
import { chargeGuardWorkflowId, chatChargeId, refundWorkflowId } from '../../src/inference/types';
import { relayerTxId, settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { DEVNET_USDC_ISSUER_KEY } from '../../src/chains/devnet-addresses';
import { X402State } from '../../src/temporal/search-attributes';
import { refundChargeUpdate } from '../../workflows/operator-actions';
import { PARKED_MEMO } from '../../workflows/park';
import { opsCli } from '../support/ops-cli';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { exactPayment } from '../support/payments';
import { waitForReceipt } from '../support/evm';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { readStackInfo } from '../support/stack-info';
import { decodePaymentResponseHeader, v2Payer } from '../support/x402-v2';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * Paid inference end to end on the real stack: the devnet provider doubles (OpenAI-compatible
 * streaming), Temporal, a worker process, anvil with our contracts, the real API over HTTP, and the
 * real legacy x402 v1 client `x402-fetch` paying with a viem wallet.
 */
const PRICE = 10_000n;
const stack = readStackInfo();
const providers = JSON.stringify([
  ...JSON.parse(stack.inference.providers),
  { id: 'offline', label: 'Offline provider', baseUrl: 'http://127.0.0.1:1/v1' },
  // Down too, but a balance with it can be topped up: the spec's funding_only.
  {
    id: 'funded',
    label: 'Funded provider',
    baseUrl: 'http://127.0.0.1:1/v1',
    payment: 'x402',
    settlement: { network: 'eip155:84532', asset: stack.usdc, decimals: 6 },
    topup: { gatewayUrl: 'http://127.0.0.1:1/topup', merchant: 'funded', settlementChainId: 8453 },
  },
]);
const modelserverUrl = JSON.parse(stack.inference.providers)[0].baseUrl as string;
const LOGICAL = DEFAULT_TEMPLATES[0]!.prompt;
/** base-sepolia's chain id (x402-fetch derives the network from it) on the devnet anvil. */
const devnetBaseSepolia = () =>
  defineChain({
    id: 84532,
    name: 'base-sepolia (devnet)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [stack.chains['base-sepolia'].rpcUrl] } },
  });

describe.each(oneDbKind('sqlite'))('paid inference (%s)', (kind) => {
  let h: SettleHarness;
  const relayerIndex = 3;
  const revenue = TEST_ACCOUNTS.relayers[relayerIndex]!.address;
  const buyer = TEST_ACCOUNTS.buyers[4]!;
  let chatUrl: string;
  let payingFetch: typeof fetch;
  /** X-PAYMENT headers x402-fetch sent, in order. */
  const sentPayments: string[] = [];

  beforeAll(async () => {
    h = await startSettleHarness(kind, {
      relayerIndex,
      // A short settle wait, so a paused chain makes the chat answer settlement_pending quickly.
      env: {
        INFERENCE_PROVIDERS: providers,
        INFERENCE_TEMPLATES_URL: stack.inference.templatesUrl,
        RECEIPT_WAIT_MS: '5000',
        SETTLE_WAIT_MS: '4000',
      },
    });
    chatUrl = `${h.api.baseUrl}/v1/inference/chat`;
    const rpcUrl = stack.chains['base-sepolia'].rpcUrl;
    const wallet = createWalletClient({ account: buyer, chain: devnetBaseSepolia(), transport: http(rpcUrl) });
    const recording: typeof fetch = async (input, init) => {
      const pay = (init?.headers as Record<string, string> | undefined)?.['X-PAYMENT'];
      if (pay) sentPayments.push(pay);
      return fetch(input, init);
    };
    payingFetch = wrapFetchWithPayment(recording, wallet as any) as typeof fetch;
  });
  afterAll(async () => {
    await rpc(stack.chains['base-sepolia'].rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    // A failed pause test leaves the shared token unpaused for the next files.
    await createWalletClient({ account: privateKeyToAccount(DEVNET_USDC_ISSUER_KEY), transport: http(stack.chains['base-sepolia'].rpcUrl) })
      .writeContract({ chain: null, address: stack.usdc, abi: parseAbi(['function unpause()']), functionName: 'unpause' })
      .catch(() => undefined);
    await h?.close();
  });

  const chatInit = (content: string, extra: Record<string, unknown> = {}): RequestInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content }], ...extra }),
  });
  const charge = (id: string) => h.tdb.db.em.fork().findOne(InferenceCharge, { id });
  const chargeOf = (payment: string) => {
    const p = JSON.parse(Buffer.from(payment, 'base64').toString('utf8'));
    return chatChargeId('base-sepolia', p.payload.authorization.from, p.payload.authorization.nonce);
  };
  const waitForCharge = (id: string, state: string, timeoutMs = 60_000) =>
    waitUntil(`charge ${id} to be ${state}`, async () => ((await charge(id))?.state === state ? (await charge(id))! : undefined), {
      timeoutMs,
      intervalMs: 50,
    });
  const doubleStreams = async (): Promise<StreamRecord[]> =>
    ((await (await fetch(`${modelserverUrl.replace(/\/v1$/, '')}/__double/streams`)).json()) as { data: StreamRecord[] }).data;
  const transfers = async (from: Address, to: Address) => {
    const logs = await h.chain.getLogs({ address: stack.usdc, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: tokenAbi, logs, eventName: 'Transfer' }).filter(
      (l) => l.args.from.toLowerCase() === from.toLowerCase() && l.args.to.toLowerCase() === to.toLowerCase(),
    );
  };
  /** `data:` payloads of an event stream, and the `event: error` payloads. */
  const parseSse = (text: string) => {
    const events = text.split('\n\n').filter(Boolean);
    const data = events.filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
    const errors = events.filter((e) => e.startsWith('event: error\n')).map((e) => JSON.parse(e.split('\n')[1]!.slice(6)));
    return { data, errors };
  };
  const contentOf = (data: string[]) =>
    data
      .filter((d) => d !== '[DONE]')
      .map((d) => JSON.parse(d).choices[0]?.delta?.content ?? '')
      .join('');

  test('GET /v1/inference/providers: the spec descriptors; a provider down is funding_only when it can be topped up, else not listed', async () => {
    const res = await request('GET', `${h.api.baseUrl}/v1/inference/providers`);
    expect(res.status).toBe(200);
    const caps = { chat: true, models: true, balance: false, topup: false };
    expect(res.body).toEqual({
      data: [
        { id: 'modelserver', label: 'Model server', payment: 'none', status: 'available', capabilities: caps },
        { id: 'modelserver2', label: 'Model server 2', payment: 'none', status: 'available', capabilities: caps },
        {
          id: 'funded',
          label: 'Funded provider',
          payment: 'x402',
          status: 'funding_only',
          capabilities: { chat: false, models: false, balance: true, topup: true },
          settlement: { network: 'eip155:84532', asset: stack.usdc, decimals: 6 },
          topup: { gatewayUrl: 'http://127.0.0.1:1/topup', merchant: 'funded', settlementChainId: 8453 },
        },
      ],
    });
  });

  test('GET /v1/inference/models and /templates are live from the providers', async () => {
    const models = await request('GET', `${h.api.baseUrl}/v1/inference/models`);
    expect(models.status).toBe(200);
    expect(models.body).toEqual({
      data: [
        { id: 'modelserver:24B', provider: 'modelserver', default: true },
        { id: 'modelserver:12B', provider: 'modelserver', default: false },
        { id: 'modelserver2:6b', provider: 'modelserver2', default: false },
      ],
      default: 'modelserver:24B',
    });
    const templates = await request('GET', `${h.api.baseUrl}/v1/inference/templates`);
    expect(templates.status).toBe(200);
    expect(templates.body).toEqual({ data: DEFAULT_TEMPLATES.map(({ name, label }) => ({ name, label })) });
  });

  test('chat validates the body before asking for payment: 400 {error, supported}', async () => {
    const post = (json: unknown) => request('POST', chatUrl, { json });
    const empty = await post({ messages: [] });
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual({ error: expect.stringContaining('non-empty'), supported: ['user', 'assistant'] });
    expect((await post({})).status).toBe(400);
    expect((await post({ messages: [{ role: 'robot', content: 'hi' }] })).status).toBe(400);

    const model = await post({ messages: [{ role: 'user', content: 'hi' }], model: 'gpt-nope' });
    expect(model.status).toBe(400);
    expect(model.body).toEqual({ error: 'unknown model "gpt-nope"', supported: ['modelserver:24B', 'modelserver:12B', 'modelserver2:6b'] });

    const template = await post({ messages: [{ role: 'user', content: 'hi' }], template: 'poetic' });
    expect(template.status).toBe(400);
    expect(template.body).toEqual({ error: 'unknown template "poetic"', supported: DEFAULT_TEMPLATES.map((t) => t.name) });

    const down = await post({ messages: [{ role: 'user', content: 'hi' }], model: 'offline:big' });
    expect(down.status).toBe(503);
    expect(down.body.error).toBe('provider offline is unavailable');

    const notJson = await request('POST', chatUrl, { body: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(notJson.status).toBe(415);
    expect(notJson.body).toEqual({ error: 'Content-Type must be application/json' });
  });

  test('without X-PAYMENT: 402 with x402 v1 requirements for text/event-stream', async () => {
    const res = await request('POST', chatUrl, { json: { messages: [{ role: 'user', content: 'hi' }], model: 'modelserver2:6b' } });
    expect(res.status).toBe(402);
    expect(res.body).toEqual({
      x402Version: 1,
      error: 'X-PAYMENT header is required',
      accepts: [
        {
          scheme: 'exact',
          network: 'base-sepolia',
          maxAmountRequired: PRICE.toString(),
          resource: chatUrl,
          description: 'Chat completion (modelserver2:6b), streamed as server-sent events',
          mimeType: 'text/event-stream',
          payTo: stack.facilitator,
          maxTimeoutSeconds: 120,
          asset: stack.usdc,
          extra: { name: 'USDC', version: '2' },
        },
      ],
    });
    const garbage = await request('POST', chatUrl, {
      json: { messages: [{ role: 'user', content: 'hi' }] },
      headers: { 'X-PAYMENT': '%%%' },
    });
    expect(garbage.status).toBe(402);
    expect(garbage.body.error).toBe('X-PAYMENT is not base64');
    const notPayload = Buffer.from(JSON.stringify({ hello: 1 })).toString('base64');
    const bad = await request('POST', chatUrl, {
      json: { messages: [{ role: 'user', content: 'hi' }] },
      headers: { 'X-PAYMENT': notPayload },
    });
    expect(bad.status).toBe(402);
    expect(bad.body.error).toMatch(/^X-PAYMENT is not an x402 v1 exact EVM payment payload/);
    expect(bad.body.accepts).toHaveLength(1);
  });

  test('x402 v2: the 402 carries PAYMENT-REQUIRED; @x402/fetch 2.x pays with PAYMENT-SIGNATURE and gets PAYMENT-RESPONSE (issue 13)', async () => {
    const bare = await fetch(chatUrl, chatInit('hi'));
    expect(bare.status).toBe(402);
    expect(JSON.parse(Buffer.from(bare.headers.get('payment-required')!, 'base64').toString('utf8'))).toEqual({
      x402Version: 2,
      error: 'X-PAYMENT header is required',
      resource: {
        url: chatUrl,
        description: 'Chat completion (modelserver:24B), streamed as server-sent events',
        mimeType: 'text/event-stream',
      },
      accepts: [
        {
          scheme: 'exact',
          network: 'eip155:84532',
          asset: stack.usdc,
          amount: PRICE.toString(),
          payTo: stack.facilitator,
          maxTimeoutSeconds: 120,
          extra: { name: 'USDC', version: '2' },
        },
      ],
    });
    const v2Buyer = privateKeyToAccount(generatePrivateKey());
    const funder = createWalletClient({ account: buyer, chain: devnetBaseSepolia(), transport: http(stack.chains['base-sepolia'].rpcUrl) });
    const hash = await funder.writeContract({
      address: stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [v2Buyer.address, 1_000_000n],
    });
    await h.chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    const { pay, sent } = v2Payer(v2Buyer, 'eip155:84532', stack.usdc);
    const [buyerBefore, revenueBefore] = [await h.balanceOf(v2Buyer.address), await h.balanceOf(revenue)];
    const res = await pay(chatUrl, chatInit(`a v2 question on ${kind}`));
    expect(res.status).toBe(200);
    expect(parseSse(await res.text()).data.at(-1)).toBe('[DONE]');
    expect(sent).toHaveLength(1);
    expect(decodePaymentResponseHeader(res.headers.get('payment-response')!)).toMatchObject({
      success: true,
      network: 'eip155:84532',
      payer: v2Buyer.address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(await h.balanceOf(v2Buyer.address)).toBe(buyerBefore - PRICE);
    expect(await h.balanceOf(revenue)).toBe(revenueBefore + PRICE);
    const a = sent[0].payload.authorization;
    await waitForCharge(chatChargeId('base-sepolia', a.from, a.nonce), 'delivered', 10_000);
  });

  test('x402-fetch pays, reads the whole stream, and a replay of its X-PAYMENT is not charged again', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const revenueBefore = await h.balanceOf(revenue);
    const question = `What is the durable way to pay for a chat on ${kind}?`;

    const res = await payingFetch(chatUrl, chatInit(question));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const settle = decodeXPaymentResponse(res.headers.get('x-payment-response')!);
    const { data, errors } = parseSse(await res.text());
    expect(errors).toEqual([]);
    expect(data.at(-1)).toBe('[DONE]');
    const expected = doubleReply('24B', [
      { role: 'system', content: LOGICAL },
      { role: 'user', content: question },
    ]);
    expect(contentOf(data)).toBe(expected);
    for (const d of data.slice(0, -1)) {
      const chunk = JSON.parse(d);
      expect(chunk).toEqual({
        id: expect.stringMatching(/^chatcmpl-/),
        object: 'chat.completion.chunk',
        model: 'modelserver:24B',
        choices: [{ index: 0, delta: expect.any(Object), finish_reason: chunk.choices[0].finish_reason }],
      });
      expect([null, 'stop']).toContain(chunk.choices[0].finish_reason);
    }
    // What the double produced is exactly what the buyer read.
    expect((await doubleStreams()).find((s) => s.content === expected)?.state).toBe('completed');

    expect(settle).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: buyer.address,
    });
    const receipt = await h.chain.getTransactionReceipt({ hash: settle.transaction as Hex });
    expect(receipt.status).toBe('success');
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - PRICE);
    expect(await h.balanceOf(revenue)).toBe(revenueBefore + PRICE);

    const payment = sentPayments.at(-1)!;
    const id = chargeOf(payment);
    expect(await waitForCharge(id, 'delivered', 5_000)).toMatchObject({
      settlementTx: settle.transaction,
      amount: PRICE.toString(),
      model: 'modelserver:24B',
      refundTx: null,
    });

    // The same X-PAYMENT again: no second charge, no second reply.
    const replay = await fetch(chatUrl, { ...chatInit(question), headers: { 'content-type': 'application/json', 'X-PAYMENT': payment } });
    expect(replay.status).toBe(402);
    expect(await replay.json()).toMatchObject({ x402Version: 1, error: 'authorization already used' });
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - PRICE);
    const p = JSON.parse(Buffer.from(payment, 'base64').toString('utf8'));
    expect(await h.settledEvents(buyer.address, p.payload.authorization.nonce)).toBe(1);
  });

  test('the same X-PAYMENT sent twice at once: one reply, one charge, the other 402', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const payment = await exactPayment({
      buyer,
      network: 'base-sepolia',
      chainId: 84532,
      usdc: stack.usdc,
      facilitator: stack.facilitator,
      value: PRICE,
      validBefore: BigInt(Math.floor(Date.now() / 1000) + 120), // the chat challenge's maxTimeoutSeconds
    });
    const header = Buffer.from(JSON.stringify(payment.paymentPayload)).toString('base64');
    const send = () =>
      fetch(chatUrl, { ...chatInit(`twice at once on ${kind}`), headers: { 'content-type': 'application/json', 'X-PAYMENT': header } });
    const answers = await Promise.all([send(), send()]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 402]);
    const ok = answers.find((r) => r.status === 200)!;
    expect(parseSse(await ok.text()).data.at(-1)).toBe('[DONE]');
    expect(await answers.find((r) => r.status === 402)!.json()).toMatchObject({ error: 'authorization already used' });
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - PRICE);
    expect(await h.settledEvents(buyer.address, payment.paymentPayload.payload.authorization.nonce as Hex)).toBe(1);
  });

  test('a payment the chain refuses: 402 with the reason, nothing charged, the ledger says rejected', async () => {
    const broke = privateKeyToAccount(generatePrivateKey()); // no USDC at all
    const wallet = createWalletClient({ account: broke, chain: devnetBaseSepolia(), transport: http(stack.chains['base-sepolia'].rpcUrl) });
    const sent: string[] = [];
    const brokeFetch = wrapFetchWithPayment(async (input: any, init?: any) => {
      if (init?.headers?.['X-PAYMENT']) sent.push(init.headers['X-PAYMENT']);
      return fetch(input, init);
    }, wallet);
    const res = await brokeFetch(chatUrl, chatInit('hello'));
    expect(res.status).toBe(402);
    expect(await res.json()).toMatchObject({
      x402Version: 1,
      error: 'insufficient_funds',
      accepts: [expect.objectContaining({ mimeType: 'text/event-stream' })],
    });
    expect(res.headers.get('x-payment-response')).toBeNull();
    expect(await charge(chargeOf(sent[0]!))).toMatchObject({ state: 'rejected', error: 'insufficient_funds', settlementTx: null });

    // Funded now, the same authorization may be used after all: it is claimed again and served.
    const funder = createWalletClient({ account: buyer, chain: devnetBaseSepolia(), transport: http(stack.chains['base-sepolia'].rpcUrl) });
    const funded = await funder.writeContract({
      address: stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [broke.address, PRICE],
    });
    expect((await waitForReceipt(h.chain, funded)).status).toBe('success');
    const retry = await fetch(chatUrl, { ...chatInit('hello'), headers: { 'content-type': 'application/json', 'X-PAYMENT': sent[0]! } });
    expect(retry.status).toBe(200);
    expect(parseSse(await retry.text()).data.at(-1)).toBe('[DONE]');
    await waitForCharge(chargeOf(sent[0]!), 'delivered', 5_000);
    expect(await h.balanceOf(broke.address)).toBe(0n);
  });

  test('settlement still pending past the wait: 503, and the payment is refunded once it settles', async () => {
    const rpcUrl = stack.chains['base-sepolia'].rpcUrl;
    const buyerBefore = await h.balanceOf(buyer.address);
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    let res: Response;
    try {
      res = await payingFetch(chatUrl, chatInit('are you there?'));
    } finally {
      await rpc(rpcUrl, 'evm_setAutomine', [true]);
    }
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toEqual({ error: 'settlement_pending: the chat was not served; if the payment settles it is refunded' });
    const id = chargeOf(sentPayments.at(-1)!);
    await rpc(rpcUrl, 'evm_mine', []);
    const refunded = await waitForCharge(id, 'refunded');
    expect(refunded.refundTx).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
    // The same X-PAYMENT again is not served either.
    const replay = await fetch(chatUrl, {
      ...chatInit('are you there?'),
      headers: { 'content-type': 'application/json', 'X-PAYMENT': sentPayments.at(-1)! },
    });
    expect(replay.status).toBe(402);
  });

  test('a client that disconnects stops the upstream stream', async () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    const question = `#token-delay=100 ${kind} ${words}`;
    const abort = new AbortController();
    const res = await payingFetch(chatUrl, { ...chatInit(question), signal: abort.signal });
    expect(res.status).toBe(200);
    const id = chargeOf(sentPayments.at(-1)!);
    const reader = res.body!.getReader();
    await reader.read(); // the first event arrived
    abort.abort();
    const expected = doubleReply('24B', [
      { role: 'system', content: LOGICAL },
      { role: 'user', content: question },
    ]);
    const record = await waitUntil(
      'the double to see the stream aborted',
      async () => (await doubleStreams()).find((s) => s.prompt === question && s.state === 'aborted'),
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    expect(record.content.length).toBeLessThan(expected.length);
    await waitForCharge(id, 'client_closed', 10_000);
  });

  test('provider failure before the first byte: 502, the payment is refunded in full', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const revenueBefore = await h.balanceOf(revenue);
    const res = await payingFetch(chatUrl, chatInit('#fail-before-first-byte please'));
    expect(res.status).toBe(502);
    const settle = decodeXPaymentResponse(res.headers.get('x-payment-response')!);
    expect(settle.success).toBe(true);
    const id = chargeOf(sentPayments.at(-1)!);
    expect(await res.json()).toEqual({
      error: 'provider_failed',
      message: 'provider modelserver answered HTTP 503', // the provider's own text stays in our logs
      chargeId: id,
      refund: 'pending',
    });
    const refunded = await waitForCharge(id, 'refunded');
    expect(refunded.refundTx).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await h.chain.getTransactionReceipt({ hash: refunded.refundTx as Hex })).status).toBe('success');
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
    expect(await h.balanceOf(revenue)).toBe(revenueBefore);
  });

  test('provider failure mid-stream: an error event instead of [DONE], the payment is refunded in full', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const question = `#fail-mid-stream tell me a long story about durable payments and streams on ${kind}`;
    const res = await payingFetch(chatUrl, chatInit(question));
    expect(res.status).toBe(200);
    const id = chargeOf(sentPayments.at(-1)!);
    const { data, errors } = parseSse(await res.text());
    expect(data).not.toContain('[DONE]');
    const expected = doubleReply('24B', [
      { role: 'system', content: LOGICAL },
      { role: 'user', content: question },
    ]);
    const partial = contentOf(data);
    expect(partial.length).toBeGreaterThan(0);
    expect(expected.startsWith(partial) && partial !== expected).toBe(true);
    expect(errors).toEqual([
      { error: 'provider_failed', message: expect.stringContaining('modelserver'), chargeId: id, refund: 'pending' },
    ]);
    await waitForCharge(id, 'refunded');
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
  });

  /**
   * An API process of its own (so it can really die) on the same database, Temporal and worker, whose
   * charge guard looks `guardDelayMs` after a claim. Started again on another port if the one picked
   * was taken before the API bound it.
   */
  const guardedApi = (guardDelayMs: number) =>
    retryOnPortClash(
      () => startGuardedApi(guardDelayMs),
      () => undefined,
    );
  const startGuardedApi = async (guardDelayMs: number) => {
    const port = await findFreePort();
    const url = `http://127.0.0.1:${port}`;
    const api = spawnManaged('api', process.execPath, entryArgs(join(__dirname, '..', '..', 'src', 'api', 'main.ts')), {
      env: {
        ...process.env,
        ...h.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        PUBLIC_URL: url,
        LOG_LEVEL: 'warn',
        INFERENCE_GUARD_DELAY_MS: String(guardDelayMs),
      },
      cwd: join(__dirname, '..', '..'),
      log: () => undefined,
    });
    try {
      await waitForHttp(`${url}/healthz`, { timeoutMs: 60_000, intervalMs: 100, process: api });
    } catch (err) {
      await api.stop({ signal: 'SIGKILL' });
      throw err;
    }
    return { url, api };
  };

  test('a reply still streaming when its charge guard looks: the guard waits for it, the chat is delivered and not refunded', async () => {
    // An API process whose guard looks at its charges 3 s after claiming them, while the reply takes ~8 s.
    const { url, api } = await guardedApi(3000);
    try {
      const buyerBefore = await h.balanceOf(buyer.address);
      const question = `#token-delay=200 a live stream on ${kind} ${Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ')}`;
      const res = await payingFetch(`${url}/v1/inference/chat`, chatInit(question));
      expect(res.status).toBe(200);
      const id = chargeOf(sentPayments.at(-1)!);
      const text = await res.text(); // read to the end, past the guard's delay
      expect(parseSse(text).data.at(-1)).toBe('[DONE]');
      expect(await h.temporal.workflow.getHandle(chargeGuardWorkflowId(id)).result()).toEqual({ state: 'not_owed', refundTx: '' });
      expect(await charge(id)).toMatchObject({ state: 'delivered', refundTx: null });
      expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - PRICE);
    } finally {
      await api.stop({ signal: 'SIGKILL' });
    }
  });

  test('API process killed mid-stream: the charge guard refunds the charge it left behind', async () => {
    // A separate API process (so it can really die), on the same database, Temporal and worker,
    // whose guard looks at its charges 6 s after claiming them.
    const { url, api } = await guardedApi(6000);
    try {
      const buyerBefore = await h.balanceOf(buyer.address);
      // A chat this API finishes: its guard finds it delivered and leaves it alone.
      const served = await payingFetch(`${url}/v1/inference/chat`, chatInit(`served by the guarded API on ${kind}`));
      expect(parseSse(await served.text()).data.at(-1)).toBe('[DONE]');
      const servedId = chargeOf(sentPayments.at(-1)!);
      await waitForCharge(servedId, 'delivered', 5_000);

      const question = `#token-delay=200 guard on ${kind} ${Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ')}`;
      const res = await payingFetch(`${url}/v1/inference/chat`, chatInit(question));
      expect(res.status).toBe(200);
      const id = chargeOf(sentPayments.at(-1)!);
      await res.body!.getReader().read(); // streaming has begun
      expect((await charge(id))?.state).toBe('charged');
      api.child.kill('SIGKILL');
      await api.exited;
      // Nothing else will finish this charge: the guard refunds it, once.
      const refunded = await waitForCharge(id, 'refunded', 60_000);
      expect(refunded.error).toBe('the API did not finish this paid chat (process stopped)');
      expect(await h.temporal.workflow.getHandle(chargeGuardWorkflowId(servedId)).result()).toEqual({ state: 'not_owed', refundTx: '' });
      expect((await charge(servedId))?.state).toBe('delivered');
      expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - PRICE); // the served chat only
      const stream = (await doubleStreams()).find((x) => x.prompt === question);
      expect(stream?.state).toBe('aborted'); // the upstream connection died with the API
    } finally {
      await api.stop({ signal: 'SIGKILL' });
    }
  });

  test('worker killed while the refund transfer is in flight: exactly one refund', async () => {
    const rpcUrl = stack.chains['base-sepolia'].rpcUrl;
    const buyerBefore = await h.balanceOf(buyer.address);
    const refundsBefore = (await transfers(revenue, buyer.address)).length;
    const sent = sentPayments.length;
    const pending = payingFetch(chatUrl, chatInit('#first-byte-delay=3000 #fail-before-first-byte'));
    const id = await waitUntil('the payment', async () => (sentPayments.length > sent ? chargeOf(sentPayments.at(-1)!) : undefined), {
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    await waitForCharge(id, 'charged');
    // The settlement is mined; from now on the chain holds transactions in the mempool.
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const relayerNonce = await h.chain.getTransactionCount({ address: revenue });
    const res = await pending;
    expect(res.status).toBe(502);

    const txId = relayerTxId(refundWorkflowId(id), 'refund');
    const recorded = await waitUntil(
      'the refund transfer to be recorded',
      () =>
        h.tdb.db.em
          .fork()
          .findOne(RelayerTransaction, { id: txId })
          .then((r) => r ?? undefined),
      {
        timeoutMs: 30_000,
        intervalMs: 50,
      },
    );
    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();
    expect((await charge(id))?.state).toBe('refund_pending');

    await rpc(rpcUrl, 'evm_mine', []);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    const refunded = await waitForCharge(id, 'refunded', 90_000);
    expect(refunded.refundTx).toBe(recorded.hash);
    expect(await h.chain.getTransactionCount({ address: revenue })).toBe(relayerNonce + 1);
    const refunds = await transfers(revenue, buyer.address);
    expect(refunds.length).toBe(refundsBefore + 1);
    expect(refunds.at(-1)!.args.value).toBe(PRICE);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
    const rows = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${refundWorkflowId(id)}%` } });
    expect(rows.map((r) => r.status)).toEqual(['mined']);
  });

  test("a refund mined and reverted (USDC paused with Circle's pauser key before it was mined) parks in needs_review with the reason, nothing paid; a worker SIGKILLed while parked changes nothing; ops refund pays once", async () => {
    const rpcUrl = stack.chains['base-sepolia'].rpcUrl;
    const pauser = createWalletClient({ account: privateKeyToAccount(DEVNET_USDC_ISSUER_KEY), transport: http(rpcUrl) });
    const pausable = parseAbi(['function pause()', 'function unpause()', 'function paused() view returns (bool)']);
    await rpc(rpcUrl, 'anvil_setBalance', [pauser.account.address, numberToHex(10n ** 20n)]);
    const receiptOf = (hash: string) =>
      rpc<{ status: string; transactionIndex: string; blockNumber: string } | null>(rpcUrl, 'eth_getTransactionReceipt', [hash]);
    const sent = sentPayments.length;
    const pending = payingFetch(chatUrl, chatInit('#first-byte-delay=3000 #fail-before-first-byte paused refund'));
    const id = await waitUntil('the payment', async () => (sentPayments.length > sent ? chargeOf(sentPayments.at(-1)!) : undefined), {
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    await waitForCharge(id, 'charged');
    const buyerPaid = await h.balanceOf(buyer.address); // after the payment
    const revenuePaid = await h.balanceOf(revenue);
    const refundsBefore = (await transfers(revenue, buyer.address)).length;
    // The settlement is mined; from now on the chain holds transactions in the mempool.
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    expect((await pending).status).toBe(502);
    const workflowId = refundWorkflowId(id);
    const records = () => h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${workflowId}:%` } }, { orderBy: { id: 'asc' } });
    const refund = await waitUntil('the refund transfer to be recorded', async () => (await records())[0], {
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    expect(refund.id).toBe(relayerTxId(workflowId, 'refund'));
    expect(await receiptOf(refund.hash)).toBeNull(); // signed while USDC was not paused, waiting in the pool
    // FiatToken's pauser pauses it in the refund's block, ahead of it (a higher tip).
    const pause = await pauser.writeContract({
      chain: null,
      address: stack.usdc,
      abi: pausable,
      functionName: 'pause',
      maxFeePerGas: 1_000_000_000_000n,
      maxPriorityFeePerGas: 500_000_000_000n,
    });
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    await rpc(rpcUrl, 'evm_mine', []);
    const [paused, reverted] = [(await receiptOf(pause))!, (await receiptOf(refund.hash))!];
    expect({ pause: paused.status, refund: reverted.status, sameBlock: paused.blockNumber === reverted.blockNumber }).toEqual({
      pause: '0x1',
      refund: '0x0',
      sameBlock: true,
    });
    expect(Number(paused.transactionIndex)).toBeLessThan(Number(reverted.transactionIndex));

    const reason = `the refund ${refund.hash} was mined and reverted; nothing was paid`;
    const parked = await waitForCharge(id, 'needs_review', 60_000);
    expect({ error: parked.error, refundTx: parked.refundTx }).toEqual({ error: reason, refundTx: refund.hash });
    const handle = h.temporal.workflow.getHandle(workflowId);
    const described = await handle.describe();
    expect(described.memo?.[PARKED_MEMO]).toEqual({ reason, at: expect.any(String) });
    expect({ status: described.status.name, state: described.typedSearchAttributes.get(X402State) }).toEqual({
      status: 'RUNNING',
      state: 'needs_review',
    });
    // The chain could pay now; nothing does without an operator.
    const unpaused = await pauser.writeContract({ chain: null, address: stack.usdc, abi: pausable, functionName: 'unpause' });
    expect((await h.chain.waitForTransactionReceipt({ hash: unpaused })).status).toBe('success');
    expect(await h.chain.readContract({ address: stack.usdc, abi: pausable, functionName: 'paused' })).toBe(false);

    // A worker SIGKILLed while the refund waits: the new one replays the parked history and waits on
    // (it answers the update's validator, so it has replayed it).
    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();
    await expect(handle.executeUpdate(refundChargeUpdate, { args: [{ operator: '', reason: 'x' }] })).rejects.toMatchObject({
      cause: { message: 'an operator action needs a non-empty operator and reason (at most 500 characters each)' },
    });
    expect((await records()).map((r) => r.id)).toEqual([relayerTxId(workflowId, 'refund')]);
    expect((await charge(id))?.state).toBe('needs_review');
    expect(await h.balanceOf(buyer.address)).toBe(buyerPaid);
    expect(await h.balanceOf(revenue)).toBe(revenuePaid);
    expect(await transfers(revenue, buyer.address)).toHaveLength(refundsBefore);

    const ops = opsCli(h.stack.temporalAddress);
    const done = await ops('refund', '--workflow-id', workflowId, '--operator', 'alice', '--reason', 'USDC unpaused (INC-12)');
    expect(done.out).toContain('done: {"state":"refunded","refundTx":"0x');
    expect(done.out).toContain('"operatorActions":[{"action":"refund","operator":"alice","reason":"USDC unpaused (INC-12)"');
    expect(done.code).toBe(0);
    const after = await records();
    expect(after.map((r) => r.id)).toEqual([relayerTxId(workflowId, 'refund'), relayerTxId(workflowId, 'refund-2')]);
    expect(await Promise.all(after.map(async (r) => (await receiptOf(r.hash))!.status))).toEqual(['0x0', '0x1']);
    expect(await charge(id)).toMatchObject({ state: 'refunded', refundTx: after[1]!.hash });
    const refunds = await transfers(revenue, buyer.address);
    expect(refunds).toHaveLength(refundsBefore + 1);
    expect(refunds.at(-1)!.args.value).toBe(PRICE);
    expect(await h.balanceOf(buyer.address)).toBe(buyerPaid + PRICE);
    expect(await h.balanceOf(revenue)).toBe(revenuePaid - PRICE);
  });

  test("an X-PAYMENT whose signature is not the payer's: 402, and no ledger row or workflow is created", async () => {
    const other = privateKeyToAccount(generatePrivateKey());
    // An authorization from someone else's address, signed by the buyer: well-formed, unverifiable.
    const validBefore = BigInt(Math.floor(Date.now() / 1000) + 120); // the chat challenge's maxTimeoutSeconds
    const { paymentPayload } = await h.pay(other, { value: PRICE, validBefore, signer: buyer });
    const nonce = paymentPayload.payload.authorization.nonce;
    const forged = Buffer.from(JSON.stringify(paymentPayload)).toString('base64');
    const res = await fetch(chatUrl, { ...chatInit('hello'), headers: { 'content-type': 'application/json', 'X-PAYMENT': forged } });
    expect(res.status).toBe(402);
    expect(await res.json()).toMatchObject({ x402Version: 1, error: 'invalid_exact_evm_payload_signature' });
    expect(await charge(chatChargeId('base-sepolia', other.address, nonce))).toBeNull();
    await expect(h.temporal.workflow.getHandle(settleWorkflowId('base-sepolia', other.address, nonce)).describe()).rejects.toThrow(
      /not found/i,
    );
    await expect(
      h.temporal.workflow.getHandle(chargeGuardWorkflowId(chatChargeId('base-sepolia', other.address, nonce))).describe(),
    ).rejects.toThrow(/not found/i);
  });

  test('a refund workflow started by hand with a forged payee and amount moves nothing (records decide, not the input)', async () => {
    // A paid, delivered chat: its charge is not owed anything.
    const sent = sentPayments.length;
    const res = await payingFetch(chatUrl, chatInit('A question whose answer is delivered.'));
    expect(res.status).toBe(200);
    await res.text();
    const id = chargeOf(sentPayments[sent]!);
    const delivered = await waitForCharge(id, 'delivered', 10_000);
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const revenueBefore = await h.balanceOf(revenue);
    const forged = (chargeId: string, settlementId: string) => ({
      workflowId: `refund:forged-${chargeId}`,
      chargeId,
      settlementId,
      network: 'base-sepolia' as const,
      payer: thief,
      amount: '1000000000',
      asset: stack.usdc,
      revenueWallet: revenue,
      reason: 'forged by hand',
    });

    // The charge of a real, delivered payment: the ledger says nothing is owed.
    const real = forged(id, delivered.settlementId);
    const handle = await h.temporal.workflow.start('refundWorkflow', {
      workflowId: real.workflowId,
      taskQueue: h.tdb.config.TEMPORAL_TASK_QUEUE,
      args: [real],
    });
    await expect(handle.result()).rejects.toMatchObject({ cause: { cause: { type: 'RefundNotOwed' } } });
    // A charge that does not exist, with the real settlement: nothing of ours to give back.
    const ghost = forged(`${id}-ghost`, delivered.settlementId);
    const ghostRun = await h.temporal.workflow.execute('refundWorkflow', {
      workflowId: ghost.workflowId,
      taskQueue: h.tdb.config.TEMPORAL_TASK_QUEUE,
      args: [ghost],
    });
    expect(ghostRun).toEqual({ state: 'not_charged', refundTx: '' });

    expect(await h.balanceOf(thief)).toBe(0n);
    expect(await h.balanceOf(revenue)).toBe(revenueBefore);
    expect((await charge(id))?.state).toBe('delivered');
    const rows = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${refundWorkflowId(id)}%` } });
    expect(rows).toEqual([]);
  });
});
