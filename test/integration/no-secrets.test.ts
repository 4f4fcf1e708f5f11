import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { findFreePort } from '../../devnet/process';
import pino from 'pino';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { SESSION_COOKIE } from '../../src/auth/session-cookie';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { markersNamed } from '../support/history-events';
import { CookieJar, request, signedVerifyBody } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * No secret ever reaches a log line or Temporal: on the real stack (API in-process with a pino
 * logger at level trace and no redaction, a real worker process at LOG_LEVEL=trace, Temporal, anvil),
 * sign in with SIWE, create an API key, settle a payment, make the usual mistakes (the secret sent
 * as the bearer key, a bad cookie), then search every API log line, every line the worker printed
 * and the whole decoded workflow history (inputs, outputs, activities, memo) for the API secret and
 * public keys, the relayer's private key, the session cookie and the cookie signing key. The
 * request id of the settle response is the one in the workflow's memo.
 *
 * Shares relayer key 0 and buyers[0] with settle.test.ts: run in band with it (npm test does).
 */

jest.setTimeout(180_000);

/**
 * The history as JSON with every payload decoded: payloads (inputs, results, memo, search
 * attributes, failure details) are `{metadata, data}` with base64 bytes, JSON text once decoded.
 */
function decodedHistory(history: unknown): string {
  const decode = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(decode);
    if (!node || typeof node !== 'object') return node;
    const o = node as Record<string, unknown>;
    const isPayload = o.metadata && typeof o.metadata === 'object' && (o.data === undefined || typeof o.data === 'string');
    if (isPayload) {
      const text = (b64: unknown) => Buffer.from(String(b64 ?? ''), 'base64').toString('utf8');
      const metadata = Object.fromEntries(Object.entries(o.metadata as Record<string, unknown>).map(([k, v]) => [k, text(v)]));
      return { ...o, metadata, data: text(o.data) };
    }
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, decode(v)]));
  };
  const json = JSON.parse(JSON.stringify(history)); // protobuf JSON: bytes as base64
  return JSON.stringify(decode(json));
}

