import type { PrivateKeyAccount } from 'viem/accounts';
import { createWalletClient, http, numberToHex, type Address } from 'viem';
import {
  PERMIT2_CANONICAL_ADDRESS,
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
} from '../../src/chains/devnet-addresses';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { decodePaymentResponseHeader, v2Payer } from '../support/x402-v2';
import { fundedBuyer, serveSeller, v2Facilitator } from '../support/sdk-seller';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * x402 v2 Permit2 end to end (issue 13), real SDKs on both sides: an `@x402/express` 2.x seller whose
 * facilitator is our API, and an `@x402/fetch` 2.x buyer with `@x402/evm`'s exact scheme in
 * `assetTransferMethod: "permit2"` (with Permit2 approved, and gas-free through the EIP-2612
 * sponsoring extension) and its `upto` scheme (the seller settles its usage out of the signed
 * maximum). The SDK signs for the canonical Permit2 and x402 proxy addresses, where the devnet runs
 * our contracts.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const { paymentMiddleware, x402ResourceServer, setSettlementOverrides } = require('@x402/express');
const { ExactEvmScheme: ExactEvmServer } = require('@x402/evm/exact/server');
const { UptoEvmScheme: UptoEvmServer } = require('@x402/evm/upto/server');
const { ExactEvmScheme } = require('@x402/evm/exact/client');
const { UptoEvmScheme } = require('@x402/evm/upto/client');
const { declareEip2612GasSponsoringExtension } = require('@x402/extensions');
/* eslint-enable @typescript-eslint/no-require-imports */

jest.setTimeout(120_000);

const PRICE = 1_000_000n;
const USAGE = 400_000n; // what the metered route settles out of its 1 USDC maximum
const FEE_BPS = 100n;
const NETWORK = 'eip155:84532';
const fee = (amount: bigint) => (amount * FEE_BPS) / 10_000n;

