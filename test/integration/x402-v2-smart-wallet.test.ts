import { isErc6492Signature, type Address, type Hex } from 'viem';
import type { SmartAccount } from 'viem/account-abstraction';
import { DEVNET_WALLET_FACTORY_ADDRESS } from '../../src/chains/devnet-addresses';
import { RelayerTransaction } from '../../src/db/entities';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { serveV2WeatherSeller } from '../support/sdk-seller';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { smartWallets } from '../support/smart-wallets';
import { decodePaymentResponseHeader, v2Payer } from '../support/x402-v2';

/**
 * Smart-wallet buyers end to end with the real x402 v2 SDKs (issue 40): `@x402/fetch` 2.x with
 * `@x402/evm`'s exact scheme pays an `@x402/express` 2.x seller, whose facilitator is us, from a viem
 * smart account (devnet/smart-wallet.ts). The SDK's client asks its signer only for `address` and
 * `signTypedData`; a smart account's typed-data signature is its wallet's EIP-1271 one, or, while the
 * wallet has no code, viem's EIP-6492 wrapper, and our relayer deploys the wallet before settling.
 */

jest.setTimeout(120_000);

const PRICE = 1_000_000n;
const FEE_BPS = 100n; // the organization's platform fee: 1 %
const FEE = (PRICE * FEE_BPS) / 10_000n;
const NETWORK = 'eip155:84532';

describe.each(oneDbKind('sqlite'))('x402 v2 SDKs paying from a smart wallet (%s)', (kind) => {
  let h: SettleHarness;
  let seller: Awaited<ReturnType<typeof serveV2WeatherSeller>>;
  let wallets: ReturnType<typeof smartWallets>;
  const relayer = TEST_ACCOUNTS.relayers[3];

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 3, platformFeeBps: Number(FEE_BPS) });
    wallets = smartWallets(h);
    seller = await serveV2WeatherSeller(h, PRICE);
  });
  afterAll(async () => {
    await seller?.close();
    await h?.close();
  });

  /** What moves when the wallet pays: its balance, the payout's, the fee recipient's, the relayer's nonce. */
  const snapshot = async (wallet: Address) => ({
    wallet: await h.balanceOf(wallet),
    payout: await h.balanceOf(h.payout),
    fee: await h.balanceOf(h.feeRecipient),
    relayerNonce: await h.chain.getTransactionCount({ address: relayer.address }),
  });
  /** Pays the seller once from `account` with the SDK; the response and the one PAYMENT-SIGNATURE payload it sent. */
  async function payFrom(account: SmartAccount) {
    const { pay, sent } = v2Payer(account, NETWORK, h.stack.usdc);
    const res = await pay(`${seller.url}/weather`);
    expect(sent).toHaveLength(1);
    return {
      res,
      body: await res.json(),
      payload: sent[0]! as { payload: { signature: Hex; authorization: { nonce: Hex } }; accepted: unknown },
    };
  }
  /**
   * The same PAYMENT-SIGNATURE again: to the seller (its SDK asks our verify first, which finds the
   * authorization used, so it answers 402 with that reason in PAYMENT-REQUIRED), and straight to our
   * /v1/settle as its facilitator client would (the recorded answer).
   */
  async function repeat(payload: { accepted: unknown }) {
    const header = Buffer.from(JSON.stringify(payload)).toString('base64');
    const seller402 = await fetch(`${seller.url}/weather`, { headers: { 'PAYMENT-SIGNATURE': header } });
    const settled = await request('POST', `${h.api.baseUrl}/v1/settle`, {
      json: { x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted },
      headers: { authorization: `Bearer ${h.apiKey}` },
    });
    const required = seller402.headers.get('payment-required');
    const error = required ? (JSON.parse(Buffer.from(required, 'base64').toString('utf8')) as { error?: string }).error : undefined;
    return { seller: { status: seller402.status, error }, settled };
  }

  test('a deployed wallet (EIP-1271) pays through the SDKs: 200 with the paid body, exact deltas, one relayer transaction; a repeat moves nothing', async () => {
    const { owner, account } = await wallets.fresh();
    await wallets.deploy(owner);
    expect(await wallets.hasCode(account.address)).toBe(true);
    const before = await snapshot(account.address);

    const { res, body, payload } = await payFrom(account);

    expect({ status: res.status, body }).toEqual({ status: 200, body: { forecast: 'sunny' } });
    expect(isErc6492Signature(payload.payload.signature)).toBe(false); // the wallet's plain EIP-1271 signature
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settled).toMatchObject({
      success: true,
      network: NETWORK,
      payer: account.address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    const after = await snapshot(account.address);
    expect(after).toEqual({
      wallet: before.wallet - PRICE,
      payout: before.payout + PRICE - FEE,
      fee: before.fee + FEE,
      relayerNonce: before.relayerNonce + 1,
    });
    expect(await h.settledEvents(account.address, payload.payload.authorization.nonce)).toBe(1);

    const again = await repeat(payload);
    expect(again.settled).toMatchObject({ status: 200, body: { success: true, transaction: settled.transaction, network: NETWORK } });
    expect(again.seller).toEqual({ status: 402, error: 'invalid_exact_evm_nonce_already_used' });
    expect(await snapshot(account.address)).toEqual(after);
    expect(await h.settledEvents(account.address, payload.payload.authorization.nonce)).toBe(1);
  });

  test('a counterfactual wallet (EIP-6492) pays through the SDKs: our relayer deploys it once, then settles; a repeat moves nothing', async () => {
    const { account } = await wallets.fresh();
    expect(await wallets.hasCode(account.address)).toBe(false);
    const before = await snapshot(account.address);

    const { res, body, payload } = await payFrom(account);

    expect({ status: res.status, body }).toEqual({ status: 200, body: { forecast: 'sunny' } });
    expect(isErc6492Signature(payload.payload.signature)).toBe(true); // viem wrapped it: the wallet had no code
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: NETWORK, payer: account.address });
    expect(await wallets.hasCode(account.address)).toBe(true);
    const after = await snapshot(account.address);
    expect(after).toEqual({
      wallet: before.wallet - PRICE,
      payout: before.payout + PRICE - FEE,
      fee: before.fee + FEE,
      relayerNonce: before.relayerNonce + 2, // the deployment, then the settlement
    });
    const workflowId = settleWorkflowId('base-sepolia', account.address, payload.payload.authorization.nonce);
    const records = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${workflowId}:%` } }, { orderBy: { nonce: 'asc' } });
    expect(records.map((r) => [r.id, r.status])).toEqual([
      [`${workflowId}:deploy`, 'mined'],
      [`${workflowId}:settle`, 'mined'],
    ]);
    expect(records[1]!.hash).toBe(settled.transaction);
    const deployment = await h.chain.getTransactionReceipt({ hash: records[0]!.hash as Hex });
    expect(deployment.to?.toLowerCase()).toBe(DEVNET_WALLET_FACTORY_ADDRESS.toLowerCase());
    expect(await h.settledEvents(account.address, payload.payload.authorization.nonce)).toBe(1);

    const again = await repeat(payload);
    expect(again.settled).toMatchObject({ status: 200, body: { success: true, transaction: settled.transaction, network: NETWORK } });
    expect(again.seller).toEqual({ status: 402, error: 'invalid_exact_evm_nonce_already_used' });
    expect(await snapshot(account.address)).toEqual(after);
  });
});
