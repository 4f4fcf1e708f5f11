import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ApiKey, Organization } from '../../src/db/entities';
import { callerOrganization, ORGANIZATION_FRESH_MS } from '../../src/auth/organizations';
import type { HttpState } from '../../src/http/context';
import { assertKeyModeAllows } from '../../src/auth/key-mode';
import { requireApiKey } from '../../src/api/middleware/auth';
import { DB_KINDS, openTestDatabase, type TestDatabase } from '../support/db';
import { request, signIn, startApi, type RunningApi } from '../support/http';

/** API key management and bearer authentication over real HTTP, on SQLite and PostgreSQL. */

const apiError = (code: number, message: string) => ({ type: 'api_error', code, message });
const newAccount = () => privateKeyToAccount(generatePrivateKey());
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const signInRequired = apiError(401, 'sign-in required: missing or invalid siwe-session cookie');

describe.each(DB_KINDS)('API keys (%s)', (kind) => {
  let tdb: TestDatabase;
  let api: RunningApi;
  let base: string;
  let cookie: string;
  let organizationId: string;
  const em = () => tdb.db.em.fork();
  const create = (json: unknown, c = cookie) => request('POST', `${base}/v1/api_keys`, { json, cookie: c });
  const bearer = (path: string, key?: string, init: { method?: string; cookie?: string; authorization?: string } = {}) =>
    request(init.method ?? 'GET', `${base}${path}`, {
      cookie: init.cookie,
      headers: (init.authorization ?? key) ? { authorization: init.authorization ?? `Bearer ${key}` } : {},
    });

  beforeAll(async () => {
    tdb = await openTestDatabase(kind);
    api = await startApi(
      { db: tdb.db, config: tdb.config },
      {
        // Test-only routes exercising the middleware the settle/verify/permit routes use.
        mount: (router, deps) => {
          const echo: Middleware<HttpState> = (ctx) => {
            ctx.body = ctx.state.auth;
          };
          router.get('/test/api-key', requireApiKey(deps), echo);
          router.get('/test/api-key-or-session', requireApiKey(deps, { allowSession: true }), echo);
          router.get('/test/settle-on/:network', requireApiKey(deps), (ctx) => {
            assertKeyModeAllows(ctx.state.auth!, deps.networks.get(ctx.params.network as 'base')!);
            ctx.body = { ok: true };
          });
          router.post(
            '/test/own-error-shape',
            async (ctx, next) => {
              ctx.state.errorShape = (status, message) => ({ status, body: { success: false, errorReason: message, transaction: '' } });
              await next();
            },
            requireApiKey(deps),
            echo,
          );
        },
      },
    );
    base = api.baseUrl;
    cookie = await signIn(base, newAccount());
    organizationId = (await request('GET', `${base}/v1/auth/session`, { cookie })).body.organizationId;
  });
  afterAll(async () => {
    await api?.close();
    await tdb?.close();
  });

  test('every API key route needs the session cookie', async () => {
    for (const [method, path] of [
      ['POST', '/v1/api_keys'],
      ['GET', '/v1/api_keys'],
      ['GET', '/v1/api_keys/00000000-0000-0000-0000-000000000000'],
      ['DELETE', '/v1/api_keys/00000000-0000-0000-0000-000000000000'],
    ]) {
      const res = await request(method, `${base}${path}`, method === 'POST' ? { json: { name: 'k', test_net: true } } : {});
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 401, body: signInRequired });
    }
  });

  test('create answers 201 with the key pair once; only hashes and a hint are stored', async () => {
    const t0 = Date.now();
    const res = await create({ name: 'Checkout test', test_net: true });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Checkout test',
      organization: organizationId,
      api_key: expect.stringMatching(/^pk_test_[0-9a-f]{64}$/),
      api_secret_key: expect.stringMatching(/^sk_test_[0-9a-f]{64}$/),
      test_net: true,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(Object.keys(res.body)).toEqual([
      'id',
      'name',
      'organization',
      'api_key',
      'api_secret_key',
      'test_net',
      'created_at',
      'updated_at',
    ]);
    expect(res.body.updated_at).toBe(res.body.created_at);
    expect(Date.parse(res.body.created_at)).toBeGreaterThanOrEqual(t0 - 1000);

    const live = await create({ name: 'Checkout live', test_net: false });
    expect(live.status).toBe(201);
    expect(live.body.api_key).toMatch(/^pk_[0-9a-f]{64}$/);
    expect(live.body.api_secret_key).toMatch(/^sk_[0-9a-f]{64}$/);
    expect(live.body.test_net).toBe(false);

    for (const created of [res.body, live.body]) {
      const row = await em().findOneOrFail(ApiKey, { id: created.id });
      expect(row.publicKeyHash).toBe(sha256(created.api_key));
      expect(row.secretKeyHash).toBe(sha256(created.api_secret_key));
      expect(row.keyHint).toBe(`${created.test_net ? 'pk_test_' : 'pk_'}…${created.api_key.slice(-4)}`);
      const stored = JSON.stringify(await em().getConnection().execute('select * from api_keys where id = ?', [created.id]));
      for (const secret of [
        created.api_key,
        created.api_secret_key,
        created.api_key.slice(-64, -4),
        created.api_secret_key.slice(-64, -4),
      ]) {
        expect(stored).not.toContain(secret);
      }
    }
  });

  test('list, get and delete answer the exact records; revoked keys disappear', async () => {
    const account = newAccount();
    const c = await signIn(base, account);
    const org = (await request('GET', `${base}/v1/auth/session`, { cookie: c })).body.organizationId;
    expect(await request('GET', `${base}/v1/api_keys`, { cookie: c })).toMatchObject({ status: 200, body: { apiKeys: [] } });

    const a = (await create({ name: 'first', test_net: true }, c)).body;
    const b = (await create({ name: 'second', test_net: false }, c)).body;
    const record = (k: any) => ({
      id: k.id,
      name: k.name,
      organization: org,
      api_key: `${k.test_net ? 'pk_test_' : 'pk_'}…${k.api_key.slice(-4)}`,
      test_net: k.test_net,
      created_at: k.created_at,
      updated_at: k.updated_at,
      last_used_at: null,
    });

    const list = await request('GET', `${base}/v1/api_keys`, { cookie: c });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ apiKeys: [record(a), record(b)] });

    const got = await request('GET', `${base}/v1/api_keys/${a.id}`, { cookie: c });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(record(a));

    const t0 = Date.now();
    const del = await request('DELETE', `${base}/v1/api_keys/${a.id}`, { cookie: c });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ ...record(a), updated_at: expect.stringMatching(ISO), revoked_at: expect.stringMatching(ISO) });
    expect(del.body.updated_at).toBe(del.body.revoked_at);
    expect(Date.parse(del.body.revoked_at)).toBeGreaterThanOrEqual(t0 - 1000);
    expect((await em().findOneOrFail(ApiKey, { id: a.id })).revokedAt).toBeInstanceOf(Date);

    const notFound = apiError(404, 'API key not found');
    expect(await request('GET', `${base}/v1/api_keys/${a.id}`, { cookie: c })).toMatchObject({ status: 404, body: notFound });
    expect(await request('DELETE', `${base}/v1/api_keys/${a.id}`, { cookie: c })).toMatchObject({ status: 404, body: notFound });
    expect((await request('GET', `${base}/v1/api_keys`, { cookie: c })).body).toEqual({ apiKeys: [record(b)] });
    expect(await request('GET', `${base}/v1/api_keys/not-a-key`, { cookie: c })).toMatchObject({ status: 404, body: notFound });
  });

  test('another organization can neither see nor delete your key (404)', async () => {
    const mine = (await create({ name: 'mine', test_net: true })).body;
    const stranger = await signIn(base, newAccount());
    const notFound = apiError(404, 'API key not found');
    expect(await request('GET', `${base}/v1/api_keys/${mine.id}`, { cookie: stranger })).toMatchObject({ status: 404, body: notFound });
    expect(await request('DELETE', `${base}/v1/api_keys/${mine.id}`, { cookie: stranger })).toMatchObject({ status: 404, body: notFound });
    expect((await request('GET', `${base}/v1/api_keys`, { cookie: stranger })).body).toEqual({ apiKeys: [] });
    expect((await request('GET', `${base}/v1/api_keys/${mine.id}`)).status).toBe(401);
    expect((await request('GET', `${base}/v1/api_keys/${mine.id}`, { cookie })).status).toBe(200);
  });

  test('two concurrent deletes of one key: one 200, one 404', async () => {
    const k = (await create({ name: 'racy', test_net: true })).body;
    const results = await Promise.all([1, 2].map(() => request('DELETE', `${base}/v1/api_keys/${k.id}`, { cookie })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 404]);
  });

  test('bad create bodies answer 4xx in the envelope, never 500', async () => {
    const cases: Array<[unknown, string]> = [
      [{ name: 'k' }, 'invalid request body: test_net: must be a boolean'],
      [{ name: 'k', test_net: 'true' }, 'invalid request body: test_net: must be a boolean'],
      [{ test_net: true }, 'invalid request body: name: must be a string'],
      [{ name: '', test_net: true }, 'invalid request body: name: must not be empty'],
      [{ name: 'x'.repeat(101), test_net: true }, 'invalid request body: name: must be at most 100 characters'],
      [{ name: 'k', test_net: true, organization: 'someone-else' }, 'invalid request body: Unrecognized key: "organization"'],
      [[{ name: 'k', test_net: true }], 'request body must be a JSON object'],
    ];
    for (const [json, message] of cases) {
      const res = await create(json);
      expect({ json, status: res.status, body: res.body }).toEqual({ json, status: 400, body: apiError(400, message) });
    }
    const raw = (body: string, type = 'application/json') =>
      request('POST', `${base}/v1/api_keys`, { body, cookie, headers: { 'content-type': type } });
    expect(await raw('{"name": "k", ')).toMatchObject({ status: 400, body: apiError(400, 'malformed JSON body') });
    expect(await raw('name=k', 'application/x-www-form-urlencoded')).toMatchObject({
      status: 415,
      body: apiError(415, 'Content-Type must be application/json'),
    });
    expect(await raw(JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024), test_net: true }))).toMatchObject({
      status: 413,
      body: apiError(413, 'request body too large'),
    });
    expect((await request('GET', `${base}/v1/api_keys`, { cookie })).body.apiKeys.map((k: any) => k.name)).not.toContain('k');
  });

  test('bearer auth: missing, malformed and unknown keys 401; revoked 403; valid 200 and last_used_at set', async () => {
    const k = (await create({ name: 'bearer', test_net: true })).body;
    const cases: Array<[string | undefined, number, string]> = [
      [undefined, 401, 'missing API key: send Authorization: Bearer <pk_ key>'],
      ['Basic dXNlcjpwYXNz', 401, 'malformed Authorization header: expected Bearer <pk_ key>'],
      ['Bearer', 401, 'malformed Authorization header: expected Bearer <pk_ key>'],
      [`Bearer ${k.api_key} extra`, 401, 'malformed Authorization header: expected Bearer <pk_ key>'],
      ['Bearer pk_test_123', 401, 'malformed API key: expected a pk_ or pk_test_ public key'],
      [`Bearer ${k.api_secret_key}`, 401, 'malformed API key: expected a pk_ or pk_test_ public key'],
      [`Bearer ${k.api_key.toUpperCase()}`, 401, 'malformed API key: expected a pk_ or pk_test_ public key'],
      [`Bearer pk_test_${'ab'.repeat(32)}`, 401, 'unknown API key'],
      [`Bearer ${k.api_key.replace('pk_test_', 'pk_')}`, 401, 'unknown API key'],
    ];
    for (const [authorization, status, message] of cases) {
      const res = await request('GET', `${base}/test/api-key`, { headers: authorization ? { authorization } : {} });
      expect({ authorization, status: res.status, body: res.body }).toEqual({ authorization, status, body: apiError(status, message) });
    }
    expect((await em().findOneOrFail(ApiKey, { id: k.id })).lastUsedAt).toBeNull();

    const t0 = Date.now();
    const ok = await bearer('/test/api-key', k.api_key);
    expect(ok.status).toBe(200);
    // The key's organization is read with it, once per request.
    const organizationRead = { row: expect.objectContaining({ id: organizationId, platformFeeBps: 0 }), at: expect.any(Number) };
    expect(ok.body).toEqual({ organizationId, method: 'api_key', apiKeyId: k.id, testNet: true, organizationRead });
    const lower = await request('GET', `${base}/test/api-key`, { headers: { authorization: `bearer ${k.api_key}` } });
    expect(lower.status).toBe(200);

    const got = (await request('GET', `${base}/v1/api_keys/${k.id}`, { cookie })).body;
    expect(got.last_used_at).toMatch(ISO);
    expect(Date.parse(got.last_used_at)).toBeGreaterThanOrEqual(t0 - 1000);
    expect(Date.parse(got.last_used_at)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(got.updated_at).toBe(k.updated_at); // use is not an edit
    const listed = (await request('GET', `${base}/v1/api_keys`, { cookie })).body.apiKeys.find((x: any) => x.id === k.id);
    expect(listed.last_used_at).toBe(got.last_used_at);

    expect((await request('DELETE', `${base}/v1/api_keys/${k.id}`, { cookie })).status).toBe(200);
    const revoked = await bearer('/test/api-key', k.api_key);
    expect(revoked).toMatchObject({ status: 403, body: apiError(403, 'API key revoked') });
  });

  test('the organization read with the key stands for it while fresh; later it is read again', async () => {
    const current = await em().findOneOrFail(Organization, { id: organizationId });
    const stale = { ...current, payoutWalletTest: '0x00000000000000000000000000000000000000aa' };
    const auth = { organizationId, method: 'api_key' as const, organizationRead: { row: stale, at: 1_000_000 } };
    expect(await callerOrganization(em(), auth, 1_000_000 + ORGANIZATION_FRESH_MS - 1)).toBe(stale);
    const reread = await callerOrganization(em(), auth, 1_000_000 + ORGANIZATION_FRESH_MS);
    expect(reread).toMatchObject({ id: organizationId, payoutWalletTest: current.payoutWalletTest ?? null });
    // A session carries no row: read now.
    expect(await callerOrganization(em(), { organizationId, method: 'session' })).toMatchObject({ id: organizationId });
  });

  test('last_used_at advances on later use (throttled to once a second)', async () => {
    const k = (await create({ name: 'busy', test_net: false })).body;
    expect((await bearer('/test/api-key', k.api_key)).status).toBe(200);
    const first = (await em().findOneOrFail(ApiKey, { id: k.id })).lastUsedAt!;
    expect((await bearer('/test/api-key', k.api_key)).status).toBe(200);
    expect((await em().findOneOrFail(ApiKey, { id: k.id })).lastUsedAt!.getTime()).toBe(first.getTime());
    await new Promise((r) => setTimeout(r, 1100));
    expect((await bearer('/test/api-key', k.api_key)).status).toBe(200);
    expect((await em().findOneOrFail(ApiKey, { id: k.id })).lastUsedAt!.getTime()).toBeGreaterThan(first.getTime() + 1000);
  });

  test('auth errors keep the generic envelope even on a route with its own error shape', async () => {
    // src/api/middleware/errors.ts answers every ApiError (auth included) in the generic envelope.
    const res = await request('POST', `${base}/test/own-error-shape`);
    expect(res).toMatchObject({ status: 401, body: apiError(401, 'missing API key: send Authorization: Bearer <pk_ key>') });
  });

  test('allowSession: the session cookie is accepted instead of a key, but a bad key never falls back', async () => {
    const viaSession = await bearer('/test/api-key-or-session', undefined, { cookie });
    expect(viaSession.status).toBe(200);
    expect(viaSession.body).toEqual({ organizationId, method: 'session', address: expect.stringMatching(/^0x[0-9a-f]{40}$/) });
    const k = (await create({ name: 'both', test_net: true })).body;
    expect((await bearer('/test/api-key-or-session', k.api_key, { cookie })).body.method).toBe('api_key');
    expect(await bearer('/test/api-key-or-session', 'pk_test_nope', { cookie })).toMatchObject({
      status: 401,
      body: apiError(401, 'malformed API key: expected a pk_ or pk_test_ public key'),
    });
    expect(await bearer('/test/api-key-or-session')).toMatchObject({
      status: 401,
      body: apiError(401, 'missing API key: send Authorization: Bearer <pk_ key>'),
    });
    expect(await bearer('/test/api-key-or-session', undefined, { cookie: 'siwe-session=forged; siwe-session.sig=forged' })).toMatchObject({
      status: 401,
      body: signInRequired,
    });
    expect(await bearer('/test/api-key', undefined, { cookie })).toMatchObject({ status: 401 });
  });

  test('test keys settle testnets only, live keys mainnets only (403 otherwise)', async () => {
    const test = (await create({ name: 'mode test', test_net: true })).body.api_key;
    const live = (await create({ name: 'mode live', test_net: false })).body.api_key;
    expect(await bearer('/test/settle-on/base-sepolia', test)).toMatchObject({ status: 200, body: { ok: true } });
    expect(await bearer('/test/settle-on/base', test)).toMatchObject({
      status: 403,
      body: apiError(403, 'test keys settle testnets only'),
    });
    expect(await bearer('/test/settle-on/base', live)).toMatchObject({ status: 200, body: { ok: true } });
    expect(await bearer('/test/settle-on/base-sepolia', live)).toMatchObject({
      status: 403,
      body: apiError(403, 'live keys settle mainnets only'),
    });
  });
});
