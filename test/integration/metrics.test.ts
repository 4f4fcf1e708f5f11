import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { register as globalRegistry } from 'prom-client';
import type { Client } from '@temporalio/client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createApp } from '../../src/api/app';
import { ConfigError } from '../../src/config';
import { Metrics } from '../../src/observability/metrics';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { openTestDatabase, type TestDatabase } from '../support/db';
import { getFromElsewhere, request, signIn, startApi, type RunningApi } from '../support/http';
import { exactPayment } from '../support/payments';
import { connectTestTemporal, stackEnv } from '../support/services';
import { readStackInfo } from '../support/stack-info';
import { sample } from '../support/promql';

/**
 * GET /metrics over real HTTP, with real Temporal (no worker on this file's task queue, so a
 * settlement stays running and answers pending): HTTP requests by route template, settlements by
 * route/network/outcome, latency histograms, workflow starts vs attaches, one registry per app.
 */

describe('GET /metrics', () => {
  let tdb: TestDatabase;
  let api: RunningApi;
  let temporal: Client;
  let cookie: string;
  let apiKey: string;
  const logLines: any[] = [];
  const started: string[] = [];
  const stack = readStackInfo();
  const scrape = async (base = api.baseUrl) => {
    const res = await request('GET', `${base}/metrics`);
    expect(res.status).toBe(200);
    return res.body as string;
  };

  beforeAll(async () => {
    const env = {
      ...stackEnv({ taskQueue: `metrics-${randomBytes(4).toString('hex')}`, relayerKey: TEST_ACCOUNTS.relayerKeys[0] }),
      SETTLE_WAIT_MS: '300',
    };
    tdb = await openTestDatabase('sqlite', env);
    temporal = await connectTestTemporal();
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line));
        done();
      },
    });
    api = await startApi({ db: tdb.db, config: tdb.config, temporal, logger: pino({ level: 'info' }, sink) });
    cookie = await signIn(api.baseUrl, privateKeyToAccount(generatePrivateKey()));
    const payout = privateKeyToAccount(generatePrivateKey()).address;
    await request('PATCH', `${api.baseUrl}/v1/organization`, { cookie, json: { payoutWalletTest: payout } });
    apiKey = (await request('POST', `${api.baseUrl}/v1/api_keys`, { cookie, json: { name: 'metrics', test_net: true } })).body.api_key;
  });
  afterAll(async () => {
    // Nothing runs this file's task queue: end the settlements it started.
    for (const id of started)
      await temporal.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => undefined);
    await api?.close();
    await temporal?.connection.close();
    await tdb?.close();
  });

  test('Prometheus text; HTTP requests by route template (never the raw path), method and status; latency histogram', async () => {
    const ids = [randomBytes(8).toString('hex'), randomBytes(8).toString('hex')];
    for (const id of ids) expect((await request('GET', `${api.baseUrl}/v1/api_keys/${id}`, { cookie })).status).toBe(404);
    await request('GET', `${api.baseUrl}/v1/supported`);
    await request('GET', `${api.baseUrl}/no/such/${ids[0]}`);

    const res = await request('GET', `${api.baseUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = res.body as string;
    expect(text).toContain('# TYPE x402_http_requests_total counter');
    expect(text).toContain('# TYPE x402_http_request_duration_seconds histogram');
    expect(sample(text, 'x402_http_requests_total', { method: 'GET', route: '/v1/api_keys/:id', status: '404' })).toBe(2);
    expect(sample(text, 'x402_http_requests_total', { method: 'GET', route: '/v1/supported', status: '200' })).toBe(1);
    expect(sample(text, 'x402_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(sample(text, 'x402_http_request_duration_seconds_count', { method: 'GET', route: '/v1/api_keys/:id', status: '404' })).toBe(2);
    expect(sample(text, 'x402_http_request_duration_seconds_bucket', { route: '/v1/supported', le: '+Inf' })).toBe(1);
    for (const id of ids) expect(text).not.toContain(id); // raw paths never become labels
    expect(text).not.toContain('process_cpu'); // process metrics are off under NODE_ENV=test
  });

  test('settlements by route, network and outcome; workflow started vs attached; settle latency', async () => {
    const before = await scrape();
    const bearer = { authorization: `Bearer ${apiKey}` };
    const settle = (json: unknown) => request('POST', `${api.baseUrl}/v1/settle`, { json, headers: bearer });
    const body = await exactPayment({
      buyer: privateKeyToAccount(generatePrivateKey()),
      network: 'base-sepolia',
      chainId: stack.chains['base-sepolia'].chainId,
      usdc: stack.usdc,
      facilitator: stack.facilitator,
    });
    const auth = body.paymentPayload.payload.authorization;
    started.push(settleWorkflowId('base-sepolia', auth.from, auth.nonce));

    // Unparseable payload: no route or network is known.
    expect((await settle({ paymentPayload: { nope: 1 }, paymentRequirements: {} })).body.errorReason).toBe('invalid_payload');
    // Parsed EIP-3009 payload on an unknown network (the label is bounded: not the client's string).
    const odd = structuredClone(body);
    odd.paymentPayload.network = 'my-own-chain';
    expect((await settle(odd)).body.errorReason).toBe('invalid_network');
    // No worker: the first request starts the workflow and answers pending, the repeat attaches.
    const first = await settle(body);
    expect({ status: first.status, reason: first.body.errorReason }).toEqual({ status: 202, reason: 'settlement_pending' });
    const again = await settle(body);
    expect({ status: again.status, reason: again.body.errorReason }).toEqual({ status: 202, reason: 'settlement_pending' });

    const text = await scrape();
    const delta = (name: string, labels: Record<string, string>) => sample(text, name, labels) - sample(before, name, labels);
    expect(delta('x402_settlements_total', { route: 'unknown', network: 'unknown', outcome: 'invalid_payload' })).toBe(1);
    expect(delta('x402_settlements_total', { route: 'eip3009', network: 'unknown', outcome: 'invalid_network' })).toBe(1);
    expect(delta('x402_settlements_total', { route: 'eip3009', network: 'base-sepolia', outcome: 'pending' })).toBe(2);
    expect(text).not.toContain('my-own-chain');
    expect(delta('x402_workflow_starts_total', { workflow: 'fastSettlementWorkflow', result: 'started' })).toBe(1);
    expect(delta('x402_workflow_starts_total', { workflow: 'fastSettlementWorkflow', result: 'attached' })).toBe(1);
    expect(delta('x402_settle_duration_seconds_count', { route: 'eip3009', network: 'base-sepolia', result: 'pending' })).toBe(2);
    expect(delta('x402_settle_duration_seconds_count', { route: 'unknown', network: 'unknown', result: 'failure' })).toBe(1);
    // Pending answers waited SETTLE_WAIT_MS (300 ms): nothing below the 0.25 s bucket.
    expect(delta('x402_settle_duration_seconds_bucket', { route: 'eip3009', network: 'base-sepolia', result: 'pending', le: '0.25' })).toBe(
      0,
    );
    expect(delta('x402_http_requests_total', { method: 'POST', route: '/v1/settle', status: '202' })).toBe(2);

    // Each start is logged with the request id, so the request can be followed to the workflow.
    const starts = logLines.filter((l) => l.msg === 'workflow start' && l.workflowId === started[0]);
    expect(starts.map((l) => l.result)).toEqual(['started', 'attached']);
    expect(starts.map((l) => l.requestId)).toEqual([first.headers.get('x-request-id'), again.headers.get('x-request-id')]);
  });

  test('each app has its own registry (several apps in one process), never the global one', async () => {
    const other = await startApi({ db: tdb.db, config: tdb.config, temporal });
    try {
      await request('GET', `${other.baseUrl}/v1/supported`);
      await request('GET', `${other.baseUrl}/v1/supported`);
      const mine = await scrape();
      const theirs = await scrape(other.baseUrl);
      expect(sample(theirs, 'x402_http_requests_total', { route: '/v1/supported' })).toBe(2);
      expect(sample(mine, 'x402_http_requests_total', { route: '/v1/supported' })).toBe(1);
      expect(other.deps.metrics).not.toBe(api.deps.metrics);
      expect(await globalRegistry.metrics()).not.toContain('x402_');
    } finally {
      await other.close();
    }
  });

  test('METRICS_ENABLED=false removes the route; an invalid value stops start-up; process metrics when asked', async () => {
    const off = await startApi({ db: tdb.db, config: { ...tdb.config, env: { ...tdb.config.env, METRICS_ENABLED: 'false' } } });
    try {
      expect((await request('GET', `${off.baseUrl}/metrics`)).status).toBe(404);
      const doc = await request('GET', `${off.baseUrl}/v1/openapi.json`);
      expect(doc.body.paths['/metrics']).toBeUndefined();
    } finally {
      await off.close();
    }
    const deps = { ...api.deps, metrics: undefined, config: { ...tdb.config, env: { ...tdb.config.env, METRICS_ENABLED: 'maybe' } } };
    expect(() => createApp(deps)).toThrow(ConfigError);
    expect(await new Metrics({ processMetrics: true }).registry.metrics()).toContain('process_cpu_user_seconds_total');
  });

  test('access: loopback callers only without METRICS_TOKEN; with it, the bearer token from anywhere', async () => {
    const fromElsewhere = (base: string) => getFromElsewhere(`${base}/metrics`);
    expect(await fromElsewhere(api.baseUrl)).toEqual({
      status: 403,
      body: { type: 'api_error', code: 403, message: 'metrics: loopback only' },
    });

    const token = randomBytes(16).toString('hex');
    const guarded = await startApi({ db: tdb.db, config: { ...tdb.config, METRICS_TOKEN: token }, temporal });
    try {
      const denied = { type: 'api_error', code: 403, message: 'metrics: send Authorization: Bearer <METRICS_TOKEN>' };
      expect(await request('GET', `${guarded.baseUrl}/metrics`)).toMatchObject({ status: 403, body: denied });
      expect(await request('GET', `${guarded.baseUrl}/metrics`, { headers: { authorization: 'Bearer nope' } })).toMatchObject({
        status: 403,
      });
      const ok = await request('GET', `${guarded.baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      expect(ok.body).toContain('x402_settlements_total');
    } finally {
      await guarded.close();
    }
  });
});
