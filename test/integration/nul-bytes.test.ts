import { ApiKey, Organization } from '../../src/db/entities';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { TEST_ACCOUNTS } from '../support/accounts';

/**
 * A NUL byte cannot be stored in PostgreSQL text: it used to reach the database and answer 500. It is
 * refused with a 400 in the route's error shape, in the URL or anywhere in a JSON body, and nothing is written.
 */
describe.each(oneDbKind('sqlite'))('NUL bytes (%s)', (kind) => {
  let h: SettleHarness;
  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 0 });
  });
  afterAll(async () => {
    await h?.close();
  });
  const envelope = (message: string) => ({ type: 'api_error', code: 400, message });

  test('an API key name, an organization name or a key id with a NUL: 400, no row', async () => {
    const keysBefore = await h.tdb.db.em.fork().count(ApiKey, {});
    const key = await request('POST', `${h.api.baseUrl}/v1/api_keys`, { cookie: h.cookie, json: { name: 'a\u0000b', test_net: true } });
    expect(key.status).toBe(400);
    expect(key.body).toEqual(envelope('the JSON body contains a NUL byte'));
    expect(await h.tdb.db.em.fork().count(ApiKey, {})).toBe(keysBefore);

    const org = await request('PATCH', `${h.api.baseUrl}/v1/organization`, { cookie: h.cookie, json: { name: 'Shop\u0000' } });
    expect(org.status).toBe(400);
    expect(org.body).toEqual(envelope('the JSON body contains a NUL byte'));
    expect(await h.tdb.db.em.fork().count(Organization, { name: { $like: '%Shop%' } })).toBe(0);

    for (const path of ['/v1/api_keys/%00', '/v1/api_keys/abc%00def', '/v1/api_keys?cursor=%00']) {
      const res = await request('GET', `${h.api.baseUrl}${path}`, { cookie: h.cookie });
      expect([path, res.status, res.body]).toEqual([path, 400, envelope('the URL contains a NUL byte')]);
      // Every answer, errors included, carries the security headers.
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });

  test('a settle body with a NUL deep inside: 400 in the settle shape, nothing started', async () => {
    const body = await h.pay(TEST_ACCOUNTS.buyers[0]);
    (body.paymentRequirements as Record<string, unknown>).description = 'x\u0000y';
    const res = await request('POST', `${h.api.baseUrl}/v1/settle`, { json: body, headers: { authorization: `Bearer ${h.apiKey}` } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, errorReason: 'invalid_payload', transaction: '', network: '' });
  });
});
