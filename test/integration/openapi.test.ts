import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { listRoutes } from '../../src/api/app';
import { buildOpenApiDocument } from '../../src/api/openapi';
import { TEST_ACCOUNTS } from '../support/accounts';
import { openTestDatabase, type TestDatabase } from '../support/db';
import { CookieJar, request, signedVerifyBody, startApi, type JsonResponse, type RunningApi } from '../support/http';
import { stackEnv } from '../support/services';

/**
 * The served OpenAPI document against the running app: every route of the app's router is
 * documented (and nothing else is), and real responses of the API validate against the document's
 * schema for their status code. Swagger UI at /docs. (ajv and ajv-formats come with
 * @temporalio/worker's webpack; they are not our dependencies.)
 */

/**
 * Routes deliberately not in the document: the Swagger UI page and its static assets are the
 * renderer of the document, not part of the API it describes. Everything else must be documented,
 * including /healthz, /metrics and /v1/openapi.json itself.
 */
const UNDOCUMENTED = new Set(['GET /docs', 'GET /docs/:file']);

const DOC_ID = 'https://x402.invalid/openapi.json';
const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
/** Router path template to OpenAPI path: `:id` -> `{id}`. */
const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

describe('OpenAPI document of the running app', () => {
  let tdb: TestDatabase;
  let api: RunningApi;
  let doc: any;
  let ajv: Ajv2020;
  const owner = privateKeyToAccount(generatePrivateKey());
  /** Signed in as `owner`. */
  const jar = new CookieJar();

  beforeAll(async () => {
    // Gateway routes are operators only; the stack's Temporal and chains answer /healthz.
    const stack = stackEnv({ taskQueue: 'openapi-no-worker', relayerKey: TEST_ACCOUNTS.relayerKeys[0] });
    tdb = await openTestDatabase('sqlite', { ...stack, OPERATOR_ADDRESSES: owner.address });
    api = await startApi({ db: tdb.db, config: tdb.config });
    const res = await request('GET', `${api.baseUrl}/v1/openapi.json`);
    expect(res.status).toBe(200);
    doc = res.body;
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(doc, DOC_ID);
    const signedIn = await jar.fetch(`${api.baseUrl}/v1/auth/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(await signedVerifyBody(api.baseUrl, owner)),
    });
    expect(signedIn.status).toBe(200);
  });
  afterAll(async () => {
    await api?.close();
    await tdb?.close();
  });

  /** Asserts that `res` is a documented response of the operation and that its body validates. */
  function expectDocumented(method: string, path: string, res: JsonResponse): void {
    const op = doc.paths[path]?.[method.toLowerCase()];
    expect({ operation: `${method} ${path}`, documented: Boolean(op) }).toEqual({ operation: `${method} ${path}`, documented: true });
    const documented = op.responses[String(res.status)];
    expect({
      operation: `${method} ${path}`,
      status: res.status,
      documented: Object.keys(op.responses).includes(String(res.status)),
    }).toEqual({
      operation: `${method} ${path}`,
      status: res.status,
      documented: true,
    });
    if (documented.headers?.['X-Request-Id']) expect(res.headers.get('x-request-id')).toBeTruthy();
    if (!documented.content) {
      expect(res.body).toBe('');
      return;
    }
    const type = res.headers.get('content-type') ?? '';
    const key = Object.keys(documented.content).find(
      (k) => k === type || (k === 'application/json' && type.startsWith('application/json')),
    );
    expect({ operation: `${method} ${path}`, contentType: type, documented: Boolean(key) }).toEqual({
      operation: `${method} ${path}`,
      contentType: type,
      documented: true,
    });
    const validate = ajv.compile({
      $ref: `${DOC_ID}#/${pointer('paths', path, method.toLowerCase(), 'responses', String(res.status), 'content', key!, 'schema')}`,
    }) as ValidateFunction;
    const ok = validate(res.body);
    expect({ operation: `${method} ${path} ${res.status}`, errors: ok ? [] : validate.errors }).toEqual({
      operation: `${method} ${path} ${res.status}`,
      errors: [],
    });
  }

  const call = async (method: string, path: string, opts: Parameters<typeof request>[2] = {}, template = path) => {
    const res = await request(method, `${api.baseUrl}${path}`, { cookie: jar.header(), ...opts });
    expectDocumented(method, template, res);
    return res;
  };

  test('is the generated document, with the app’s public URL as server', () => {
    expect(doc).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument({ publicUrl: api.baseUrl, metrics: true }))));
    expect(doc.servers).toEqual([{ url: api.baseUrl }]);
  });

  test('documents every route of the app’s router, and only those', () => {
    const routes = listRoutes(api.app).filter((r) => r.method !== 'HEAD'); // HEAD is implied by GET
    expect(routes.length).toBeGreaterThan(15);
    const served = new Set<string>();
    const missing: string[] = [];
    for (const { method, path } of routes) {
      if (UNDOCUMENTED.has(`${method} ${path}`)) continue;
      const p = openApiPath(path);
      served.add(`${method.toLowerCase()} ${p}`);
      if (!doc.paths[p]?.[method.toLowerCase()]) missing.push(`${method} ${path}`);
    }
    expect(missing).toEqual([]);
    const documented = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item as object).map((m) => `${m} ${p}`));
    expect(documented.filter((op) => !served.has(op))).toEqual([]);
    // The exclusions are real routes (so this list cannot go stale silently).
    const all = new Set(routes.map((r) => `${r.method} ${r.path}`));
    for (const excluded of UNDOCUMENTED) expect(all).toContain(excluded);
  });

  test('real responses validate against the document: service, sign-in, organization, API keys', async () => {
    await call('GET', '/healthz');
    await call('GET', '/v1/openapi.json');
    await call('GET', '/v1/supported');
    await call('GET', '/v1/auth/session', { cookie: '' }); // 401 envelope
    await call('GET', '/v1/auth/nonce');
    const verify = await call('POST', '/v1/auth/verify', {
      json: await signedVerifyBody(api.baseUrl, privateKeyToAccount(generatePrivateKey())),
    });
    expect(verify.status).toBe(200);
    expect(verify.headers.getSetCookie().join()).toContain('siwe-session=');
    await call('POST', '/v1/auth/verify', { json: { message: 'hello', signature: '0x12' } }); // 400
    await call('GET', '/v1/auth/session');

    await call('GET', '/v1/organization');
    await call('PATCH', '/v1/organization', { json: { payoutWalletTest: owner.address, platformFeeBps: 100 } });
    await call('PATCH', '/v1/organization', { json: {} }); // 400

    const created = await call('POST', '/v1/api_keys', { json: { name: 'seller backend', test_net: true } });
    expect(created.status).toBe(201);
    await call('POST', '/v1/api_keys', { json: { name: 'x' } }); // 400
    await call('POST', '/v1/api_keys', { body: 'name=x', headers: { 'content-type': 'text/plain' } }); // 415
    await call('GET', '/v1/api_keys');
    const id = created.body.id;
    await call('GET', `/v1/api_keys/${id}`, {}, '/v1/api_keys/{id}');
    const other = await call('POST', '/v1/api_keys', { json: { name: 'to revoke', test_net: true } });
    await call('DELETE', `/v1/api_keys/${other.body.id}`, {}, '/v1/api_keys/{id}');
    await call('GET', `/v1/api_keys/${other.body.id}`, {}, '/v1/api_keys/{id}'); // 404
    await call('DELETE', `/v1/api_keys/${other.body.id}`, {}, '/v1/api_keys/{id}'); // 404
    await call('GET', '/v1/api_keys', { cookie: '' }); // 401
  });

  test('real responses validate against the document: settle, verify and permit errors, metrics, sign-out', async () => {
    const key = await request('POST', `${api.baseUrl}/v1/api_keys`, { cookie: jar.header(), json: { name: 'errors', test_net: true } });
    const bearer = { authorization: `Bearer ${key.body.api_key}` };
    const settle400 = await call('POST', '/v1/settle', { json: {}, headers: bearer });
    expect(settle400.status).toBe(400);
    await call('POST', '/v1/settle', { body: '{', headers: { ...bearer, 'content-type': 'application/json' } }); // 400 malformed
    await call('POST', '/v1/settle', { body: 'x', headers: { ...bearer, 'content-type': 'text/plain' } }); // 415
    await call('POST', '/v1/settle', { json: {}, headers: { authorization: 'Bearer nope' } }); // 401
    await call('POST', '/v1/verify', { json: {}, headers: bearer }); // 400 {errorReason}
    await call('POST', '/v1/verify', { json: {} }); // 401
    const permit = await call('POST', '/v1/permit', { json: { network: 'not-a-network' }, headers: bearer });
    expect(permit.body).toMatchObject({ success: false, errorReason: 'unsupported_network', network: 'not-a-network' });
    await call('POST', '/v1/permit', { json: { network: 'base-sepolia', owner: '0x12' }, headers: bearer });
    await call('POST', '/v1/permit', { json: {}, cookie: '' }); // 401
    const metrics = await call('GET', '/metrics');
    expect(metrics.body).toContain('x402_http_requests_total');
    await call('POST', '/v1/auth/signout', { cookie: '' }); // 204
  });

  test('real responses validate against the document: batched status and gateway-wallet routes (no chain needed)', async () => {
    const key = await request('POST', `${api.baseUrl}/v1/api_keys`, { cookie: jar.header(), json: { name: 'gateway', test_net: true } });
    const bearer = { authorization: `Bearer ${key.body.api_key}` };
    const status = await call('GET', '/v1/batched-sample', { headers: bearer }); // upstream unreachable here: gatewaySupported null
    expect(status.status).toBe(200);
    await call('GET', '/v1/batched-sample', { cookie: '' }); // 401 {error}
    await call('GET', '/v1/gateway/balances?network=nope', { headers: bearer }, '/v1/gateway/balances'); // 400
    await call('GET', '/v1/gateway/balances', { cookie: '' }); // 401
    await call('POST', '/v1/gateway/withdrawals', { json: { network: 'base-sepolia', amount: '0' }, headers: bearer }); // 400
    await call('GET', '/v1/gateway/withdrawals/nope', { headers: bearer }, '/v1/gateway/withdrawals/{id}'); // 404
  });

  test('real responses validate against the document: gateway-wallet routes refuse a non-operator (403)', async () => {
    const other = privateKeyToAccount(generatePrivateKey());
    const otherJar = new CookieJar();
    const signedIn = await otherJar.fetch(`${api.baseUrl}/v1/auth/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(await signedVerifyBody(api.baseUrl, other)),
    });
    expect(signedIn.status).toBe(200);
    const key = await request('POST', `${api.baseUrl}/v1/api_keys`, {
      cookie: otherJar.header(),
      json: { name: 'not an operator', test_net: true },
    });
    const bearer = { authorization: `Bearer ${key.body.api_key}` };
    const res = await call('GET', '/v1/gateway/balances?network=base-sepolia', { headers: bearer }, '/v1/gateway/balances');
    expect(res.status).toBe(403);
  });

  test('Swagger UI at /docs loads the document from swagger-ui-dist assets', async () => {
    const page = await fetch(`${api.baseUrl}/docs`); // redirected to /docs/
    expect(page.status).toBe(200);
    expect(page.url).toBe(`${api.baseUrl}/docs/`);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).toContain('<title>x402 durable facilitator: API docs</title>');
    const assets = [...html.matchAll(/(?:href|src)="\.\/([^"]+)"/g)].map((m) => m[1]);
    expect(assets).toEqual(
      expect.arrayContaining(['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'swagger-initializer.js']),
    );
    for (const asset of assets) {
      const res = await fetch(new URL(asset, page.url));
      expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
    }
    const init = await (await fetch(`${api.baseUrl}/docs/swagger-initializer.js`)).text();
    expect(init).toContain("url: '../v1/openapi.json'");
    expect(new URL('../v1/openapi.json', page.url).toString()).toBe(`${api.baseUrl}/v1/openapi.json`);
    const bundle = await fetch(`${api.baseUrl}/docs/swagger-ui-bundle.js`);
    expect(bundle.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect((await bundle.text()).length).toBeGreaterThan(100_000);
    // Only the listed assets: no other file of the package, nothing outside it.
    for (const path of ['/docs/package.json', '/docs/..%2F..%2Fpackage.json', '/docs/index.html', '/docs/constructor', '/docs/__proto__']) {
      const res = await request('GET', `${api.baseUrl}${path}`);
      expect({ path, status: res.status, body: res.body }).toEqual({
        path,
        status: 404,
        body: { type: 'api_error', code: 404, message: 'not found' },
      });
    }
  });
});
