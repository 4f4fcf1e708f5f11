import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { TEST_ACCOUNTS } from '../support/accounts';
import { DEVNET_SOLANA_FEE_PAYER } from '../../src/chains/solana/fee-payer';
import { request } from '../support/http';
import type { ExactPaymentOptions } from '../support/payments';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/** POST /v1/verify (deprecated) shares settle's rules without sending anything; GET /v1/supported. */
describe('POST /v1/verify and GET /v1/supported', () => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[4];

  beforeAll(async () => {
    h = await startSettleHarness('sqlite', { relayerIndex: 0 });
  });
  afterAll(async () => {
    await h?.close();
  });

  const pay = (o: Partial<ExactPaymentOptions> = {}) => h.pay(buyer, o);
  const verify = (body: unknown, headers: Record<string, string> = {}) =>
    request('POST', `${h.api.baseUrl}/v1/verify`, { json: body, headers: { authorization: `Bearer ${h.apiKey}`, ...headers } });
  const authContext = {
    organizationId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    authMethod: 'organization_specific',
    timestamp: expect.any(String),
  };

  test('a valid payment: isValid true, with authContext and deprecation headers; nothing moves', async () => {
    const before = await h.balanceOf(buyer.address);
    const res = await verify(await pay());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ isValid: true, payer: buyer.address, authContext });
    expect(Number.isNaN(Date.parse(res.body.authContext.timestamp))).toBe(false);
    expect(res.headers.get('deprecation')).toBe('@1767225600');
    expect(res.headers.get('link')).toBe('</v1/settle>; rel="successor-version"');
    expect(await h.balanceOf(buyer.address)).toBe(before);
  });

  test('a payment that breaks a rule: 200 with isValid false and the same reason settle gives', async () => {
    const forged = await pay({ signer: privateKeyToAccount(generatePrivateKey()) });
    const v = await verify(forged);
    expect(v.status).toBe(200);
    expect(v.body).toEqual({ isValid: false, invalidReason: 'invalid_exact_evm_payload_signature', payer: buyer.address, authContext });
    const s = await h.settle(forged);
    expect(s.body.errorReason).toBe(v.body.invalidReason);
  });

  test('request errors: 400 {errorReason}; auth errors keep the envelope', async () => {
    const bad = await verify({ paymentPayload: { x402Version: 2 }, paymentRequirements: {} });
    expect({ status: bad.status, body: bad.body }).toEqual({ status: 400, body: { errorReason: 'invalid_payload' } });
    const badReq = await pay();
    (badReq.paymentRequirements as { payTo: string }).payTo = 'nope';
    const r2 = await verify(badReq);
    expect({ status: r2.status, body: r2.body }).toEqual({ status: 400, body: { errorReason: 'invalid_payment_requirements' } });
    const malformed = await request('POST', `${h.api.baseUrl}/v1/verify`, {
      body: '{',
      headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json' },
    });
    expect({ status: malformed.status, body: malformed.body }).toEqual({ status: 400, body: { errorReason: 'invalid_payload' } });
    const noKey = await request('POST', `${h.api.baseUrl}/v1/verify`, { json: await pay() });
    expect(noKey.status).toBe(401);
    expect(noKey.body).toEqual({ type: 'api_error', code: 401, message: expect.any(String) });
  });

  test('GET /v1/supported lists exact and upto (Permit2) on every enabled network, without a key', async () => {
    const res = await request('GET', `${h.api.baseUrl}/v1/supported`);
    expect(res.status).toBe(200);
    const feePayer = DEVNET_SOLANA_FEE_PAYER.publicKey.toBase58();
    const kinds = [
      ['exact', 'base-sepolia', 'eip155:84532'],
      ['upto', 'base-sepolia', 'eip155:84532'],
      ['exact', 'optimism-sepolia', 'eip155:11155420'],
      ['upto', 'optimism-sepolia', 'eip155:11155420'],
    ];
    const solana = { scheme: 'exact', extra: { feePayer } };
    expect(res.body).toEqual({
      // v1 names first, then the same kinds for x402 v2 clients with CAIP-2 networks (issue 13).
      kinds: [
        ...kinds.map(([scheme, network]) => ({ x402Version: 1, scheme, network })),
        { x402Version: 1, network: 'solana-devnet', ...solana },
        ...kinds.map(([scheme, , network]) => ({
          x402Version: 2,
          scheme,
          network,
          // v2 upto buyers sign the facilitator contract as witness.facilitator.
          ...(scheme === 'upto' ? { extra: { facilitatorAddress: h.stack.facilitator } } : {}),
        })),
        { x402Version: 2, network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', ...solana },
      ],
      extensions: ['eip2612GasSponsoring'],
      signers: { 'eip155:*': [h.tdb.config.RELAYER_ADDRESS], 'solana:*': [feePayer] },
    });
  });

  test('a method a route does not serve: 405 in the JSON error shape with Allow; an unknown method too, never a 5xx', async () => {
    const wrong = await request('DELETE', `${h.api.baseUrl}/v1/supported`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('content-type')).toMatch(/^application\/json/);
    expect(wrong.body).toEqual({ type: 'api_error', code: 405, message: 'method DELETE not allowed here' });
    expect(wrong.headers.get('allow')).toContain('GET');
    const unknown = await request('PROPFIND', `${h.api.baseUrl}/v1/supported`);
    expect(unknown.status).toBe(405);
    expect(unknown.body).toEqual({ type: 'api_error', code: 405, message: 'method PROPFIND not allowed here' });
  });
});