describe('no secret in logs or workflow history (sqlite)', () => {
  let h: SettleHarness;
  const apiLines: string[] = [];
  const workerLines: string[] = [];
  const buyer = TEST_ACCOUNTS.buyers[0];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        apiLines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    h = await startSettleHarness('sqlite', {
      relayerIndex: 0,
      env: { LOG_LEVEL: 'trace' },
      logger: pino({ level: 'trace' }, sink),
      onWorkerLine: (line) => workerLines.push(line),
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('sign-in, API key, settle: the secrets appear in no log line and nowhere in the workflow history', async () => {
    const base = h.api.baseUrl;
    // A SIWE sign-in: the session cookie (and its signature cookie) are secrets.
    const owner = privateKeyToAccount(generatePrivateKey());
    const jar = new CookieJar();
    const signedIn = await jar.fetch(`${base}/v1/auth/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(await signedVerifyBody(base, owner)),
    });
    expect(signedIn.status).toBe(200);
    const session = jar.get(SESSION_COOKIE)!;
    const sessionSig = jar.get(`${SESSION_COOKIE}.sig`)!;
    expect(session).toBeTruthy();
    expect(sessionSig).toBeTruthy();
    const cookie = jar.header();

    const patched = await request('PATCH', `${base}/v1/organization`, { cookie, json: { payoutWalletTest: owner.address } });
    expect(patched.status).toBe(200);
    const created = await request('POST', `${base}/v1/api_keys`, { cookie, json: { name: 'no secrets', test_net: true } });
    expect(created.status).toBe(201);
    const { api_key: publicKey, api_secret_key: secretKey } = created.body;
    expect(secretKey).toMatch(/^sk_test_/);
    expect(publicKey).toMatch(/^pk_test_/);

    // Usual mistakes, answered and logged without the secret.
    expect((await request('POST', `${base}/v1/settle`, { json: {}, headers: { authorization: `Bearer ${secretKey}` } })).status).toBe(401);
    expect(
      (await request('GET', `${base}/v1/api_keys`, { cookie: `${SESSION_COOKIE}=${session}; ${SESSION_COOKIE}.sig=forged` })).status,
    ).toBe(401);
    expect((await request('GET', `${base}/v1/api_keys?key=${secretKey}`, { cookie })).status).toBe(200);

    // A real settlement with the new key.
    const body = await h.pay(buyer, { value: 1_000n });
    const settled = await request('POST', `${base}/v1/settle`, { json: body, headers: { authorization: `Bearer ${publicKey}`, cookie } });
    expect(settled.status).toBe(200);
    expect(settled.body).toMatchObject({ success: true, network: 'base-sepolia', payer: buyer.address });
    const requestId = settled.headers.get('x-request-id')!;
    expect(requestId).toBeTruthy();

    const auth = body.paymentPayload.payload.authorization;
    const handle = h.temporal.workflow.getHandle(settleWorkflowId('base-sepolia', auth.from, auth.nonce));
    const description = await handle.describe();
    expect(description.memo).toEqual({ requestId });
    const raw = await handle.fetchHistory();
    const history = `${JSON.stringify(raw)}\n${decodedHistory(raw)}`; // searched as stored and decoded

    // The captures are real: they hold what happened.
    expect(history).toContain(requestId);
    expect(history.toLowerCase()).toContain(buyer.address.toLowerCase());
    expect(history).toContain(settled.body.transaction);
    expect(apiLines.some((l) => l.includes(requestId) && l.includes('"msg":"request"'))).toBe(true);
    expect(apiLines.some((l) => l.includes(requestId) && l.includes('"msg":"workflow start"'))).toBe(true);
    expect(workerLines.some((l) => l.includes('worker ready'))).toBe(true);

    const relayerKey = h.env.RELAYER_PRIVATE_KEY;
    expect(relayerKey).toMatch(/^0x[0-9a-fA-F]{64}$/);
    const secrets: Record<string, string> = {
      'API secret key': secretKey,
      'API public key (full)': publicKey,
      'harness API public key (full)': h.apiKey,
      'relayer private key': relayerKey.slice(2), // with or without 0x
      'siwe-session cookie': session,
      'siwe-session.sig cookie': sessionSig,
      'harness session cookie': h.cookie,
      'cookie signing key (SESSION_SECRET)': h.tdb.config.SESSION_SECRET!,
    };
    const places = {
      'API logs': apiLines.join('\n').toLowerCase(),
      'worker output': workerLines.join('\n').toLowerCase(),
      'workflow history': history.toLowerCase(),
    };
    const found: string[] = [];
    for (const [what, secret] of Object.entries(secrets)) {
      for (const [where, text] of Object.entries(places)) if (text.includes(secret.toLowerCase())) found.push(`${what} in ${where}`);
    }
    expect(found).toEqual([]);
    expect(apiLines.length).toBeGreaterThan(10);
    expect(workerLines.length).toBeGreaterThan(0);
  });

  describe('a worker whose RPC URL carries secrets (user info, path, query) and does not answer', () => {
    // docs/security.md "Secrets": every log line is cut to URL origins (src/logger.ts), every activity
    // failure too, local ones included, before Temporal records it (src/temporal/redacting-interceptor.ts).
    // viem quotes the URL it failed on (without the user info, with path and query).
    const secret = `s3cr3t${randomBytes(8).toString('hex')}`;
    let port: number;
    let raw: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
    let failure: unknown;
    let output: string;

    beforeAll(async () => {
      port = await findFreePort(); // nothing listens: every call of the worker on base-sepolia fails
      await h.restartWorker({ env: { RPC_URLS_BASE_SEPOLIA: `http://x:${secret}@127.0.0.1:${port}/v2/${secret}?key=${secret}` } });
      const lines = workerLines.length;
      const body = await h.pay(buyer, { value: 1_000n });
      const auth = body.paymentPayload.payload.authorization;
      const handle = h.temporal.workflow.getHandle(settleWorkflowId('base-sepolia', auth.from, auth.nonce));
      await h.settle(body);
      // Verification (the settlePayment local activity) runs out of its attempts and fails the workflow with its last error.
      failure = await handle.result().then(
        () => undefined,
        (err: unknown) => err,
      );
      raw = await handle.fetchHistory();
      output = workerLines.slice(lines).join('\n');
    });
    afterAll(async () => {
      await h.restartWorker();
    });

    test('the failed local activity and the workflow failure in history name the RPC by its origin only', () => {
      expect(failure).toBeInstanceOf(WorkflowFailedError);
      // The local activity's marker holds its failure, and the workflow failed with it.
      const [marker] = markersNamed(raw.events!, 'core_local_activity');
      expect(marker!.markerRecordedEventAttributes!.failure!.message).toContain('HTTP request failed.');
      expect(raw.events!.at(-1)!.workflowExecutionFailedEventAttributes).toBeTruthy();
      const history = `${JSON.stringify(raw)}\n${decodedHistory(raw)}`;
      expect(history).toContain(`URL: http://127.0.0.1:${port}/…`);
      expect(history.includes(secret)).toBe(false);
    });

    // docs/security.md threat model, "Secrets": every log line is cut to URL origins, the SDK's own
    // "Activity failed" warning too, which prints the whole error object (viem's carried its `url` and
    // `metaMessages` until src/temporal/redacting-interceptor.ts made each error a plain failure).
    test("the worker's output names the RPC by its origin only", () => {
      expect(output).toContain('Activity failed');
      expect(output).toContain(`127.0.0.1:${port}`);
      expect(output.split('\n').filter((l) => l.includes(secret))).toEqual([]);
    });
  });
});
