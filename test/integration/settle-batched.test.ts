import { randomBytes } from 'node:crypto';
import type { Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { parseEventLogs } from 'viem';
import { waitUntil, type ManagedProcess } from '../../devnet/process';
import { startDevnetGateway } from '../../devnet/gateway-devnet';
import type { GatewayDouble } from '../../devnet/gateway-double';
import { mainnetDevnetEnv } from '../../devnet/start-topup';
import { Settlement } from '../../src/db/entities';
import { batchedWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { gatewayHelpers } from '../support/gateway';
import { request, startApi, type RunningApi } from '../support/http';
import { startWorker } from '../support/services';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { gatewayWalletAbi } from '../../src/chains/evm/abi';

// The real x402 v1 client (x402-fetch's signer); its subpath types need another moduleResolution.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { createPaymentHeader } = require('x402/client') as {
  createPaymentHeader(signer: unknown, version: number, requirements: unknown): Promise<string>;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { createSigner } = require('x402/types') as { createSigner(network: string, privateKey: Hex): Promise<unknown> };

/**
 * Batched nanopayments (settle routing step 2) on the real stack: our GatewayWallet on anvil, the
 * upstream gateway double reached over HTTP by its configured URL, the batched settlement workflow
 * on a real worker, the real API and database.
 */
describe.each(oneDbKind('postgres'))('batched nanopayments: POST /v1/settle, POST /v1/verify, GET /v1/batched-sample (%s)', (kind) => {
  const g = gatewayHelpers();
  const buyer = TEST_ACCOUNTS.buyers[4];
  const seller = privateKeyToAccount(generatePrivateKey()).address;
  let h: SettleHarness;
  let apiKey: string;
  let organizationId: string;
  let organizationName: string;
  const extra: RunningApi[] = [];
  const workers: ManagedProcess[] = [];
  /** A second upstream double standing for the mainnet gateway (GATEWAY_API_URL), over the devnet `base` chain. */
  let mainnetGateway: GatewayDouble;

  beforeAll(async () => {
    const base = g.stack.chains.base;
    mainnetGateway = await startDevnetGateway({
      chains: [{ network: 'base', chainId: base.chainId, rpcUrl: base.rpcUrl }],
      usdc: g.stack.usdc,
      withdrawalDelayBlocks: 5,
      batchIntervalMs: 300,
    });
    h = await startSettleHarness(kind, {
      relayerIndex: 0,
      env: {
        GATEWAY_API_URL_TESTNET: g.stack.gatewayApiUrl,
        GATEWAY_API_URL: mainnetGateway.url,
        GATEWAY_WALLET_MAINNET: g.wallet,
        ...mainnetDevnetEnv(base.rpcUrl, g.stack.chains.optimism.rpcUrl),
        SETTLE_WAIT_MS: '30000',
      },
    });
    apiKey = h.apiKey;
    const org = await request('GET', `${h.api.baseUrl}/v1/organization`, { cookie: h.cookie });
    organizationId = org.body.id;
    organizationName = org.body.name;
    await g.deposit(buyer, 5_000_000n);
  });
  afterAll(async () => {
    await setSettleDelay(0).catch(() => undefined);
    for (const a of extra) await a.close();
    for (const w of workers) await w.stop();
    await h?.close();
    await mainnetGateway?.stop();
  });

  const setSettleDelay = (ms: number) => request('POST', `${g.stack.gatewayApiUrl}/_devnet/settle-delay`, { json: { ms } });
  const transfersOf = async (from: string, nonce: string, gatewayUrl = g.stack.gatewayApiUrl) =>
    (await request('GET', `${gatewayUrl}/v1/x402/transfers?from=${from}&nonce=${nonce}`)).body.transfers as any[];
  const settledEvents = async (from: string, nonce: string) => {
    const logs = await g.client.getLogs({ address: g.wallet, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: gatewayWalletAbi, logs, eventName: 'PaymentSettled' }).filter(
      (l) => l.args.from.toLowerCase() === from.toLowerCase() && l.args.nonce === nonce,
    ).length;
  };
  const untilCompleted = (transferId: string) =>
    waitUntil(
      'the batch to be applied',
      async () => {
        const t = await request('GET', `${g.stack.gatewayApiUrl}/v1/x402/transfers/${transferId}`);
        return t.body.status === 'completed' ? t.body : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
  const api = {
    get baseUrl() {
      return h.api.baseUrl;
    },
  };

  /** Another API on the same database with some configuration changed. */
  async function apiWith(config: Partial<SettleHarness['tdb']['config']>): Promise<RunningApi> {
    const a = await startApi({ db: h.tdb.db, config: { ...h.tdb.config, ...config }, temporal: h.temporal });
    extra.push(a);
    return a;
  }
  const post = (base: string, path: string, json: unknown) =>
    request('POST', `${base}${path}`, { json, headers: { authorization: `Bearer ${apiKey}` } });

  test('settle: 200 with the forwarded result, and the batch moves balances in the gateway wallet', async () => {
    const [buyerBefore, sellerBefore] = await Promise.all([g.view('availableBalance', buyer.address), g.view('availableBalance', seller)]);
    const body = await g.batchedPayment({ buyer, payTo: seller, value: 1_250n });

    const res = await post(api.baseUrl, '/v1/settle', body);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      transaction: expect.stringMatching(/^[0-9a-f-]{36}$/),
      network: 'base-sepolia',
      payer: buyer.address,
      settlementMethod: 'batched',
      testnet: true,
      authContext: { organizationId, authMethod: 'middleware_handled', timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
    });
    // The upstream applies it in its next batch: one settleBatch transaction from the operator.
    const transfer = await untilCompleted(res.body.transaction);
    const receipt = await g.client.getTransactionReceipt({ hash: transfer.transaction });
    expect(receipt.status).toBe('success');
    expect(receipt.to?.toLowerCase()).toBe(g.wallet.toLowerCase());
    expect(await g.view('availableBalance', buyer.address)).toBe(buyerBefore - 1_250n);
    expect(await g.view('availableBalance', seller)).toBe(sellerBefore + 1_250n);

    const a = body.paymentPayload.payload.authorization;
    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: batchedWorkflowId('base-sepolia', buyer.address, a.nonce) });
    expect(row).toMatchObject({
      route: 'batched',
      state: 'accepted',
      transaction: res.body.transaction,
      amount: '1250',
      recipient: seller.toLowerCase(),
    });
    expect(await settledEvents(buyer.address, a.nonce)).toBe(1);

    // The same authorization again is the same transfer, and nothing moves twice: the upstream holds
    // one transfer for this nonce, already applied, so no batch can carry it again.
    const again = await post(api.baseUrl, '/v1/settle', body);
    expect(again.status).toBe(200);
    expect(again.body.transaction).toBe(res.body.transaction);
    expect((await transfersOf(buyer.address, a.nonce)).map((t) => [t.id, t.status])).toEqual([[res.body.transaction, 'completed']]);
    expect(await settledEvents(buyer.address, a.nonce)).toBe(1);
    expect(await g.view('availableBalance', buyer.address)).toBe(buyerBefore - 1_250n);
    expect(await g.view('availableBalance', seller)).toBe(sellerBefore + 1_250n);
  });

  test('settle: a payment signed by the real x402 v1 client (x402/client) from the requirements', async () => {
    const { paymentRequirements } = await g.batchedPayment({ buyer, payTo: seller, value: 321n });
    const signer = await createSigner('base-sepolia', TEST_ACCOUNTS.buyerKeys[4] as Hex);
    const header = await createPaymentHeader(signer, 1, paymentRequirements);
    const paymentPayload = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
    const res = await post(api.baseUrl, '/v1/settle', { paymentPayload, paymentRequirements });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      payer: buyer.address,
      settlementMethod: 'batched',
      network: 'base-sepolia',
      testnet: true,
    });
    expect((await untilCompleted(res.body.transaction)).value).toBe('321');
  });

  test('the upstream gateway knows CAIP-2 ids only: a v1 network name is refused there, so we forward eip155:<chainId>', async () => {
    // Straight to the double, as the upstream would be called with v1 names: refused.
    const v1 = await g.batchedPayment({ buyer, payTo: seller, value: 5n });
    const refused = await request('POST', `${g.stack.gatewayApiUrl}/v1/x402/settle`, { json: v1 });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      success: false,
      errorReason: 'invalid_network',
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
    });
    const refusedVerify = await request('POST', `${g.stack.gatewayApiUrl}/v1/x402/verify`, { json: v1 });
    expect(refusedVerify.body).toEqual({ isValid: false, invalidReason: 'invalid_network', payer: buyer.address });
    expect(await transfersOf(buyer.address, v1.paymentPayload.payload.authorization.nonce)).toHaveLength(0);

    // The same payment through us is accepted: the upstream saw `eip155:84532`, and we answer in our id.
    const res = await post(api.baseUrl, '/v1/settle', v1);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, network: 'base-sepolia', settlementMethod: 'batched' });
    const [transfer] = await transfersOf(buyer.address, v1.paymentPayload.payload.authorization.nonce);
    expect(transfer).toMatchObject({ id: res.body.transaction, network: `eip155:${g.stack.chains['base-sepolia'].chainId}` });
    await untilCompleted(transfer.id);
  });

  test('testnets go to GATEWAY_API_URL_TESTNET, mainnets to GATEWAY_API_URL (a live key on `base`)', async () => {
    const live = await request('POST', `${h.api.baseUrl}/v1/api_keys`, { cookie: h.cookie, json: { name: 'live', test_net: false } });
    expect(live.status).toBe(201);
    const mainnet = gatewayHelpers('base');
    await mainnet.deposit(buyer, 1_000n);
    const [buyerBefore, sellerBefore] = await Promise.all([
      mainnet.view('availableBalance', buyer.address),
      mainnet.view('availableBalance', seller),
    ]);
    const body = await mainnet.batchedPayment({ buyer, payTo: seller, value: 400n, network: 'base' });
    const nonce = body.paymentPayload.payload.authorization.nonce;

    const verify = await request('POST', `${api.baseUrl}/v1/verify`, {
      json: body,
      headers: { authorization: `Bearer ${live.body.api_key}` },
    });
    expect(verify.body).toEqual({ isValid: true, payer: buyer.address, verificationMethod: 'batched', testnet: false });
    const res = await request('POST', `${api.baseUrl}/v1/settle`, {
      json: body,
      headers: { authorization: `Bearer ${live.body.api_key}` },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, network: 'base', payer: buyer.address, settlementMethod: 'batched', testnet: false });

    // The mainnet double took it (as eip155:8453); the testnet double never heard of it.
    const [transfer] = await transfersOf(buyer.address, nonce, mainnetGateway.url);
    expect(transfer).toMatchObject({ id: res.body.transaction, network: 'eip155:8453', value: '400' });
    expect(await transfersOf(buyer.address, nonce)).toHaveLength(0);
    await mainnetGateway.flush();
    expect(await mainnet.view('availableBalance', buyer.address)).toBe(buyerBefore - 400n);
    expect(await mainnet.view('availableBalance', seller)).toBe(sellerBefore + 400n);

    // And a testnet payment reaches the testnet double only.
    const testnet = await g.batchedPayment({ buyer, payTo: seller, value: 6n });
    const tn = testnet.paymentPayload.payload.authorization.nonce;
    expect((await post(api.baseUrl, '/v1/settle', testnet)).status).toBe(200);
    expect(await transfersOf(buyer.address, tn)).toHaveLength(1);
    expect(await transfersOf(buyer.address, tn, mainnetGateway.url)).toHaveLength(0);
    await untilCompleted((await transfersOf(buyer.address, tn))[0].id);
  });

  test('settle: an upstream failure is 400 with the forwarded result and no authContext', async () => {
    const available = await g.view('availableBalance', buyer.address);
    const body = await g.batchedPayment({ buyer, payTo: seller, value: available + 1n });
    const res = await post(api.baseUrl, '/v1/settle', body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      success: false,
      errorReason: 'insufficient_balance',
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
      settlementMethod: 'batched',
      testnet: true,
    });

    const forged = await g.batchedPayment({ buyer, payTo: seller, value: 10n, signer: TEST_ACCOUNTS.buyers[0] });
    const bad = await post(api.baseUrl, '/v1/settle', forged);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      success: false,
      errorReason: 'invalid_signature',
      settlementMethod: 'batched',
      network: 'base-sepolia',
    });
    expect(bad.body.authContext).toBeUndefined();
  });

  test('settle and verify: below the spec minimum (1 base unit) -> amount_too_low here, never forwarded (issue 14)', async () => {
    const body = await g.batchedPayment({ buyer, payTo: seller, value: 0n });
    const res = await post(api.baseUrl, '/v1/settle', body);
    expect(res).toMatchObject({
      status: 400,
      body: { success: false, errorReason: 'amount_too_low', transaction: '', network: 'base-sepolia' },
    });
    const verify = await post(api.baseUrl, '/v1/verify', body);
    expect(verify).toMatchObject({ status: 200, body: { isValid: false, invalidReason: 'amount_too_low' } });
    // One base unit is a valid nanopayment: the mainnet gas minimum does not apply to batches.
    const one = await post(api.baseUrl, '/v1/verify', await g.batchedPayment({ buyer, payTo: seller, value: 1n }));
    expect(one).toMatchObject({ status: 200, body: { isValid: true } });
  });

  test('settle: 403 gateway_not_enabled for a mainnet when the mainnet flag is off', async () => {
    const off = await apiWith({ GATEWAY_MAINNET_ENABLED: false });
    const body = await g.batchedPayment({ buyer, payTo: seller, value: 10n, network: 'base' });
    const res = await post(off.baseUrl, '/v1/settle', body);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ success: false, errorReason: 'gateway_not_enabled', transaction: '', network: 'base' });
    // With the flag on (the default), the test key may not settle a mainnet: the key-mode 403.
    const on = await post(api.baseUrl, '/v1/settle', body);
    expect(on.status).toBe(403);
    expect(on.body).toEqual({ type: 'api_error', code: 403, message: 'test keys settle testnets only' });
  });

  test('settle: 500 batched_settle_error when the upstream is down; nothing moves', async () => {
    // The forward runs in the worker: this API's workflows go to a worker whose upstream is down.
    const queue = `batched-down-${randomBytes(4).toString('hex')}`;
    workers.push(await startWorker({ ...h.env, TEMPORAL_TASK_QUEUE: queue, GATEWAY_API_URL_TESTNET: 'http://127.0.0.1:9' }));
    const down = await apiWith({ TEMPORAL_TASK_QUEUE: queue });
    const before = await g.view('availableBalance', buyer.address);
    const body = await g.batchedPayment({ buyer, payTo: seller, value: 10n });
    const res = await post(down.baseUrl, '/v1/settle', body);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ success: false, errorReason: 'batched_settle_error', transaction: '', network: 'base-sepolia' });
    // The workflow is closed (failed) and the upstream never saw the payment: nothing can move it.
    const a = body.paymentPayload.payload.authorization;
    const workflowId = batchedWorkflowId('base-sepolia', buyer.address, a.nonce);
    expect((await h.temporal.workflow.getHandle(workflowId).describe()).status.name).toBe('FAILED');
    expect(await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: workflowId })).toMatchObject({
      state: 'failed',
      errorReason: 'batched_settle_error',
    });
    expect(await transfersOf(buyer.address, a.nonce)).toEqual([]);
    expect(await g.view('availableBalance', buyer.address)).toBe(before);

    // The failed forward may run again: once the upstream is back, the same request is accepted.
    const again = await post(api.baseUrl, '/v1/settle', body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ success: true, settlementMethod: 'batched', network: 'base-sepolia' });
  });

  test('settle: 202 settlement_pending while no worker runs the forward; a repeat attaches once one does', async () => {
    const queue = `batched-idle-${randomBytes(4).toString('hex')}`;
    const idle = await apiWith({ TEMPORAL_TASK_QUEUE: queue, SETTLE_WAIT_MS: 500 });
    const body = await g.batchedPayment({ buyer, payTo: seller, value: 11n });
    const res = await post(idle.baseUrl, '/v1/settle', body);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      success: false,
      errorReason: 'settlement_pending',
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
      settlementMethod: 'batched',
      testnet: true,
    });
    expect(await transfersOf(buyer.address, body.paymentPayload.payload.authorization.nonce)).toHaveLength(0);
    workers.push(await startWorker({ ...h.env, TEMPORAL_TASK_QUEUE: queue }));
    const final = await waitUntil(
      'the forward to finish',
      async () => {
        const r = await post(idle.baseUrl, '/v1/settle', body);
        return r.status === 202 ? undefined : r;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(final.status).toBe(200);
    expect(final.body).toMatchObject({ success: true, settlementMethod: 'batched' });
    expect(await transfersOf(buyer.address, body.paymentPayload.payload.authorization.nonce)).toHaveLength(1);
    await untilCompleted(final.body.transaction); // its batch lands before the next test measures balances
  });

  test('worker SIGKILLed while the upstream holds the answer: one accepted transfer, money moves once', async () => {
    const body = await g.batchedPayment({ buyer, payTo: seller, value: 777n });
    const a = body.paymentPayload.payload.authorization;
    const [buyerBefore, sellerBefore] = await Promise.all([g.view('availableBalance', buyer.address), g.view('availableBalance', seller)]);
    await setSettleDelay(60_000);
    const first = post(api.baseUrl, '/v1/settle', body);
    // The upstream has accepted the payment and not yet answered: kill the worker in that window.
    await waitUntil('the upstream to accept', async () => (await transfersOf(buyer.address, a.nonce)).length === 1, {
      timeoutMs: 20_000,
      intervalMs: 50,
    });
    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();
    await setSettleDelay(0);

    // The original request gets the answer from the retried forward; a repeat attaches to it.
    const res = await first;
    expect(res.status).toBe(200);
    const [transfer] = await transfersOf(buyer.address, a.nonce);
    expect(res.body).toMatchObject({ success: true, transaction: transfer.id, settlementMethod: 'batched', payer: buyer.address });
    const repeat = await post(api.baseUrl, '/v1/settle', body);
    expect(repeat.body.transaction).toBe(transfer.id);
    await untilCompleted(transfer.id);
    expect(await transfersOf(buyer.address, a.nonce)).toHaveLength(1);
    expect(await settledEvents(buyer.address, a.nonce)).toBe(1);
    expect(await g.view('availableBalance', buyer.address)).toBe(buyerBefore - 777n);
    expect(await g.view('availableBalance', seller)).toBe(sellerBefore + 777n);
  });

  test('verify: the batched branch forwards and adds verificationMethod and testnet', async () => {
    const body = await g.batchedPayment({ buyer, payTo: seller, value: 10n });
    const ok = await post(api.baseUrl, '/v1/verify', body);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ isValid: true, payer: buyer.address, verificationMethod: 'batched', testnet: true });

    const forged = await g.batchedPayment({ buyer, payTo: seller, value: 10n, signer: TEST_ACCOUNTS.buyers[0] });
    const bad = await post(api.baseUrl, '/v1/verify', forged);
    expect(bad.status).toBe(200);
    expect(bad.body).toEqual({
      isValid: false,
      invalidReason: 'invalid_signature',
      payer: buyer.address,
      verificationMethod: 'batched',
      testnet: true,
    });

    const down = await apiWith({ GATEWAY_API_URL_TESTNET: 'http://127.0.0.1:9' });
    const err = await post(down.baseUrl, '/v1/verify', body);
    expect(err.status).toBe(500);
    expect(err.body).toEqual({ errorReason: 'batched_verify_error' });

    const off = await apiWith({ GATEWAY_MAINNET_ENABLED: false });
    const mainnet = await g.batchedPayment({ buyer, payTo: seller, value: 10n, network: 'base' });
    const notEnabled = await post(off.baseUrl, '/v1/verify', mainnet);
    expect(notEnabled.status).toBe(403);
    expect(notEnabled.body).toEqual({ errorReason: 'gateway_not_enabled' });
  });

  test('GET /v1/batched-sample: the gateway status record; 401 {error} without an organization', async () => {
    const res = await request('GET', `${api.baseUrl}/v1/batched-sample`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(res.status).toBe(200);
    const caip2 = `eip155:${g.stack.chains['base-sepolia'].chainId}`;
    expect(res.body).toEqual({
      success: true,
      data: {
        message: 'Batched nanopayments are settled through the upstream batching gateway',
        organization: organizationName,
        organizationId,
        gatewayMainnetEnabled: true,
        networkStatus: {
          'arc-testnet': true,
          'base-sepolia': true,
          'optimism-sepolia': true,
          'fluent-testnet': true,
          base: true,
          optimism: true,
          polygon: true,
          unichain: true,
          ink: true,
          hyperevm: true,
          megaeth: true,
        },
        gatewaySupported: {
          kinds: expect.arrayContaining([
            {
              x402Version: 1,
              scheme: 'exact',
              network: caip2,
              extra: { verifyingContract: g.wallet, assets: [{ address: g.stack.usdc, symbol: 'USDC', decimals: 6 }] },
            },
          ]),
        },
        endpoints: {
          settle: 'POST /v1/settle',
          verify: 'POST /v1/verify',
          batchedSettle: 'POST /v1/batched/settle',
          batchedVerify: 'POST /v1/batched/verify',
          status: 'GET /v1/batched-sample',
        },
        usage: { description: expect.stringContaining('GatewayWalletBatched'), note: expect.any(String) },
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    });

    const off = await apiWith({ GATEWAY_MAINNET_ENABLED: false, GATEWAY_API_URL_TESTNET: 'http://127.0.0.1:9' });
    const degraded = await request('GET', `${off.baseUrl}/v1/batched-sample`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(degraded.status).toBe(200);
    expect(degraded.body.data).toMatchObject({ gatewayMainnetEnabled: false, gatewaySupported: null });
    expect(degraded.body.data.networkStatus).toMatchObject({ 'base-sepolia': true, base: false, megaeth: false });

    const anonymous = await request('GET', `${api.baseUrl}/v1/batched-sample`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: expect.stringContaining('organization required') });
    expect(Object.keys(anonymous.body)).toEqual(['error']);
  });

  test('GET /v1/batched-sample when the database fails (a table is gone): 500 {error, message}, nothing internal', async () => {
    // The key's organization is read with it: that read fails for real, during authentication.
    const sql = (q: string) => h.tdb.db.em.fork().getConnection().execute(q);
    await sql('alter table organizations rename to organizations_away');
    try {
      const res = await request('GET', `${api.baseUrl}/v1/batched-sample`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'Internal server error', message: 'could not build the gateway status record' });
    } finally {
      await sql('alter table organizations_away rename to organizations');
    }
    const back = await request('GET', `${api.baseUrl}/v1/batched-sample`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(back.status).toBe(200);
  });
});
