import { decodeXPaymentResponse } from 'x402-fetch';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { facilitatorAuth, fundedBuyer, serveSeller, v1Payer } from '../support/sdk-seller';

/**
 * The v1 seller pattern end to end (issue 13), real SDKs on both sides: a seller built with
 * `x402-express` 1.2 whose facilitator is our `/v1` with its Bearer key, and an `x402-fetch` 1.2 buyer
 * paying EIP-3009 `exact` on the devnet base-sepolia chain.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const { paymentMiddleware } = require('x402-express');
/* eslint-enable @typescript-eslint/no-require-imports */

jest.setTimeout(120_000);

const PRICE = 1_000_000n;
const FEE_BPS = 100n;
const fee = (PRICE * FEE_BPS) / 10_000n;

describe.each(oneDbKind('sqlite'))('x402 v1 SDKs against our facilitator (%s)', (kind) => {
  let h: SettleHarness;
  let seller: Awaited<ReturnType<typeof serveSeller>>;
  let sellerUrl: string;

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 1, platformFeeBps: Number(FEE_BPS) });
    seller = await serveSeller((app) => {
      app.use(
        paymentMiddleware(
          h.stack.facilitator,
          {
            'GET /weather': {
              // Our devnet USDC, whose EIP-712 domain the buyer signs for.
              price: { amount: PRICE.toString(), asset: { address: h.stack.usdc, decimals: 6, eip712: { name: 'USDC', version: '2' } } },
              network: 'base-sepolia',
              config: { description: 'weather report', maxTimeoutSeconds: 120 },
            },
          },
          { url: `${h.api.baseUrl}/v1`, createAuthHeaders: facilitatorAuth(h) },
        ),
      );
      app.get('/weather', (_req: unknown, res: any) => res.json({ forecast: 'sunny' }));
    });
    sellerUrl = seller.url;
  });
  afterAll(async () => {
    await seller?.close();
    await h?.close();
  });

  test('an x402-fetch buyer pays an x402-express seller through us: exact deltas, settled once however often the seller retries', async () => {
    const buyer = await fundedBuyer(h);
    const { pay, sent } = v1Payer(h, buyer, PRICE);
    const before = { buyer: await h.balanceOf(buyer.address), payout: await h.balanceOf(h.payout), fee: await h.balanceOf(h.feeRecipient) };

    const res = await pay(`${sellerUrl}/weather`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ forecast: 'sunny' });
    const settled = decodeXPaymentResponse(res.headers.get('x-payment-response')!);
    expect(settled).toMatchObject({
      success: true,
      network: 'base-sepolia',
      payer: buyer.address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(sent).toHaveLength(1);
    const expected = { buyer: before.buyer - PRICE, payout: before.payout + PRICE - fee, fee: before.fee + fee };
    expect({
      buyer: await h.balanceOf(buyer.address),
      payout: await h.balanceOf(h.payout),
      fee: await h.balanceOf(h.feeRecipient),
    }).toEqual(expected);

    // The seller retries its settle with the same payment: the same transaction, nothing moves again.
    const payload = JSON.parse(Buffer.from(sent[0], 'base64').toString('utf8'));
    const requirements = {
      scheme: 'exact',
      network: 'base-sepolia',
      maxAmountRequired: PRICE.toString(),
      resource: `${sellerUrl}/weather`,
      description: 'weather report',
      mimeType: '',
      payTo: h.stack.facilitator,
      maxTimeoutSeconds: 120,
      asset: h.stack.usdc,
      extra: { name: 'USDC', version: '2' },
    };
    const again = await request('POST', `${h.api.baseUrl}/v1/settle`, {
      json: { x402Version: 1, paymentPayload: payload, paymentRequirements: requirements },
      headers: { authorization: `Bearer ${h.apiKey}` },
    });
    expect(again).toMatchObject({ status: 200, body: { success: true, transaction: settled.transaction, network: 'base-sepolia' } });
    expect(await h.settledEvents(buyer.address, payload.payload.authorization.nonce)).toBe(1);
    expect({
      buyer: await h.balanceOf(buyer.address),
      payout: await h.balanceOf(h.payout),
      fee: await h.balanceOf(h.feeRecipient),
    }).toEqual(expected);
  });
});
