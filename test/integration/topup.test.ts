import { randomBytes } from 'node:crypto';
import type { Address, Hex } from 'viem';
import { DEVNET_DEPOSITOR_ADDRESS, DEVNET_DEPOSITOR_DEPLOYER_KEY, DEVNET_MERCHANT_ADDRESS } from '../../src/chains/devnet-addresses';
import { topupDepositId } from '../../activities/topup';
import { TopUp, RelayerTransaction } from '../../src/db/entities';
import { payerCommitmentNonce } from '../../src/topup/payer-commitment';
import { settleWorkflowId, topupWorkflowId } from '../../src/temporal/workflow-ids';
import { X402Kind, X402State } from '../../src/temporal/search-attributes';
import { TEST_ACCOUNTS } from '../support/accounts';
import { waitForReceipt } from '../support/evm';
import { request } from '../support/http';
import type { AddressInfo } from 'node:net';
import { createTopupApp } from '../../src/topup/app';
import { RateLimits } from '../../src/http/rate-limit';
import { buildNetworkTable } from '../../src/chains/networks';
import { createLogger } from '../../src/logger';
import { createWalletClient, decodeFunctionData, http, parseEventLogs } from 'viem';
// x402-fetch ships ESM-only type declarations that this CommonJS build cannot resolve; its CJS runtime is used.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { decodeXPaymentResponse, wrapFetchWithPayment } = require('x402-fetch') as {
  wrapFetchWithPayment(f: typeof fetch, wallet: unknown, maxValue?: bigint): typeof fetch;
  decodeXPaymentResponse(header: string): unknown;
};
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { oneDbKind } from '../support/db';
import { decodePaymentResponseHeader, v2Payer } from '../support/x402-v2';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { refundOwed } from '../../activities/topup-refund';
import { Relayer } from '../../src/chains/evm/relayer';
import type { TopUpInput } from '../../src/topup/types';
import { startTopupHarness, type TopupHarness } from '../support/topup-harness';
import { buyerAuthHeaders } from '../../src/media/buyer-auth-client';
import { depositorAbi, facilitatorAbi, tokenAbi } from '../../src/chains/evm/abi';

/** Fees of the harness: 0.01 USDC + 0.30 %. Hand-computed expectations below use them. */
const net = (gross: bigint) => gross - 10_000n - (gross * 30n) / 10_000n;

