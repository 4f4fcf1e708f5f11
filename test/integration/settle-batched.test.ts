import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { waitUntil } from '../../devnet/process';
import { TEST_ACCOUNTS } from '../support/accounts';
import { openTestDatabase, type TestDatabase } from '../support/db';
import { gatewayHelpers } from '../support/gateway';
import { request, signIn, startApi, type RunningApi } from '../support/http';

/**
 * Batched nanopayments (settle routing step 2) on the real stack: our GatewayWallet on anvil, the
 * upstream gateway double reached over HTTP by its configured URL, the real API and database.
 */
describe('batched nanopayments: POST /v1/settle, POST /v1/verify, GET /v1/batched-sample', () => {
  const g = gatewayHelpers();
  const buyer = TEST_ACCOUNTS.buyers[4];
  const seller = privateKeyToAccount(generatePrivateKey()).address;
  let tdb: TestDatabase;
  let api: RunningApi;
  let apiKey: string;
  let organizationId: string;
  let organizationName: string;
  const extra: RunningApi[] = [];

  beforeAll(async () => {
    tdb = await openTestDatabase('sqlite', { GATEWAY_API_URL_TESTNET: g.stack.gatewayApiUrl, GATEWAY_API_URL: g.stack.gatewayApiUrl });
    api = await startApi({ db: tdb.db, config: tdb.config });
    const owner = privateKeyToAccount(generatePrivateKey());
    const cookie = await signIn(api.baseUrl, owner);
    const org = await request('GET', `${api.baseUrl}/v1/organization`, { cookie });
    organizationId = org.body.id;
    organizationName = org.body.name;
    const key = await request('POST', `${api.baseUrl}/v1/api_keys`, { cookie, json: { name: 'seller', test_net: true } });
    apiKey = key.body.api_key;
    await g.deposit(buyer, 5_000_000n);
  });
  afterAll(async () => {
    for (const a of extra) await a.close();
    await api?.close();
    await tdb?.close();
  });

  /** Another API on the same database with some configuration changed. */
  async function apiWith(config: Partial<typeof tdb.config>): Promise<RunningApi> {
    const a = await startApi({ db: tdb.db, config: { ...tdb.config, ...config } });
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
    const transfer = await waitUntil(
      'the batch to be applied',
      async () => {
        const t = await request('GET', `${g.stack.gatewayApiUrl}/v1/x402/transfers/${res.body.transaction}`);
        return t.body.status === 'completed' ? t.body : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    const receipt = await g.client.getTransactionReceipt({ hash: transfer.transaction });
    expect(receipt.status).toBe('success');
    expect(receipt.to?.toLowerCase()).toBe(g.wallet.toLowerCase());
    expect(await g.view('availableBalance', buyer.address)).toBe(buyerBefore - 1_250n);
    expect(await g.view('availableBalance', seller)).toBe(sellerBefore + 1_250n);

    // The same authorization again is the same transfer, and nothing moves twice.
    const again = await post(api.baseUrl, '/v1/settle', body);
    expect(again.status).toBe(200);
    expect(again.body.transaction).toBe(res.body.transaction);
    await new Promise((r) => setTimeout(r, 800)); // more than one batch interval
    expect(await g.view('availableBalance', buyer.address)).toBe(buyerBefore - 1_250n);
    expect(await g.view('availableBalance', seller)).toBe(sellerBefore + 1_250n);
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
    expect(bad.body).toMatchObject({ success: false, errorReason: 'invalid_signature', settlementMethod: 'batched', network: 'base-sepolia' });
    expect(bad.body.authContext).toBeUndefined();
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
    const down = await apiWith({ GATEWAY_API_URL_TESTNET: 'http://127.0.0.1:9' });
    const before = await g.view('availableBalance', buyer.address);
    const body = await g.batchedPayment({ buyer, payTo: seller, value: 10n });
    const res = await post(down.baseUrl, '/v1/settle', body);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ success: false, errorReason: 'batched_settle_error', transaction: '', network: 'base-sepolia' });
    await new Promise((r) => setTimeout(r, 800));
    expect(await g.view('availableBalance', buyer.address)).toBe(before);
  });

  test('verify: the batched branch forwards and adds verificationMethod and testnet', async () => {
    const body = await g.batchedPayment({ buyer, payTo: seller, value: 10n });
    const ok = await post(api.baseUrl, '/v1/verify', body);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ isValid: true, payer: buyer.address, verificationMethod: 'batched', testnet: true });

    const forged = await g.batchedPayment({ buyer, payTo: seller, value: 10n, signer: TEST_ACCOUNTS.buyers[0] });
    const bad = await post(api.baseUrl, '/v1/verify', forged);
    expect(bad.status).toBe(200);
    expect(bad.body).toEqual({ isValid: false, invalidReason: 'invalid_signature', payer: buyer.address, verificationMethod: 'batched', testnet: true });

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
});
