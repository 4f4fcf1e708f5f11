import { randomBytes } from 'node:crypto';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { TEST_ACCOUNTS } from '../support/accounts';
import { openTestDatabase, type TestDatabase } from '../support/db';
import { stackEnv } from '../support/services';
import { request, signIn, startApi, type RunningApi } from '../support/http';

/**
 * Per-IP and per-key request budgets on the real app over real HTTP (issue 12): 429 with Retry-After
 * in the spec's envelope, sign-in's stricter budget, per-key budgets independent of the address, and
 * the Redis store shared by two API processes (Redis at 127.0.0.1:6379, as in CI).
 */
jest.setTimeout(60_000);

const limited = (message: string) => ({
  type: 'api_error',
  code: 429,
  message: expect.stringMatching(new RegExp(`^${message}; retry in \\d+ s$`)),
});

async function expect429(res: Awaited<ReturnType<typeof request>>, message: string) {
  expect(res.status).toBe(429);
  expect(res.body).toEqual(limited(message));
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
}

describe('rate limits (memory store)', () => {
  let tdb: TestDatabase;
  let api: RunningApi;
  beforeAll(async () => {
    // The stack's Temporal and chains: /healthz asks them (and answers 200 only when they answer).
    const stack = stackEnv({ taskQueue: 'rate-limit-no-worker', relayerKey: TEST_ACCOUNTS.relayerKeys[0] });
    tdb = await openTestDatabase('sqlite', { ...stack, RATE_LIMIT_IP: '40', RATE_LIMIT_AUTH_IP: '4', RATE_LIMIT_KEY: '3' });
    api = await startApi({ db: tdb.db, config: tdb.config });
  });
  afterAll(async () => {
    await api?.close();
    await tdb?.close();
  });

  test('sign-in has its own, smaller budget per address', async () => {
    for (let i = 0; i < 4; i++) expect((await request('GET', `${api.baseUrl}/v1/auth/nonce`)).status).toBe(200);
    await expect429(await request('GET', `${api.baseUrl}/v1/auth/nonce`), 'too many sign-in requests from this address');
  });

  test('each API key has its own budget; another key from the same address is not affected', async () => {
    // Sign-in is spent above: a fresh app on the same database (its own counters) mints two keys.
    const minting = await startApi({ db: tdb.db, config: tdb.config });
    const cookie = await signIn(minting.baseUrl, privateKeyToAccount(generatePrivateKey()));
    const mint = async () =>
      (await request('POST', `${minting.baseUrl}/v1/api_keys`, { cookie, json: { name: 'k', test_net: true } })).body.api_key;
    const [a, b] = [await mint(), await mint()];
    await minting.close();
    const settle = (key: string) => request('POST', `${api.baseUrl}/v1/settle`, { json: {}, headers: { authorization: `Bearer ${key}` } });
    for (let i = 0; i < 3; i++) expect((await settle(a)).status).toBe(400); // authenticated, then refused for its body
    await expect429(await settle(a), 'too many requests for this API key');
    expect((await settle(b)).status).toBe(400);
  });

  test('every route spends the address budget, except /healthz; past it 429 everywhere', async () => {
    let status = 200;
    for (let i = 0; i < 60 && status !== 429; i++) status = (await request('GET', `${api.baseUrl}/v1/supported`)).status;
    expect(status).toBe(429);
    await expect429(await request('GET', `${api.baseUrl}/v1/supported`), 'too many requests from this address');
    await expect429(await request('POST', `${api.baseUrl}/v1/settle`, { json: {} }), 'too many requests from this address');
    expect((await request('GET', `${api.baseUrl}/healthz`)).status).toBe(200);
  });
});

describe('rate limits (Redis store, two API processes)', () => {
  let tdb: TestDatabase;
  const apis: RunningApi[] = [];
  beforeAll(async () => {
    tdb = await openTestDatabase('sqlite', {
      REDIS_URL: 'redis://127.0.0.1:6379',
      RATE_LIMIT_PREFIX: `test-${randomBytes(6).toString('hex')}`,
      RATE_LIMIT_IP: '6',
    });
    apis.push(await startApi({ db: tdb.db, config: tdb.config }), await startApi({ db: tdb.db, config: tdb.config }));
    for (const a of apis) await a.deps.rateLimits!.ready();
  });
  afterAll(async () => {
    for (const a of apis) await a.close();
    await tdb?.close();
  });

  test('the budget is shared: three requests on each process spend it, the next is refused on both', async () => {
    for (const api of apis) for (let i = 0; i < 3; i++) expect((await request('GET', `${api.baseUrl}/v1/supported`)).status).toBe(200);
    for (const api of apis) await expect429(await request('GET', `${api.baseUrl}/v1/supported`), 'too many requests from this address');
  });
});

