import type { Address } from 'viem';

import { rpc } from '../../devnet/anvil';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { decodePaymentResponseHeader, v2Payer } from '../support/x402-v2';
import { facilitatorAuth, fundedBuyer, serveSeller, v1Payer, v2Facilitator } from '../support/sdk-seller';

/**
 * `settlement_pending` (our 202, outside the x402 settle response) meets the seller SDKs (issue 14):
 * the chain takes longer than SETTLE_WAIT_MS to mine. A v2 seller (`@x402/express`) is given
 * SETTLE_WAIT_V2_MS and is answered the final settlement, so its buyer is served. A v1 seller
 * (`x402-express` 1.2) still gets the 202, which its SDK treats as a failed settlement: the buyer is
 * refused, and the payment settles exactly once anyway; repeating the same settle request gives the
 * final answer (docs/decisions/settlement-pending-and-sdks.md).
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const v2 = require('@x402/express');
const { ExactEvmScheme: ExactEvmServer } = require('@x402/evm/exact/server');
const v1 = require('x402-express');
/* eslint-enable @typescript-eslint/no-require-imports */

jest.setTimeout(120_000);

const PRICE = 1_000_000n;
const PAUSE_MS = 3_000; // longer than SETTLE_WAIT_MS below, shorter than SETTLE_WAIT_V2_MS

describe.each(oneDbKind('postgres'))('settlement_pending with the seller SDKs (%s)', (kind) => {
  let h: SettleHarness;
  let seller: Awaited<ReturnType<typeof serveSeller>>;
  let sellerUrl: string;
  let rpcUrl: string;

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 2, env: { SETTLE_WAIT_MS: '1000', SETTLE_WAIT_V2_MS: '30000' } });
    rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
    const resourceServer = new v2.x402ResourceServer(v2Facilitator(h)).register('eip155:84532', new ExactEvmServer());
    const asset = h.stack.usdc;
    seller = await serveSeller((app) => {
      app.use(
        '/v2',
        v2.paymentMiddleware(
          {
            'GET /weather': {
              accepts: {
                scheme: 'exact',
                network: 'eip155:84532',
                price: { amount: PRICE.toString(), asset, extra: { name: 'USDC', version: '2' } },
                payTo: h.stack.facilitator,
                maxTimeoutSeconds: 120,
              },
            },
          },
          resourceServer,
        ),
      );
      app.use(
        '/v1',
        v1.paymentMiddleware(
          h.stack.facilitator,
          {
            'GET /weather': {
              price: { amount: PRICE.toString(), asset: { address: asset, decimals: 6, eip712: { name: 'USDC', version: '2' } } },
              network: 'base-sepolia',
              config: { maxTimeoutSeconds: 120 },
            },
          },
          { url: `${h.api.baseUrl}/v1`, createAuthHeaders: facilitatorAuth(h) },
        ),
      );
      app.get(['/v1/weather', '/v2/weather'], (_req: unknown, res: any) => res.json({ forecast: 'sunny' }));
    });
    sellerUrl = seller.url;
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await seller?.close();
    await h?.close();
  });

  const newBuyer = () => fundedBuyer(h);

  /** Runs `paid` while the chain mines nothing for PAUSE_MS, then mines again. */
  async function withSlowChain<T>(paid: () => Promise<T>): Promise<T> {
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const resume = new Promise<void>((resolve) =>
      setTimeout(async () => {
        await rpc(rpcUrl, 'evm_setAutomine', [true]);
        await rpc(rpcUrl, 'evm_mine', []);
        resolve();
      }, PAUSE_MS),
    );
    try {
      return await paid();
    } finally {
      await resume;
    }
  }

  const settledOnce = async (buyer: Address) => expect(await h.balanceOf(buyer)).toBe(5_000_000n - PRICE);

  test('v2 seller: the settle waits past SETTLE_WAIT_MS, the buyer is served and pays once', async () => {
    const buyer = await newBuyer();
    const { pay, sent } = v2Payer(buyer, 'eip155:84532', h.stack.usdc);
    const started = Date.now();
    const res = await withSlowChain(() => pay(`${sellerUrl}/v2/weather`));
    expect(Date.now() - started).toBeGreaterThanOrEqual(PAUSE_MS);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ forecast: 'sunny' });
    expect(decodePaymentResponseHeader(res.headers.get('payment-response')!)).toMatchObject({ success: true, payer: buyer.address });
    expect(sent).toHaveLength(1);
    await settledOnce(buyer.address);
  });

  test('v1 seller: the 202 reads as a failed settlement, the buyer is refused, the payment still settles once; a repeat answers it', async () => {
    const buyer = await newBuyer();
    const { pay, sent } = v1Payer(h, buyer, PRICE);
    const res = await withSlowChain(() => pay(`${sellerUrl}/v1/weather`));
    expect(res.status).toBe(402);
    expect(sent).toHaveLength(1);
    await settledOnce(buyer.address);
    // The seller (or an operator) repeats the same settle: the final answer, and nothing moves again.
    const payment = JSON.parse(Buffer.from(sent[0], 'base64').toString('utf8'));
    const again = await request('POST', `${h.api.baseUrl}/v1/settle`, {
      json: {
        x402Version: 1,
        paymentPayload: payment,
        paymentRequirements: {
          scheme: 'exact',
          network: 'base-sepolia',
          maxAmountRequired: PRICE.toString(),
          resource: `${sellerUrl}/v1/weather`,
          description: '',
          mimeType: '',
          payTo: h.stack.facilitator,
          maxTimeoutSeconds: 120,
          asset: h.stack.usdc,
          extra: { name: 'USDC', version: '2' },
        },
      },
      headers: { authorization: `Bearer ${h.apiKey}` },
    });
    expect(again).toMatchObject({ status: 200, body: { success: true, network: 'base-sepolia', payer: buyer.address } });
    expect(await h.settledEvents(buyer.address, payment.payload.authorization.nonce)).toBe(1);
    await settledOnce(buyer.address);
  });
});