describe.each(oneDbKind('postgres'))('x402 v2 Permit2 and upto through our facilitator (%s)', (kind) => {
  let h: SettleHarness;
  let seller: Awaited<ReturnType<typeof serveSeller>>;
  let sellerUrl: string;

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 1, platformFeeBps: Number(FEE_BPS) });
    const resourceServer = new x402ResourceServer(v2Facilitator(h))
      .register(NETWORK, new ExactEvmServer())
      .register(NETWORK, new UptoEvmServer());
    const token = { name: 'USDC', version: '2' };
    const permit2 = (scheme: string) => ({
      scheme,
      network: NETWORK,
      price: { amount: PRICE.toString(), asset: h.stack.usdc, extra: { ...token, assetTransferMethod: 'permit2' } },
      payTo: h.stack.facilitator,
      maxTimeoutSeconds: 120,
    });
    seller = await serveSeller((app) => {
      app.use(
        paymentMiddleware(
          {
            'GET /permit2': { accepts: permit2('exact'), description: 'paid with Permit2' },
            'GET /sponsored': {
              accepts: permit2('exact'),
              description: 'Permit2, gas-free',
              extensions: declareEip2612GasSponsoringExtension(),
            },
            'GET /metered': { accepts: permit2('upto'), description: 'usage-based' },
          },
          resourceServer,
        ),
      );
      app.get('/permit2', (_req: unknown, res: any) => res.json({ paid: 'permit2' }));
      app.get('/sponsored', (_req: unknown, res: any) => res.json({ paid: 'sponsored' }));
      app.get('/metered', (_req: unknown, res: any) => {
        setSettlementOverrides(res, { amount: USAGE.toString() });
        res.json({ paid: 'metered' });
      });
    });
    sellerUrl = seller.url;
  });
  afterAll(async () => {
    await seller?.close();
    await h?.close();
  });

  const rpcUrl = () => h.stack.chains['base-sepolia'].rpcUrl;

  /** A fresh buyer with 5 USDC; with `approve`, it also has gas and has approved Permit2 for 5 USDC. */
  async function newBuyer(approve: boolean) {
    const buyer = await fundedBuyer(h);
    if (approve) {
      await h.chain.request({ method: 'anvil_setBalance' as never, params: [buyer.address, numberToHex(10n ** 18n)] as never });
      const wallet = createWalletClient({ account: buyer, transport: http(rpcUrl()) });
      const approved = await wallet.writeContract({
        chain: null,
        address: h.stack.usdc,
        abi: tokenAbi,
        functionName: 'approve',
        args: [PERMIT2_CANONICAL_ADDRESS, 5_000_000n],
      });
      await h.chain.waitForTransactionReceipt({ hash: approved, pollingInterval: 20 });
    }
    return { buyer, ...payer(buyer) };
  }

  /** `@x402/fetch` with the exact and upto EVM schemes (their RPC for the allowance and the EIP-2612 nonce). */
  const payer = (account: PrivateKeyAccount) =>
    v2Payer(account, NETWORK, h.stack.usdc, [
      new ExactEvmScheme(account, { rpcUrl: rpcUrl() }),
      new UptoEvmScheme(account, { rpcUrl: rpcUrl() }),
    ]);

  const balances = async (buyer: Address) => ({
    buyer: await h.balanceOf(buyer),
    payout: await h.balanceOf(h.payout),
    fee: await h.balanceOf(h.feeRecipient),
  });

  async function expectPaid(res: Response, body: unknown, buyer: Address) {
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(body);
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settled).toMatchObject({
      success: true,
      network: NETWORK,
      payer: buyer,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    return settled as { transaction: string; amount?: string };
  }

  const allowance = (owner: Address) =>
    h.chain.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'allowance', args: [owner, PERMIT2_CANONICAL_ADDRESS] });

  test('exact with Permit2 approved: the SDK signs for the canonical proxy, exact deltas, settled once however often it is sent', async () => {
    const { buyer, pay, sent } = await newBuyer(true);
    const before = await balances(buyer.address);
    const settled = await expectPaid(await pay(`${sellerUrl}/permit2`), { paid: 'permit2' }, buyer.address);
    expect(sent).toHaveLength(1);
    expect(sent[0].payload.permit2Authorization).toMatchObject({ from: buyer.address, spender: X402_EXACT_PERMIT2_PROXY_ADDRESS });
    expect(await balances(buyer.address)).toEqual({
      buyer: before.buyer - PRICE,
      payout: before.payout + PRICE - fee(PRICE),
      fee: before.fee + fee(PRICE),
    });
    // The seller retries the same payment: the same workflow answers, nothing moves again.
    const again = await request('POST', `${h.api.baseUrl}/v1/settle`, {
      json: { x402Version: 2, paymentPayload: sent[0], paymentRequirements: sent[0].accepted },
      headers: { authorization: `Bearer ${h.apiKey}` },
    });
    expect(again).toMatchObject({
      status: 200,
      body: { success: true, transaction: settled.transaction, network: NETWORK, payer: buyer.address },
    });
    expect(await balances(buyer.address)).toEqual({
      buyer: before.buyer - PRICE,
      payout: before.payout + PRICE - fee(PRICE),
      fee: before.fee + fee(PRICE),
    });
    // v2 verify runs the Permit2 rules: the nonce is spent now.
    const verify = await request('POST', `${h.api.baseUrl}/v1/verify`, {
      json: { x402Version: 2, paymentPayload: sent[0], paymentRequirements: sent[0].accepted },
      headers: { authorization: `Bearer ${h.apiKey}` },
    });
    expect(verify).toMatchObject({ status: 200, body: { isValid: false, invalidReason: 'permit2_invalid_nonce', payer: buyer.address } });
  });

  test('exact gas-free: no approval and no ETH, the EIP-2612 sponsoring extension approves Permit2 in the settlement', async () => {
    const { buyer, pay, sent } = await newBuyer(false);
    expect(await h.chain.getBalance({ address: buyer.address })).toBe(0n);
    const before = await balances(buyer.address);
    await expectPaid(await pay(`${sellerUrl}/sponsored`), { paid: 'sponsored' }, buyer.address);
    expect(sent[0].extensions.eip2612GasSponsoring.info).toMatchObject({
      from: buyer.address,
      spender: PERMIT2_CANONICAL_ADDRESS,
      amount: PRICE.toString(),
    });
    expect(await balances(buyer.address)).toEqual({
      buyer: before.buyer - PRICE,
      payout: before.payout + PRICE - fee(PRICE),
      fee: before.fee + fee(PRICE),
    });
    // The permit allowed exactly the price, and the transfer used it up.
    expect(await allowance(buyer.address)).toBe(0n);
  });

  test('upto: the buyer signs a maximum for the upto proxy, the seller settles its usage, the response names the amount', async () => {
    const { buyer, pay, sent } = await newBuyer(true);
    const before = await balances(buyer.address);
    const settled = await expectPaid(await pay(`${sellerUrl}/metered`), { paid: 'metered' }, buyer.address);
    expect(settled.amount).toBe(USAGE.toString());
    expect(sent[0].payload.permit2Authorization).toMatchObject({
      spender: X402_UPTO_PERMIT2_PROXY_ADDRESS,
      permitted: { amount: PRICE.toString() },
      witness: { facilitator: h.stack.facilitator },
    });
    expect(await balances(buyer.address)).toEqual({
      buyer: before.buyer - USAGE,
      payout: before.payout + USAGE - fee(USAGE),
      fee: before.fee + fee(USAGE),
    });
  });
});