describe("an authenticated seller is limited by its key's budget, not by its address's", () => {
  let tdb: TestDatabase;
  let api: RunningApi;
  let key: string;
  beforeAll(async () => {
    tdb = await openTestDatabase('sqlite', { RATE_LIMIT_IP: '5', RATE_LIMIT_AUTH_IP: '100', RATE_LIMIT_KEY: '12' });
    const minting = await startApi({ db: tdb.db, config: { ...tdb.config, RATE_LIMIT_IP: 100 } });
    const cookie = await signIn(minting.baseUrl, privateKeyToAccount(generatePrivateKey()));
    key = (await request('POST', `${minting.baseUrl}/v1/api_keys`, { cookie, json: { name: 'backend', test_net: true } })).body.api_key;
    await minting.close();
    api = await startApi({ db: tdb.db, config: tdb.config });
  });
  afterAll(async () => {
    await api?.close();
    await tdb?.close();
  });

  test('one address settles past its address budget (5) up to its key budget (12); then the key is refused', async () => {
    const settle = () => request('POST', `${api.baseUrl}/v1/settle`, { json: {}, headers: { authorization: `Bearer ${key}` } });
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await settle()).status);
    expect(statuses).toEqual(Array(12).fill(400)); // authenticated, then refused for its body
    await expect429(await settle(), 'too many requests for this API key');
    // None of it was charged to the address: it still has its whole budget for public routes.
    for (let i = 0; i < 5; i++) expect((await request('GET', `${api.baseUrl}/v1/supported`)).status).toBe(200);
    await expect429(await request('GET', `${api.baseUrl}/v1/supported`), 'too many requests from this address');
  });
});

describe('rate limits (Redis store): authenticated callers and made-up keys', () => {
  let tdb: TestDatabase;
  const apis: RunningApi[] = [];
  let key: string;
  beforeAll(async () => {
    tdb = await openTestDatabase('sqlite', {
      REDIS_URL: 'redis://127.0.0.1:6379',
      RATE_LIMIT_PREFIX: `test-${randomBytes(6).toString('hex')}`,
      RATE_LIMIT_IP: '4',
      RATE_LIMIT_KEY: '10',
    });
    const minting = await startApi({ db: tdb.db, config: { ...tdb.config, REDIS_URL: undefined, RATE_LIMIT_IP: 100 } });
    const cookie = await signIn(minting.baseUrl, privateKeyToAccount(generatePrivateKey()));
    key = (await request('POST', `${minting.baseUrl}/v1/api_keys`, { cookie, json: { name: 'backend', test_net: true } })).body.api_key;
    await minting.close();
    apis.push(await startApi({ db: tdb.db, config: tdb.config }), await startApi({ db: tdb.db, config: tdb.config }));
    for (const a of apis) await a.deps.rateLimits!.ready();
  });
  afterAll(async () => {
    for (const a of apis) await a.close();
    await tdb?.close();
  });

  test("a key's requests on both processes pass the address budget; made-up keys spend it, shared", async () => {
    const settle = (api: RunningApi, k: string) =>
      request('POST', `${api.baseUrl}/v1/settle`, { json: {}, headers: { authorization: `Bearer ${k}` } });
    for (const api of apis) for (let i = 0; i < 3; i++) expect((await settle(api, key)).status).toBe(400);
    const bogus = 'pk_test_notakeynotakeynotakeynotakey';
    expect([(await settle(apis[0]!, bogus)).status, (await settle(apis[1]!, bogus)).status]).toEqual([401, 401]);
    expect([(await settle(apis[0]!, bogus)).status, (await settle(apis[1]!, bogus)).status]).toEqual([401, 401]);
    for (const api of apis) await expect429(await settle(api, bogus), 'too many requests from this address');
  });
});