describe.each(oneDbKind('postgres'))('top-up gateway (%s)', (kind) => {
  let h: TopupHarness;
  beforeAll(async () => {
    h = await startTopupHarness(kind, { relayerIndex: 0 });
  });
  afterAll(async () => {
    await h?.close();
  });

  const requirement = (amount: string) => ({
    scheme: 'exact',
    network: 'base',
    maxAmountRequired: amount,
    resource: `${h.url}/v1/demo-merchant/topups`,
    description: 'Top-up of your demo-merchant balance',
    mimeType: 'application/json',
    payTo: h.stack.facilitator,
    maxTimeoutSeconds: 300,
    asset: h.stack.usdc,
    extra: { name: 'USDC', version: '2' },
  });

  test('GET /healthz reports Temporal, the database, every enabled network with the relayer gas, and the merchant contract', async () => {
    const res = await h.get('/healthz');
    expect(res.status).toBe(200);
    const evm = (chainId: number) => ({
      ok: true,
      ms: expect.any(Number),
      chainId,
      blockNumber: expect.any(Number),
      relayer: { address: h.tdb.config.RELAYER_ADDRESS, balanceEther: expect.stringMatching(/^\d/), minBalanceEther: '0.01', ok: true },
    });
    expect(res.body).toEqual({
      status: 'ok',
      merchant: 'demo-merchant',
      checks: {
        temporal: { ok: true, ms: expect.any(Number) },
        database: { ok: true, ms: expect.any(Number) },
        networks: {
          'base-sepolia': evm(84532),
          'optimism-sepolia': evm(11155420),
          base: evm(8453),
          'solana-devnet': { ok: true, ms: expect.any(Number), slot: expect.any(Number) },
        },
        merchantContract: {
          ok: true,
          ms: expect.any(Number),
          address: DEVNET_MERCHANT_ADDRESS,
          relayer: h.relayer.address,
          depositor: DEVNET_DEPOSITOR_ADDRESS,
        },
      },
    });
  });

  test('GET /healthz says which dependency is down: 503 degraded', async () => {
    // The same gateway with its destination RPC pointing at a closed port.
    const env = { ...h.tdb.config.env, RPC_URLS_BASE: 'http://127.0.0.1:1' };
    const app = createTopupApp({
      config: h.tdb.config,
      topup: h.topup,
      db: h.tdb.db,
      networks: buildNetworkTable(env),
      temporal: h.temporal,
      logger: createLogger('silent', 'test'),
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await request('GET', `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`);
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({
        status: 'degraded',
        checks: {
          temporal: { ok: true },
          database: { ok: true },
          networks: { base: { ok: false, error: expect.any(String) }, 'base-sepolia': { ok: true }, 'solana-devnet': { ok: true } },
          merchantContract: { ok: false },
        },
      });
    } finally {
      server.close();
    }
  });

  test('per-address budget: 429 rate_limited in the top-up shape with Retry-After (issue 12)', async () => {
    const rateLimits = new RateLimits({ ...h.tdb.config, RATE_LIMIT_IP: 2 });
    const app = createTopupApp({
      config: h.tdb.config,
      topup: h.topup,
      db: h.tdb.db,
      networks: buildNetworkTable(h.tdb.config.env),
      temporal: h.temporal,
      logger: createLogger('silent', 'test'),
      rateLimits,
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/nobody/topups/quote`;
    try {
      expect([(await request('GET', url)).status, (await request('GET', url)).status]).toEqual([404, 404]);
      const res = await request('GET', url);
      expect(res.status).toBe(429);
      expect(res.body).toEqual({
        success: false,
        errorReason: 'rate_limited',
        error: expect.stringMatching(/^too many requests from this address; retry in \d+ s$/),
      });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    } finally {
      server.close();
    }
  });

  test('unknown merchant: 404 unknown_merchant on every route', async () => {
    const buyer = TEST_ACCOUNTS.buyers[1].address;
    for (const res of [
      await h.get(`/v1/nobody/topups/quote?buyer=${buyer}`),
      await h.post({}, undefined, 'nobody'),
      await h.get('/v1/nobody/topups/topup:nobody:0x1:0x2'),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ success: false, errorReason: 'unknown_merchant', error: 'unknown merchant nobody' });
    }
  });

  test('GET /v1/{merchant}/topups/{id}: 404 topup_not_found for an unknown id', async () => {
    const res = await h.get('/v1/demo-merchant/topups/topup:demo-merchant:0x00:0x00');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ success: false, errorReason: 'topup_not_found', error: 'no top-up topup:demo-merchant:0x00:0x00' });
  });

  test('a buyer without headroom: quote and challenge answer 409 credit_limit_reached', async () => {
    const buyer = (await h.freshPayer(0n)).address;
    await h.setCreditLimit(buyer, 999_999n); // below the 1 USDC minimum first deposit: nothing fits
    const quote = await h.get(`/v1/demo-merchant/topups/quote?buyer=${buyer}`);
    expect(quote.status).toBe(409);
    expect(quote.body).toEqual({
      success: false,
      errorReason: 'credit_limit_reached',
      error: "the amount would exceed the buyer's credit limit on the merchant contract",
    });
    const post = await h.post({ buyer });
    expect(post.status).toBe(409);
    expect(post.body).toEqual(quote.body);
  });

  test('quote: every field, exact bounds for a fresh buyer', async () => {
    const buyer = (await h.freshPayer(0n)).address;
    const res = await h.get(`/v1/demo-merchant/topups/quote?buyer=${buyer.toLowerCase()}`);
    expect(res.status).toBe(200);
    // min: smallest gross crediting the 1 USDC first-deposit minimum; max: largest crediting <= 1000 USDC.
    expect(res.body).toEqual({
      buyer,
      amount: null,
      minAmount: '1013039',
      maxAmount: '1003019057',
      balance: '0',
      creditLimit: '1000000000',
      headroom: '1000000000',
      minBuyerDeposit: '1000000',
      requirements: requirement('1003019057'),
      sources: [{ network: 'base', evmChainId: 8453, minAmount: '1013039', maxAmount: '1003019057' }],
    });
    const withAmount = await h.get(`/v1/demo-merchant/topups/quote?buyer=${buyer}&amount=5000000&network=base`);
    expect(withAmount.status).toBe(200);
    expect(withAmount.body.amount).toBe('5000000');
    expect(withAmount.body.requirements).toEqual(requirement('5000000'));
  });

  test('quote: 400 amount_too_low / amount_too_high, 409 credit_limit_reached, 400 wrong_network', async () => {
    const buyer = (await h.freshPayer(0n)).address;
    const q = (query: string) => h.get(`/v1/demo-merchant/topups/quote?buyer=${buyer}&${query}`);
    expect(await q('amount=1013038')).toMatchObject({ status: 400, body: { success: false, errorReason: 'amount_too_low' } });
    expect((await q('amount=1013039')).status).toBe(200);
    expect(await q('amount=10000000001')).toMatchObject({ status: 400, body: { success: false, errorReason: 'amount_too_high' } });
    expect(await q('amount=1003019058')).toMatchObject({ status: 409, body: { success: false, errorReason: 'credit_limit_reached' } });
    expect((await q('amount=1003019057')).status).toBe(200);
    for (const network of ['solana', 'base-sepolia', 'nowhere', 'optimism', 'ethereum']) {
      // optimism is a cross-chain source, not in this gateway's TOPUP_SOURCES (topup-crosschain.test.ts serves it).
      expect(await q(`network=${network}`)).toEqual(
        expect.objectContaining({
          status: 400,
          body: { success: false, errorReason: 'wrong_network', error: `network ${network} is not a top-up source here` },
        }),
      );
    }
    expect(await h.get('/v1/demo-merchant/topups/quote')).toMatchObject({
      status: 400,
      body: { success: false, errorReason: 'invalid_request' },
    });
  });

  test('POST without payment: 402 with one requirement per source and the topup object', async () => {
    const buyer = (await h.freshPayer(0n)).address;
    const res = await h.post({ buyer, amount: '5000000' });
    expect(res.status).toBe(402);
    expect(res.body).toEqual({
      x402Version: 1,
      error: 'X-PAYMENT header is required',
      accepts: [requirement('5000000')],
      topup: {
        buyer,
        amount: '5000000',
        minAmount: '1013039',
        maxAmount: '1003019057',
        note: expect.stringContaining('payer-commitment-v1'),
        merchant: 'demo-merchant',
        creditedRecipient: DEVNET_MERCHANT_ADDRESS,
        destinationChainId: 8453,
        sources: [{ network: 'base', evmChainId: 8453, minAmount: '1013039', maxAmount: '1003019057' }],
      },
    });
    // Without a buyer: a fresh buyer's bounds, the full headroom as amount.
    const anyone = await h.post({});
    expect(anyone.status).toBe(402);
    expect(anyone.body.accepts).toEqual([requirement('1003019057')]);
    expect(anyone.body.topup.buyer).toBeNull();
  });

  /** What the top-up relayer lets the deposit key (and through it the merchant contract) pull. */
  const merchantAllowance = () =>
    h.chain.readContract({
      address: h.stack.usdc,
      abi: tokenAbi,
      functionName: 'allowance',
      args: [h.relayer.address, DEVNET_DEPOSITOR_ADDRESS],
    });

  test('same-chain top-up: settled, deposited, exact amounts on chain and in the record', async () => {
    const payer = await h.freshPayer(10_000_000n);
    const gross = 5_000_000n;
    const pay = await h.xPayment(payer, { value: gross });
    const before = {
      payer: await h.usdcOf(payer.address),
      merchant: await h.usdcOf(DEVNET_MERCHANT_ADDRESS),
      fee: await h.usdcOf(h.feeRecipient),
      relayer: await h.usdcOf(h.relayer.address),
      allowance: await merchantAllowance(),
    };
    const started = Date.now();
    const res = await h.post({ amount: gross.toString() }, pay.header);
    expect(res.status).toBe(200);
    const topupId = topupWorkflowId('demo-merchant', payer.address, pay.nonce);
    expect(res.body).toEqual({
      success: true,
      topupId,
      state: 'deposited',
      buyer: payer.address,
      payer: payer.address,
      network: 'base',
      sourceNetwork: 'base',
      grossAmount: '5000000',
      netAmount: '4975000',
      settlementTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      fillTx: null,
      depositTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      refundTx: null,
      error: null,
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
    });
    expect(net(gross)).toBe(4_975_000n);
    expect(res.body.createdAt).toBeGreaterThanOrEqual(started);
    expect(res.body.updatedAt).toBeGreaterThanOrEqual(res.body.createdAt);
    expect(res.body.updatedAt).toBeLessThanOrEqual(Date.now());
    const header = JSON.parse(Buffer.from(res.headers.get('x-payment-response')!, 'base64').toString());
    expect(header).toEqual({ success: true, transaction: res.body.settlementTx, network: 'base', payer: payer.address });

    expect(await h.merchantBalance(payer.address)).toBe(4_975_000n);
    expect(await h.depositedEvents(payer.address)).toEqual([4_975_000n]);
    expect(await h.usdcOf(payer.address)).toBe(before.payer - gross);
    expect(await h.usdcOf(DEVNET_MERCHANT_ADDRESS)).toBe(before.merchant + 4_975_000n);
    expect(await h.usdcOf(h.feeRecipient)).toBe(before.fee + 25_000n);
    expect(await h.usdcOf(h.relayer.address)).toBe(before.relayer); // passed through, nothing kept
    // The deposit key was allowed exactly this deposit, which spent it: no unlimited approval.
    expect(await merchantAllowance()).toBe(before.allowance);

    const status = await h.get(`/v1/demo-merchant/topups/${topupId}`, { as: payer });
    expect(status).toMatchObject({ status: 200, body: res.body });
    // Anyone else who knows the id (payer and nonce) reads only what the spec requires (issue 39, low):
    // no payer, buyer, gross amount, refund or error; a wallet that signs is no one special either.
    const publicFields = {
      success: true,
      topupId,
      state: 'deposited',
      netAmount: res.body.netAmount,
      settlementTx: res.body.settlementTx,
      fillTx: null,
      depositTx: res.body.depositTx,
    };
    expect(await h.get(`/v1/demo-merchant/topups/${topupId}`)).toMatchObject({ status: 200, body: publicFields });
    expect((await h.get(`/v1/demo-merchant/topups/${topupId}`)).body).toEqual(publicFields);
    const stranger = privateKeyToAccount(generatePrivateKey());
    expect((await h.get(`/v1/demo-merchant/topups/${topupId}`, { as: stranger })).body).toEqual(publicFields);
    const forged = await request('GET', `${h.url}/v1/demo-merchant/topups/${topupId}`, {
      headers: {
        ...(await buyerAuthHeaders(stranger, { method: 'GET', url: `${h.url}/v1/demo-merchant/topups/${topupId}` })),
        'X-Buyer-Address': payer.address.toLowerCase(),
      },
    });
    expect(forged.status).toBe(401);
    expect(forged.body).toMatchObject({ success: false, errorReason: expect.any(String) });
    // Operators find it in Temporal by kind and state; the settlement ran as its child, keyed by (payer, nonce).
    const described = await h.temporal.workflow.getHandle(topupId).describe();
    expect(described.typedSearchAttributes.get(X402Kind)).toBe('topup');
    expect(described.typedSearchAttributes.get(X402State)).toBe('deposited');
    const child = await h.temporal.workflow.getHandle(settleWorkflowId('base', payer.address, pay.nonce)).describe();
    expect(child.status.name).toBe('COMPLETED');
    expect(child.typedSearchAttributes.get(X402State)).toBe('settled');
    // The quote now sees the balance: no first-deposit minimum, headroom reduced exactly.
    const quote = await h.get(`/v1/demo-merchant/topups/quote?buyer=${payer.address}`);
    expect(quote.body).toMatchObject({ balance: '4975000', headroom: '995025000', minBuyerDeposit: '0' });
  });
  test('a second transaction of the same deposit reverts on the deposit key and credits nothing, whatever its nonce', async () => {
    const payer = await h.freshPayer(10_000_000n);
    const pay = await h.xPayment(payer, { value: 2_000_000n });
    const res = await h.post({ amount: '2000000' }, pay.header);
    expect(res.status).toBe(200);
    expect(res.body.state).toBe('deposited');
    const topupId = res.body.topupId as string;
    const first = await h.chain.getTransaction({ hash: res.body.depositTx as Hex });
    expect(first.to?.toLowerCase()).toBe(DEVNET_DEPOSITOR_ADDRESS.toLowerCase());
    expect(
      await h.chain.readContract({
        address: DEVNET_DEPOSITOR_ADDRESS,
        abi: depositorAbi,
        functionName: 'used',
        args: [topupDepositId(topupId)],
      }),
    ).toBe(true);
    // Another allowed caller (a second relayer key) holds and allows the amount, so that only the key stands in its way.
    const net = BigInt(res.body.netAmount);
    const other = privateKeyToAccount(generatePrivateKey());
    await rpc(h.stack.chains.base.rpcUrl, 'anvil_setBalance', [other.address, '0xde0b6b3a7640000']);
    const owner = privateKeyToAccount(DEVNET_DEPOSITOR_DEPLOYER_KEY);
    const sent = async (account: typeof other, call: Parameters<ReturnType<TopupHarness['walletOf']>['writeContract']>[0]) =>
      expect((await waitForReceipt(h.chain, await h.walletOf(account).writeContract(call))).status).toBe('success');
    await sent(owner, {
      address: DEVNET_DEPOSITOR_ADDRESS,
      abi: depositorAbi,
      functionName: 'setCaller',
      args: [other.address, true],
    } as any);
    await sent(TEST_ACCOUNTS.buyers[0], {
      address: h.stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [other.address, net],
    } as any);
    await sent(other, { address: h.stack.usdc, abi: tokenAbi, functionName: 'approve', args: [DEVNET_DEPOSITOR_ADDRESS, net] } as any);
    const before = { merchant: await h.merchantBalance(payer.address), other: await h.usdcOf(other.address) };
    // What stops it is the used key, not the caller or the funds.
    const { args } = decodeFunctionData({ abi: depositorAbi, data: first.input });
    await expect(
      h.chain.simulateContract({
        account: other,
        address: DEVNET_DEPOSITOR_ADDRESS,
        abi: depositorAbi,
        functionName: 'depositOnce',
        args: args as any,
      }),
    ).rejects.toThrow(/DepositIdUsed/);
    // The same bytes as the recorded deposit, from another key at another nonce (what any duplicate would send).
    const again = await h.walletOf(other).sendTransaction({ to: first.to!, data: first.input, gas: 300_000n } as any);
    const receipt = await waitForReceipt(h.chain, again);
    expect(receipt.status).toBe('reverted');
    expect(await h.merchantBalance(payer.address)).toBe(before.merchant);
    expect(await h.usdcOf(other.address)).toBe(before.other);
    expect(await h.depositedEvents(payer.address)).toEqual([net]);
  });

  describe('rejected before settlement: exact status and body, nothing moves', () => {
    const expectRejected = async (res: { status: number; body: any }, status: number, errorReason: string, error: string | RegExp) => {
      expect(res.status).toBe(status);
      expect(res.body).toEqual({ success: false, errorReason, error: typeof error === 'string' ? error : expect.stringMatching(error) });
    };
    let payer: Awaited<ReturnType<TopupHarness['freshPayer']>>;
    let payerBalance: bigint;
    beforeAll(async () => {
      payer = await h.freshPayer(20_000_000n);
      payerBalance = await h.usdcOf(payer.address);
    });
    afterAll(async () => {
      // None of the rejected payments moved funds or credited anyone.
      expect(await h.usdcOf(payer.address)).toBe(payerBalance);
      expect(await h.merchantBalance(payer.address)).toBe(0n);
    });

    test('buyer_mismatch: another buyer without a payer-commitment-v1 nonce', async () => {
      const other = TEST_ACCOUNTS.buyers[2].address;
      const pay = await h.xPayment(payer, { value: 5_000_000n });
      await expectRejected(
        await h.post({ buyer: other }, pay.header),
        400,
        'buyer_mismatch',
        'buyer must equal authorization.from unless the nonce is a valid payer-commitment-v1 binding',
      );
      // A commitment whose salt does not derive this nonce is no binding either.
      await expectRejected(
        await h.post(
          { buyer: other, payerCommitment: { version: 'payer-commitment-v1', salt: `0x${randomBytes(32).toString('hex')}` } },
          pay.header,
        ),
        400,
        'buyer_mismatch',
        /payer-commitment-v1/,
      );
    });

    test('wrong_network: a payment signed for a network that is not a source', async () => {
      const pay = await h.xPayment(payer, { value: 5_000_000n, network: 'base-sepolia', chainId: 84532 });
      await expectRejected(await h.post({}, pay.header), 400, 'wrong_network', 'network base-sepolia is not a top-up source here');
    });

    test('wrong_recipient: authorization.to is not the facilitator', async () => {
      const pay = await h.xPayment(payer, { value: 5_000_000n, to: TEST_ACCOUNTS.payout.address });
      await expectRejected(
        await h.post({}, pay.header),
        400,
        'wrong_recipient',
        `authorization.to must be the facilitator contract ${h.stack.facilitator}`,
      );
    });

    test('invalid_signature: signed by someone else', async () => {
      const pay = await h.xPayment(payer, { value: 5_000_000n, signer: TEST_ACCOUNTS.buyers[3] });
      await expectRejected(
        await h.post({}, pay.header),
        400,
        'invalid_signature',
        'the EIP-3009 signature does not recover to authorization.from',
      );
    });

    test('authorization_window_too_long: validBefore beyond maxTimeoutSeconds + 60 s', async () => {
      const pay = await h.xPayment(payer, { value: 5_000_000n, validBefore: BigInt(Math.floor(Date.now() / 1000) + 300 + 120) });
      await expectRejected(
        await h.post({}, pay.header),
        400,
        'authorization_window_too_long',
        'authorization.validBefore may be at most 360 s from now (maxTimeoutSeconds)',
      );
    });

    test('authorization_expired: validBefore has passed', async () => {
      const pay = await h.xPayment(payer, { value: 5_000_000n, validBefore: BigInt(Math.floor(Date.now() / 1000) - 1) });
      await expectRejected(await h.post({}, pay.header), 400, 'authorization_expired', 'authorization.validBefore has passed');
    });

    test('amount_mismatch: body amount differs from authorization.value', async () => {
      const pay = await h.xPayment(payer, { value: 5_000_000n });
      await expectRejected(
        await h.post({ amount: '4000000' }, pay.header),
        400,
        'amount_mismatch',
        'amount 4000000 differs from authorization.value 5000000',
      );
    });

    test('amount_too_low / amount_too_high: outside the source bounds', async () => {
      const low = await h.xPayment(payer, { value: 1_013_038n });
      const res = await h.post({}, low.header);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        success: false,
        errorReason: 'amount_too_low',
        error: 'amount is below the minimum of this source',
        minAmount: '1013039',
        maxAmount: '1003019057',
      });
      const high = await h.xPayment(payer, { value: 10_000_000_001n });
      const res2 = await h.post({}, high.header);
      expect(res2.status).toBe(400);
      expect(res2.body).toEqual({
        success: false,
        errorReason: 'amount_too_high',
        error: 'amount is above the maximum of a top-up',
        minAmount: '1013039',
        maxAmount: '1003019057',
      });
    });

    test('credit_limit_reached: the net would exceed the buyer credit limit', async () => {
      const limited = await h.freshPayer(20_000_000n);
      await h.setCreditLimit(limited.address, 3_000_000n);
      const pay = await h.xPayment(limited, { value: 5_000_000n });
      const res = await h.post({}, pay.header);
      expect(res.status).toBe(409);
      // 3 USDC of headroom: the largest gross crediting <= 3,000,000 is 3,019,057 (net exactly 3,000,000).
      expect(res.body).toEqual({
        success: false,
        errorReason: 'credit_limit_reached',
        error: "the amount would exceed the buyer's credit limit on the merchant contract",
        minAmount: '1013039',
        maxAmount: '3019057',
      });
      expect(net(3_019_057n)).toBe(3_000_000n);
      expect(net(3_019_058n)).toBe(3_000_001n);
    });

    test('authorization_reused: the nonce was already used on chain', async () => {
      // The funder submits its own authorization directly to the token (it has gas), so the nonce is spent.
      const funder = TEST_ACCOUNTS.buyers[0];
      const pay = await h.xPayment(funder, { value: 2_000_000n });
      const a = pay.payload.payload.authorization;
      const hash = await h.walletOf(funder).writeContract({
        address: h.stack.usdc,
        abi: tokenAbi,
        functionName: 'transferWithAuthorization',
        args: [a.from, a.to, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce, pay.payload.payload.signature],
        chain: undefined,
        account: funder,
      });
      await waitForReceipt(h.chain, hash);
      await expectRejected(await h.post({}, pay.header), 409, 'authorization_reused', 'this authorization was already used');
    });

    test('no valid X-PAYMENT: 402 with a fresh challenge', async () => {
      const res = await h.post({}, Buffer.from('{"x402Version":1}').toString('base64'));
      expect(res.status).toBe(402);
      expect(res.body).toMatchObject({
        x402Version: 1,
        error: 'X-PAYMENT is not a base64 x402 v1 exact EVM payment payload',
        accepts: [requirement('1003019057')],
      });
    });

    test('malformed body: 400 invalid_request in the top-up shape', async () => {
      const bad = await h.post({ buyer: 'nope' });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ success: false, errorReason: 'invalid_request', error: expect.stringMatching(/^invalid body: buyer/) });
      const notJson = await request('POST', `${h.url}/v1/demo-merchant/topups`, {
        body: '{',
        headers: { 'content-type': 'application/json' },
      });
      expect(notJson).toMatchObject({
        status: 400,
        body: { success: false, errorReason: 'invalid_request', error: 'malformed JSON body' },
      });
    });
  });

  test('a settlement that fails for the payer: 402 with a fresh challenge, the same answer on replay', async () => {
    const broke = await h.freshPayer(0n); // no USDC at all
    const pay = await h.xPayment(broke, { value: 5_000_000n });
    const res = await h.post({}, pay.header);
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({
      x402Version: 1,
      error: 'settlement rejected: insufficient_funds',
      accepts: [requirement('1003019057')],
      topupId: topupWorkflowId('demo-merchant', broke.address, pay.nonce),
      errorReason: 'insufficient_funds',
    });
    const again = await h.post({}, pay.header);
    expect(again.status).toBe(402);
    expect(again.body).toEqual(res.body);
    expect(await h.merchantBalance(broke.address)).toBe(0n);
  });

  test('payer-commitment-v1: a payer credits another buyer', async () => {
    const payer = await h.freshPayer(10_000_000n);
    const buyer = (await h.freshPayer(0n)).address;
    const salt = `0x${randomBytes(32).toString('hex')}` as Hex;
    const nonce = payerCommitmentNonce({
      merchantId: 'demo-merchant',
      sourceChainId: 8453,
      destinationChainId: 8453,
      creditedRecipient: DEVNET_MERCHANT_ADDRESS,
      payer: payer.address,
      buyer,
      salt,
    });
    const pay = await h.xPayment(payer, { value: 3_000_000n, nonce });
    const res = await h.post({ buyer, payerCommitment: { version: 'payer-commitment-v1', salt } }, pay.header);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      state: 'deposited',
      buyer,
      payer: payer.address,
      grossAmount: '3000000',
      netAmount: net(3_000_000n).toString(),
    });
    expect(await h.merchantBalance(buyer)).toBe(net(3_000_000n));
    expect(await h.merchantBalance(payer.address)).toBe(0n);
  });
  test('a replayed X-PAYMENT storm: 20 identical requests, one settlement, one deposit, one record', async () => {
    const payer = await h.freshPayer(10_000_000n);
    const pay = await h.xPayment(payer, { value: 4_000_000n });
    const before = await h.usdcOf(payer.address);
    const answers = await Promise.all(Array.from({ length: 20 }, () => h.post({}, pay.header)));
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
    for (const r of answers) expect(r.body).toEqual(answers[0].body);
    expect(answers[0].body).toMatchObject({ state: 'deposited', grossAmount: '4000000', netAmount: net(4_000_000n).toString() });
    // A late repeat and the status endpoint give the same top-up.
    expect((await h.post({}, pay.header)).body).toEqual(answers[0].body);
    expect((await h.get(`/v1/demo-merchant/topups/${answers[0].body.topupId}`, { as: payer })).body).toEqual(answers[0].body);

    expect(await h.usdcOf(payer.address)).toBe(before - 4_000_000n);
    expect(await h.depositedEvents(payer.address)).toEqual([net(4_000_000n)]);
    expect(await h.merchantBalance(payer.address)).toBe(net(4_000_000n));
    const logs = await h.chain.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    const settled = parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'Settled' }).filter((l) => l.args.nonce === pay.nonce);
    expect(settled).toHaveLength(1);
    // One settle and one deposit transaction (the relayer's first top-up also approves the merchant once).
    const ids = (await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `%${pay.nonce}%` } })).map((r) =>
      r.id.replace(/^.*:/, ''),
    );
    expect(ids.filter((id) => id !== 'approve').sort()).toEqual(['deposit', 'settle']);
    expect(await h.tdb.db.em.fork().count(TopUp, { payer: payer.address.toLowerCase() })).toBe(1);
  });

  test('two top-ups racing for the last headroom: one deposits, the other is refunded on base (409 deposit_failed)', async () => {
    const payer = await h.freshPayer(20_000_000n);
    // 6 USDC of credit: each top-up (net 4.975 USDC) fits alone, not both.
    await h.setCreditLimit(payer.address, 6_000_000n);
    const [p1, p2] = [await h.xPayment(payer, { value: 5_000_000n }), await h.xPayment(payer, { value: 5_000_000n })];
    const before = await h.usdcOf(payer.address);
    const allowanceBefore = await merchantAllowance();
    const ids = [p1, p2].map((p) => topupWorkflowId('demo-merchant', payer.address, p.nonce));
    const rpcUrl = h.stack.chains.base.rpcUrl;
    // Hold the chain until both requests passed the gateway's checks (both see 6 USDC of headroom).
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const inFlight = Promise.all([h.post({}, p1.header), h.post({}, p2.header)]);
    try {
      await waitUntil('both top-ups accepted', async () => (await h.rows(ids)).length === 2, { timeoutMs: 30_000, intervalMs: 50 });
    } finally {
      await rpc(rpcUrl, 'evm_setAutomine', [true]);
      await rpc(rpcUrl, 'evm_mine', []);
    }
    const answers = await inFlight;
    const ok = answers.find((r) => r.status === 200)!;
    const refunded = answers.find((r) => r.status === 409)!;
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(ok.body).toMatchObject({ state: 'deposited', netAmount: '4975000', refundTx: null });
    expect(refunded.body).toEqual({
      success: false,
      topupId: expect.any(String),
      state: 'refunded',
      buyer: payer.address,
      payer: payer.address,
      network: 'base',
      sourceNetwork: 'base',
      grossAmount: '5000000',
      netAmount: '4975000',
      settlementTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      fillTx: null,
      depositTx: null,
      refundTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      error: expect.stringMatching(
        /^deposit failed \((CreditLimitExceeded|deposit 0x[0-9a-f]{64} reverted)\); the delivered amount was refunded to the payer$/,
      ),
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
      errorReason: 'deposit_failed',
    });
    // On chain: one deposit; the payer paid 10 USDC and got the refused top-up's 4.975 USDC back.
    expect(await h.depositedEvents(payer.address)).toEqual([4_975_000n]);
    expect(await h.merchantBalance(payer.address)).toBe(4_975_000n);
    expect(await h.usdcOf(payer.address)).toBe(before - 10_000_000n + 4_975_000n);
    const refundReceipt = await h.chain.getTransactionReceipt({ hash: refunded.body.refundTx });
    expect(refundReceipt.status).toBe('success');
    // docs/security.md "Allowances are exact": each top-up raised the allowance by its own net, the
    // deposit spent its own, and the failed deposit left its own net approved: no more, no less.
    expect(await merchantAllowance()).toBe(allowanceBefore + 4_975_000n);
    // Replaying the refused payment returns the same refunded top-up, never a second charge.
    const replay = await h.post({}, refunded.body.topupId === ids[0] ? p1.header : p2.header);
    expect(replay).toMatchObject({ status: 409, body: refunded.body });

    // The refund is what the records say, whatever a workflow input claims (issue 12): the refused
    // top-up is owed its delivered amount; the deposited one nothing; a run under another id nothing.
    const relayerAccount = privateKeyToAccount(TEST_ACCOUNTS.relayerKeys[0]);
    const networks = buildNetworkTable(h.tdb.config.env);
    const relayer = new Relayer(networks.get('base')!, relayerAccount, h.tdb.db);
    const inputOf = async (id: string) => {
      const first = (await h.temporal.workflow.getHandle(id).fetchHistory()).events![0];
      return defaultPayloadConverter.fromPayload<TopUpInput>(first.workflowExecutionStartedEventAttributes!.input!.payloads![0] as Payload);
    };
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const refusedInput = { ...(await inputOf(refunded.body.topupId)), payer: thief, netAmount: '999000000' };
    await expect(refundOwed(h.tdb.db, networks, refusedInput, relayer)).resolves.toEqual({
      payee: payer.address.toLowerCase(),
      amount: 4_975_000n,
    });
    await expect(refundOwed(h.tdb.db, networks, { ...(await inputOf(ok.body.topupId)), payer: thief }, relayer)).rejects.toMatchObject({
      type: 'RefundNotOwed',
      message: expect.stringContaining('its deposit succeeded'),
    });
    await expect(
      refundOwed(h.tdb.db, networks, { ...refusedInput, workflowId: `${refunded.body.topupId}-forged` }, relayer),
    ).rejects.toMatchObject({
      type: 'RefundNotOwed',
      message: expect.stringContaining('it is not the top-up of this authorization'),
    });
  });

  test('x402 v2: PAYMENT-REQUIRED on the 402; @x402/fetch 2.x pays with PAYMENT-SIGNATURE and gets PAYMENT-RESPONSE (issue 13)', async () => {
    const payer = await h.freshPayer(10_000_000n);
    const bare = await fetch(`${h.url}/v1/demo-merchant/topups`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '2500000' }),
    });
    expect(bare.status).toBe(402);
    const required = JSON.parse(Buffer.from(bare.headers.get('payment-required')!, 'base64').toString('utf8'));
    const v1 = (await bare.json()) as { accepts: { network: string; asset: string; maxAmountRequired: string; payTo: string }[] };
    expect(required).toMatchObject({ x402Version: 2, error: 'X-PAYMENT header is required' });
    expect(required.accepts).toHaveLength(v1.accepts.length);
    const onBase = required.accepts.find((a: { network: string }) => a.network === 'eip155:8453');
    const v1Base = v1.accepts.find((a) => a.network === 'base')!;
    expect(onBase).toMatchObject({ scheme: 'exact', asset: v1Base.asset, amount: v1Base.maxAmountRequired, payTo: v1Base.payTo });

    const { pay, sent } = v2Payer(payer, 'eip155:8453', v1Base.asset as Address);
    const res = await pay(`${h.url}/v1/demo-merchant/topups`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '2500000' }),
    });
    expect(res.status).toBe(200);
    expect(sent).toHaveLength(1);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({
      success: true,
      state: 'deposited',
      payer: payer.address,
      grossAmount: '2500000',
      netAmount: net(2_500_000n).toString(),
    });
    expect(decodePaymentResponseHeader(res.headers.get('payment-response')!)).toMatchObject({
      success: true,
      transaction: body.settlementTx,
      network: 'eip155:8453',
    });
    expect(await h.merchantBalance(payer.address)).toBe(net(2_500_000n));
  });

  test('x402-fetch (v1 client) pays the 402 challenge with a viem account and gets the deposited top-up', async () => {
    const payer = await h.freshPayer(10_000_000n);
    // Chain id 8453: the client derives it from the requirement's network name `base`.
    const chain = {
      id: 8453,
      name: 'Base',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [h.stack.chains.base.rpcUrl] } },
    } as const;
    const wallet = createWalletClient({ account: payer, chain, transport: http(h.stack.chains.base.rpcUrl) });
    const fetchWithPay = wrapFetchWithPayment(fetch, wallet, 3_000_000n);
    const res = await fetchWithPay(`${h.url}/v1/demo-merchant/topups`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '2500000' }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({
      success: true,
      state: 'deposited',
      buyer: payer.address,
      payer: payer.address,
      grossAmount: '2500000',
      netAmount: net(2_500_000n).toString(),
    });
    expect(decodeXPaymentResponse(res.headers.get('x-payment-response')!)).toEqual({
      success: true,
      transaction: body.settlementTx,
      network: 'base',
      payer: payer.address,
    });
    expect(await h.merchantBalance(payer.address)).toBe(net(2_500_000n));
  });
});
