import type { Hex } from 'viem';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { decodePaymentResponseHeader, v2Payer } from '../support/x402-v2';
import { fundedBuyer, serveV2WeatherSeller } from '../support/sdk-seller';

/**
 * x402 v2 end to end (issue 13), real SDKs on both sides and no hand-built payloads: a seller built
 * with `@x402/express` 2.x whose `x402ResourceServer` uses `HTTPFacilitatorClient` pointed at our
 * API with its Bearer key, and a buyer on `@x402/fetch` 2.x with `@x402/evm`'s exact scheme, paying
 * EIP-3009 `exact` on the devnet chain with the real chain id of base-sepolia (eip155:84532).
 */

jest.setTimeout(120_000);

const PRICE = 1_000_000n;
const FEE_BPS = 100n; // the organization's platform fee: 1 %
const NETWORK = 'eip155:84532';

describe.each(oneDbKind('sqlite'))('x402 v2 SDKs against our facilitator (%s)', (kind) => {
  let h: SettleHarness;
  let seller: Awaited<ReturnType<typeof serveV2WeatherSeller>>;
  let sellerUrl: string;

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 1, platformFeeBps: Number(FEE_BPS) });
    seller = await serveV2WeatherSeller(h, PRICE);
    sellerUrl = seller.url;
  });
  afterAll(async () => {
    await seller?.close();
    await h?.close();
  });

  /** A fresh buyer funded with 5 USDC, paying v2 `exact` on eip155:84532 only, with our devnet USDC allowed. */
  async function newBuyer() {
    const buyer = await fundedBuyer(h);
    return { buyer, ...v2Payer(buyer, NETWORK, h.stack.usdc) };
  }

  test('GET /v1/supported lists v2 kinds with CAIP-2 networks, extensions and signers', async () => {
    const res = await request('GET', `${h.api.baseUrl}/v1/supported`);
    expect(res.status).toBe(200);
    expect(res.body.kinds).toEqual(
      expect.arrayContaining([
        { x402Version: 1, scheme: 'exact', network: 'base-sepolia' },
        { x402Version: 2, scheme: 'exact', network: NETWORK },
        { x402Version: 2, scheme: 'upto', network: NETWORK, extra: { facilitatorAddress: h.stack.facilitator } },
        { x402Version: 2, scheme: 'exact', network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', extra: { feePayer: expect.any(String) } },
      ]),
    );
    expect(res.body.extensions).toEqual(['eip2612GasSponsoring']);
    expect(res.body.signers['eip155:*']).toEqual([TEST_ACCOUNTS.relayers[1].address]);
  });

  test('a v2 buyer pays a v2 seller through us: exact balance deltas, PAYMENT-RESPONSE in v2 words', async () => {
    const { buyer, pay, sent } = await newBuyer();
    const before = { buyer: await h.balanceOf(buyer.address), payout: await h.balanceOf(h.payout), fee: await h.balanceOf(h.feeRecipient) };
    const res = await pay(`${sellerUrl}/weather`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ forecast: 'sunny' });
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settled).toMatchObject({
      success: true,
      network: NETWORK,
      payer: buyer.address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    const fee = (PRICE * FEE_BPS) / 10_000n;
    expect(await h.balanceOf(buyer.address)).toBe(before.buyer - PRICE);
    expect(await h.balanceOf(h.payout)).toBe(before.payout + PRICE - fee);
    expect(await h.balanceOf(h.feeRecipient)).toBe(before.fee + fee);

    // The authorization the SDK signed is one settlement whoever asks, in either protocol version.
    expect(sent).toHaveLength(1);
    const payload = sent[0] as { payload: { authorization: { from: Hex; nonce: Hex } } };
    const { from, nonce } = payload.payload.authorization;
    expect(await h.settledEvents(from, nonce)).toBe(1);
    const v2Again = await request('POST', `${h.api.baseUrl}/v1/settle`, {
      json: { x402Version: 2, paymentPayload: sent[0], paymentRequirements: (sent[0] as { accepted: unknown }).accepted },
      headers: { authorization: `Bearer ${h.apiKey}` },
    });
    expect(v2Again).toMatchObject({ status: 200, body: { success: true, transaction: settled.transaction, network: NETWORK } });
    const described = await h.temporal.workflow.getHandle(settleWorkflowId('base-sepolia', from, nonce)).describe();
    expect(described.status.name).toBe('COMPLETED');
    expect(await h.settledEvents(from, nonce)).toBe(1);
  });

  test('v2 verify answers isValid and the payer; a bad v2 body is refused in v2 words', async () => {
    const { buyer, pay, sent } = await newBuyer();
    // A paid request first; then our verify on the payload the SDK signed for it.
    const res = await pay(`${sellerUrl}/weather`);
    expect(res.status).toBe(200);
    const accepted = (sent[0] as { accepted: Record<string, unknown> }).accepted;
    const verify = (json: unknown) =>
      request('POST', `${h.api.baseUrl}/v1/verify`, { json, headers: { authorization: `Bearer ${h.apiKey}` } });
    // Already settled: the nonce is used on chain.
    expect(await verify({ x402Version: 2, paymentPayload: sent[0], paymentRequirements: accepted })).toMatchObject({
      status: 200,
      body: { isValid: false, invalidReason: 'invalid_exact_evm_nonce_already_used', payer: buyer.address }, // the v2 SDK's name
    });
    expect(await verify({ x402Version: 2, paymentPayload: sent[0], paymentRequirements: { ...accepted, amount: 'lots' } })).toMatchObject({
      status: 400,
      body: { errorReason: 'invalid_payment_requirements' },
    });
    const settle = await request('POST', `${h.api.baseUrl}/v1/settle`, {
      json: { x402Version: 2, paymentPayload: { x402Version: 2 }, paymentRequirements: accepted },
      headers: { authorization: `Bearer ${h.apiKey}` },
    });
    expect(settle).toMatchObject({
      status: 400,
      body: { success: false, errorReason: 'invalid_payload', transaction: '', network: NETWORK },
    });
  });
});
