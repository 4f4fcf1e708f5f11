import { randomBytes } from 'node:crypto';
import { formatEther } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { TEST_ACCOUNTS } from '../support/accounts';
import { getFromElsewhere, request } from '../support/http';
import { series, sample } from '../support/promql';
import { startTopupHarness, type TopupHarness } from '../support/topup-harness';

/**
 * The top-up gateway's own GET /metrics over real HTTP: its requests by route template, the gas and
 * nonces of its relayer (TOPUP_RELAYER_ADDRESS) read from the real `base` chain, no stuck-payment
 * gauge (the API exports that one), and the same loopback guard as the API's.
 */
describe('top-up gateway /metrics', () => {
  let h: TopupHarness;
  beforeAll(async () => {
    h = await startTopupHarness('sqlite', { relayerIndex: 1 });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('HTTP by route template, the top-up relayer gauges exactly as the chain has them, no stuck gauge', async () => {
    const health = await h.get('/healthz');
    expect(health.status).toBe(200);
    const buyer = privateKeyToAccount(generatePrivateKey()).address;
    expect((await h.get(`/v1/demo-merchant/topups/quote?buyer=${buyer}`)).status).toBe(200);
    expect((await h.get(`/v1/demo-merchant/topups/quote?buyer=${buyer}`)).status).toBe(200);
    const unknownId = `0x${randomBytes(32).toString('hex')}`;
    expect((await h.get(`/v1/demo-merchant/topups/${unknownId}`)).status).toBe(404);

    const res = await request('GET', `${h.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = res.body as string;
    expect(sample(text, 'x402_http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(1);
    expect(sample(text, 'x402_http_requests_total', { method: 'GET', route: '/v1/:merchant/topups/quote', status: '200' })).toBe(2);
    expect(sample(text, 'x402_http_request_duration_seconds_count', { route: '/v1/:merchant/topups/:id', status: '404' })).toBe(1);
    expect(text).not.toContain(unknownId);
    expect(text).not.toContain(buyer.slice(2).toLowerCase());

    const address = TEST_ACCOUNTS.relayers[1].address.toLowerCase();
    expect(h.topup.TOPUP_RELAYER_ADDRESS.toLowerCase()).toBe(address);
    const [balance, latest, pending] = await Promise.all([
      h.chain.getBalance({ address: TEST_ACCOUNTS.relayers[1].address }),
      h.chain.getTransactionCount({ address: TEST_ACCOUNTS.relayers[1].address, blockTag: 'latest' }),
      h.chain.getTransactionCount({ address: TEST_ACCOUNTS.relayers[1].address, blockTag: 'pending' }),
    ]);
    expect(series(text, 'x402_relayer_balance_ether', { network: 'base', address })).toEqual([Number(formatEther(balance))]);
    expect(series(text, 'x402_relayer_nonce', { network: 'base', address, kind: 'latest' })).toEqual([latest]);
    expect(series(text, 'x402_relayer_nonce', { network: 'base', address, kind: 'pending' })).toEqual([pending]);
    // This gateway's database has recorded nothing for it (the worker records its deposits).
    expect(series(text, 'x402_relayer_nonce', { kind: 'recorded' })).toEqual([]);
    // Only the relayer of this gateway is watched, on every enabled network.
    expect(series(text, 'x402_relayer_balance_ether').length).toBe(series(text, 'x402_relayer_balance_ether', { address }).length);
    expect(text).toContain('# TYPE x402_rpc_errors_total counter');
    expect(text).not.toContain('x402_stuck_payments');
  });

  test('from another address without METRICS_TOKEN: 403 in the top-up error shape', async () => {
    expect(await getFromElsewhere(`${h.url}/metrics`)).toEqual({
      status: 403,
      body: { success: false, errorReason: 'invalid_request', error: 'metrics: loopback only' },
    });
  });
});
