import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { DEVNET_SOLANA_FEE_PAYER } from '../../src/chains/solana/fee-payer';
import { buildSolanaNetworkTable } from '../../src/chains/networks';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { solanaRpcCall } from '../support/solana';
import { decodePaymentResponseHeader, v2Payer } from '../support/x402-v2';
import { serveSeller, v2Facilitator } from '../support/sdk-seller';

/**
 * x402 v2 Solana `exact` end to end (issue 13), real SDKs on both sides: an `@x402/express` 2.x
 * seller with `@x402/svm`'s server scheme and our API as its facilitator, and an `@x402/fetch` 2.x
 * buyer with `@x402/svm`'s client scheme over a `@solana/kit` signer, on the litesvm-backed devnet
 * node. The SDK's transaction carries a Memo instruction; we co-sign as fee payer and submit it.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const { paymentMiddleware, x402ResourceServer } = require('@x402/express');
const { ExactSvmScheme: ExactSvmServer } = require('@x402/svm/exact/server');
const { ExactSvmScheme } = require('@x402/svm/exact/client');
const { createKeyPairSignerFromBytes } = require('@solana/kit');
/* eslint-enable @typescript-eslint/no-require-imports */
jest.setTimeout(120_000);

const NETWORK = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
const USDC = new PublicKey(buildSolanaNetworkTable({}).get('solana-devnet')!.usdc);
const AMOUNT = 1_000_000n;
/** The fee payer's cost: 2 signatures x 5000 lamports + ceil(the SDK's 1 microlamport x 20 000 units / 1e6). */
const FEE = 2 * 5000 + 1;

describe.each(oneDbKind('postgres'))('x402 v2 Solana exact through our facilitator (%s)', (kind) => {
  let h: SettleHarness;
  let seller: Awaited<ReturnType<typeof serveSeller>>;
  let sellerUrl: string;
  let conn: Connection;
  const payTo = Keypair.generate().publicKey;

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 3 });
    conn = new Connection(h.stack.solana.rpcUrl, 'confirmed');
    await solanaRpcCall(h.stack.solana.rpcUrl, 'devnet_fundToken', [payTo.toBase58(), 0]); // the seller's USDC account
    const resourceServer = new x402ResourceServer(v2Facilitator(h)).register(NETWORK, new ExactSvmServer());
    seller = await serveSeller((app) => {
      app.use(
        paymentMiddleware(
          {
            'GET /report': {
              accepts: {
                scheme: 'exact',
                network: NETWORK,
                price: { amount: AMOUNT.toString(), asset: USDC.toBase58() },
                payTo: payTo.toBase58(),
                maxTimeoutSeconds: 60,
              },
              description: 'a report paid in Solana USDC',
            },
          },
          resourceServer,
        ),
      );
      app.get('/report', (_req: unknown, res: any) => res.json({ report: 'ok' }));
    });
    sellerUrl = seller.url;
  });
  afterAll(async () => {
    await seller?.close();
    await h?.close();
  });

  const tokenBalance = async (owner: PublicKey) =>
    BigInt((await conn.getTokenAccountBalance(getAssociatedTokenAddressSync(USDC, owner))).value.amount);

  test('a v2 Solana buyer pays a v2 seller: exact token deltas, we pay only the fee, a repeat settles nothing more', async () => {
    const buyer = Keypair.generate();
    await solanaRpcCall(h.stack.solana.rpcUrl, 'devnet_fundToken', [buyer.publicKey.toBase58(), 5_000_000]);
    const signer = await createKeyPairSignerFromBytes(buyer.secretKey);
    const { pay, sent } = v2Payer(signer, NETWORK, USDC.toBase58(), [new ExactSvmScheme(signer, { rpcUrl: h.stack.solana.rpcUrl })]);
    const feePayer = DEVNET_SOLANA_FEE_PAYER.publicKey;
    const before = {
      buyer: await tokenBalance(buyer.publicKey),
      payTo: await tokenBalance(payTo),
      lamports: await conn.getBalance(feePayer),
    };

    const res = await pay(`${sellerUrl}/report`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ report: 'ok' });
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: NETWORK, payer: buyer.publicKey.toBase58() });
    expect(sent).toHaveLength(1);
    expect(await tokenBalance(buyer.publicKey)).toBe(before.buyer - AMOUNT);
    expect(await tokenBalance(payTo)).toBe(before.payTo + AMOUNT);
    expect(await conn.getBalance(feePayer)).toBe(before.lamports - FEE);

    // The seller sends the same payment again: the same transaction answers, nothing moves.
    const again = await request('POST', `${h.api.baseUrl}/v1/settle`, {
      json: { x402Version: 2, paymentPayload: sent[0], paymentRequirements: sent[0].accepted },
      headers: { authorization: `Bearer ${h.apiKey}` },
    });
    expect(again).toMatchObject({ status: 200, body: { success: true, transaction: settled.transaction, network: NETWORK } });
    expect(await tokenBalance(buyer.publicKey)).toBe(before.buyer - AMOUNT);
    expect(await tokenBalance(payTo)).toBe(before.payTo + AMOUNT);
  });
});
