import { randomBytes } from 'node:crypto';
import { createWalletClient, http, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { ApiKey } from '../../src/db/entities';
import { SETTLEMENT_REJECTED } from '../../src/settle/types';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { fastSettlementWorkflow } from '../../workflows/settlement';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import type { ExactPaymentOptions } from '../support/payments';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * Every way POST /v1/settle refuses a payment, on the real stack: the exact status and body, and
 * that no money moved.
 */
describe.each(oneDbKind('sqlite'))('POST /v1/settle rejections (%s)', (kind) => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[2];
  const stranger = privateKeyToAccount(generatePrivateKey());
  const now = () => BigInt(Math.floor(Date.now() / 1000));

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 1, env: { MIN_SETTLE_AMOUNT_BASE_SEPOLIA: '1000' } });
  });
  afterAll(async () => {
    await h?.close();
  });

  const pay = (o: Partial<ExactPaymentOptions> = {}) => h.pay(buyer, o);
  const rejected = (errorReason: string, network = 'base-sepolia', payer: string | null = buyer.address) => ({
    success: false,
    errorReason,
    transaction: '',
    network,
    ...(payer ? { payer } : {}),
  });

  /** Sends the body, checks the answer, and checks the buyer's balance did not move. */
  async function expectRejected(body: unknown, status: number, expected: object) {
    const before = await h.balanceOf(buyer.address);
    const res = await h.settle(body);
    expect({ status: res.status, body: res.body }).toEqual({ status, body: expected });
    expect(await h.balanceOf(buyer.address)).toBe(before);
  }

  test.each([
    ['payTo is not the facilitator', { payTo: '0x000000000000000000000000000000000000dEaD' }],
    ['authorization.to is not the facilitator', { to: '0x000000000000000000000000000000000000dEaD' }],
  ])('%s -> invalid_exact_evm_payload_recipient_mismatch', async (_, o) => {
    await expectRejected(await pay(o as never), 400, rejected('invalid_exact_evm_payload_recipient_mismatch'));
  });

  test('an asset other than the network USDC -> invalid_exact_evm_payload_asset_mismatch', async () => {
    await expectRejected(
      await pay({ asset: '0x000000000000000000000000000000000000bEEF' }),
      400,
      rejected('invalid_exact_evm_payload_asset_mismatch'),
    );
  });

  test('a payment to oneself (the payout is the payer) -> invalid_payment_requirements, before any workflow (issue 39)', async () => {
    const self = await pay({ extra: { name: 'USDC', version: '2', creditedRecipient: buyer.address } });
    await expectRejected(self, 400, {
      ...rejected('invalid_payment_requirements'),
      errorMessage: 'the payer is the payout wallet: a self-payment is refused',
    });
  });

  test('signed by someone else -> invalid_exact_evm_payload_signature', async () => {
    await expectRejected(await pay({ signer: stranger }), 400, rejected('invalid_exact_evm_payload_signature'));
  });

  test('signed for another token domain version -> invalid_exact_evm_payload_signature', async () => {
    const body = await pay();
    body.paymentRequirements.extra = { name: 'USDC', version: '1' };
    await expectRejected(body, 400, rejected('invalid_exact_evm_payload_signature'));
  });

  test('not yet valid -> invalid_exact_evm_payload_authorization_valid_after', async () => {
    await expectRejected(
      await pay({ validAfter: now() + 3600n, validBefore: now() + 7200n }),
      400,
      rejected('invalid_exact_evm_payload_authorization_valid_after'),
    );
  });

  test('expiring within the minimum validity -> invalid_exact_evm_payload_authorization_valid_before', async () => {
    await expectRejected(await pay({ validBefore: now() + 2n }), 400, rejected('invalid_exact_evm_payload_authorization_valid_before'));
  });

  test('valid longer than maxTimeoutSeconds (+60 s for clocks) -> invalid_exact_evm_payload_authorization_valid_before', async () => {
    // The requirements say 300 s: 360 s is the most a buyer's clock may add.
    await expectRejected(
      await pay({ validBefore: now() + 300n + 120n }),
      400,
      rejected('invalid_exact_evm_payload_authorization_valid_before'),
    );
    const res = await h.settleUntilFinal(await pay({ validBefore: now() + 300n + 50n }));
    expect([res.status, res.body.success]).toEqual([200, true]);
  });

  test('value differs from maxAmountRequired -> invalid_exact_evm_payload_authorization_value', async () => {
    await expectRejected(
      await pay({ value: 1_000_000n, maxAmountRequired: 2_000_000n }),
      400,
      rejected('invalid_exact_evm_payload_authorization_value'),
    );
  });

  test('more than the balance -> insufficient_funds (402)', async () => {
    const balance = await h.balanceOf(buyer.address);
    await expectRejected(await pay({ value: balance + 1n }), 402, rejected('insufficient_funds'));
  });

  test('nonce already used on-chain -> invalid_exact_evm_payload_authorization_nonce_used (409)', async () => {
    // The buyer cancels the authorization on the token itself by spending its nonce elsewhere.
    const nonce = `0x${randomBytes(32).toString('hex')}` as Hex;
    const spent = await pay({ nonce, value: 1n });
    const a = spent.paymentPayload.payload.authorization;
    const wallet = createWalletClient({ account: buyer, transport: http(h.stack.chains['base-sepolia'].rpcUrl) });
    const hash = await wallet.writeContract({
      chain: null,
      address: h.stack.usdc,
      abi: tokenAbi,
      functionName: 'transferWithAuthorization',
      args: [a.from, a.to, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), nonce, spent.paymentPayload.payload.signature],
    });
    await h.chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    await expectRejected(await pay({ nonce }), 409, rejected('invalid_exact_evm_payload_authorization_nonce_used'));
  });

  test('less than the network minimum (MIN_SETTLE_AMOUNT_BASE_SEPOLIA) -> amount_too_low, on settle and verify', async () => {
    const body = await pay({ value: 999n });
    await expectRejected(body, 400, rejected('amount_too_low', 'base-sepolia', null));
    const verified = await request('POST', `${h.api.baseUrl}/v1/verify`, { json: body, headers: { authorization: `Bearer ${h.apiKey}` } });
    expect([verified.status, verified.body.isValid, verified.body.invalidReason]).toEqual([200, false, 'amount_too_low']);
  });

  test('exactly the network minimum settles', async () => {
    const before = await h.balanceOf(buyer.address);
    const res = await h.settleUntilFinal(await pay({ value: 1000n }));
    expect([res.status, res.body.success]).toEqual([200, true]);
    expect(await h.balanceOf(buyer.address)).toBe(before - 1000n);
  });

  test('a settlement workflow started by hand on a mainnet while MAINNETS_ENABLED is off is rejected by the worker', async () => {
    const body = await pay();
    const res = await h.settleUntilFinal(body);
    expect(res.body.success).toBe(true);
    const a = body.paymentPayload.payload.authorization;
    const started = (await h.temporal.workflow.getHandle(settleWorkflowId('base-sepolia', a.from, a.nonce)).fetchHistory()).events![0];
    const input = defaultPayloadConverter.fromPayload<Record<string, unknown>>(
      started.workflowExecutionStartedEventAttributes!.input!.payloads![0] as Payload,
    );
    const forged = { ...input, network: 'base', workflowId: `settle:base:${a.from.toLowerCase()}:${a.nonce}` };
    const run = h.temporal.workflow.execute(fastSettlementWorkflow, {
      workflowId: forged.workflowId,
      taskQueue: h.tdb.config.TEMPORAL_TASK_QUEUE,
      args: [forged as never],
    });
    await expect(run).rejects.toMatchObject({
      cause: { type: SETTLEMENT_REJECTED, details: [expect.objectContaining({ errorReason: 'invalid_network' })] },
    });
  });

  test('a network that is not enabled -> invalid_network', async () => {
    await expectRejected(await pay({ network: 'arc-testnet' }), 400, rejected('invalid_network', 'arc-testnet'));
  });

  test('an unknown network -> invalid_network', async () => {
    await expectRejected(await pay({ network: 'atlantis' }), 400, rejected('invalid_network', 'atlantis'));
  });

  test('payload and requirements name different networks -> invalid_network', async () => {
    const body = await pay();
    body.paymentRequirements.network = 'optimism-sepolia';
    await expectRejected(body, 400, rejected('invalid_network'));
  });

  test('requirements without the token domain (extra) -> invalid_payment_requirements', async () => {
    const body = await pay();
    delete (body.paymentRequirements as { extra?: unknown }).extra;
    await expectRejected(body, 400, rejected('invalid_payment_requirements'));
  });

  test('malformed payload and requirements -> invalid_payload / invalid_payment_requirements', async () => {
    const body = await pay();
    const badNonce = structuredClone(body);
    badNonce.paymentPayload.payload.authorization.nonce = '0x1234';
    await expectRejected(badNonce, 400, rejected('invalid_payload', 'base-sepolia', null));
    const badAmount = structuredClone(body);
    badAmount.paymentRequirements.maxAmountRequired = '1.5';
    await expectRejected(badAmount, 400, rejected('invalid_payment_requirements', 'base-sepolia', null));
    await expectRejected({ paymentPayload: 42 }, 400, rejected('invalid_payload', '', null));
    await expectRejected([], 400, rejected('invalid_payload', '', null));
  });

  test('a rejected authorization can be settled once the problem is fixed (nothing was sent)', async () => {
    const poorBuyer = privateKeyToAccount(generatePrivateKey());
    const nonce = `0x${randomBytes(32).toString('hex')}` as Hex;
    const body = await h.pay(poorBuyer, { value: 5000n, nonce });
    const first = await h.settle(body);
    expect(first.body).toEqual(rejected('insufficient_funds', 'base-sepolia', poorBuyer.address));
    // Fund the buyer, then the very same authorization settles.
    const funder = createWalletClient({ account: buyer, transport: http(h.stack.chains['base-sepolia'].rpcUrl) });
    const hash = await funder.writeContract({
      chain: null,
      address: h.stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [poorBuyer.address, 5000n],
    });
    await h.chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    const second = await h.settle(body);
    expect(second.status).toBe(200);
    expect(second.body.success).toBe(true);
    expect(await h.settledEvents(poorBuyer.address, nonce)).toBe(1);
  });

  describe('bodies', () => {
    const raw = (body: string, contentType = 'application/json') =>
      request('POST', `${h.api.baseUrl}/v1/settle`, {
        body,
        headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': contentType },
      });

    test('malformed JSON -> 400 in the settle shape', async () => {
      const res = await raw('{"paymentPayload": ');
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: rejected('invalid_payload', '', null) });
    });

    test('a 2 MB body -> 413 in the settle shape', async () => {
      const res = await raw(JSON.stringify({ paymentPayload: { pad: 'x'.repeat(2 * 1024 * 1024) } }));
      expect({ status: res.status, body: res.body }).toEqual({ status: 413, body: rejected('invalid_payload', '', null) });
    });

    test('a non-JSON content type -> 415 in the settle shape', async () => {
      const res = await raw('paymentPayload=1', 'application/x-www-form-urlencoded');
      expect({ status: res.status, body: res.body }).toEqual({ status: 415, body: rejected('invalid_payload', '', null) });
    });
  });

  describe('API keys on settle', () => {
    test('missing, malformed and unknown keys -> 401 envelope', async () => {
      const body = await pay();
      for (const authorization of [undefined, 'Basic abc', `Bearer pk_test_${'0'.repeat(64)}`, 'Bearer sk_test_abc']) {
        const res = await request('POST', `${h.api.baseUrl}/v1/settle`, { json: body, headers: authorization ? { authorization } : {} });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ type: 'api_error', code: 401, message: expect.any(String) });
      }
    });

    test('a revoked key -> 403 envelope', async () => {
      const created = await request('POST', `${h.api.baseUrl}/v1/api_keys`, {
        cookie: h.cookie,
        json: { name: 'to revoke', test_net: true },
      });
      const del = await request('DELETE', `${h.api.baseUrl}/v1/api_keys/${created.body.id}`, { cookie: h.cookie });
      expect(del.status).toBe(200);
      const res = await h.settle(await pay(), { authorization: `Bearer ${created.body.api_key}` });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 403,
        body: { type: 'api_error', code: 403, message: 'API key revoked' },
      });
    });

    test('a key created with expires_in_days works until then, and past it -> 403 "API key expired" (issue 14)', async () => {
      const created = await request('POST', `${h.api.baseUrl}/v1/api_keys`, {
        cookie: h.cookie,
        json: { name: 'expiring', test_net: true, expires_in_days: 30 },
      });
      expect(created.status).toBe(201);
      const expiresAt = Date.parse(created.body.expires_at);
      expect(Math.abs(expiresAt - (Date.parse(created.body.created_at) + 30 * 86_400_000))).toBeLessThan(1000);
      const listed = await request('GET', `${h.api.baseUrl}/v1/api_keys/${created.body.id}`, { cookie: h.cookie });
      expect(listed.body.expires_at).toBe(created.body.expires_at);
      const bearer = { authorization: `Bearer ${created.body.api_key}` };
      expect((await h.settle({}, bearer)).status).toBe(400); // authenticated, then refused for its body
      await h.tdb.db.em.fork().nativeUpdate(ApiKey, { id: created.body.id }, { expiresAt: new Date(Date.now() - 1000) });
      const res = await h.settle(await pay(), bearer);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 403,
        body: { type: 'api_error', code: 403, message: 'API key expired' },
      });
      const bad = await request('POST', `${h.api.baseUrl}/v1/api_keys`, {
        cookie: h.cookie,
        json: { name: 'x', test_net: true, expires_in_days: 0 },
      });
      expect(bad.status).toBe(400);
    });

    test('a test key on a mainnet network and a live key on a testnet -> 403 envelope', async () => {
      const onMainnet = await h.settle(await pay({ network: 'base' }));
      expect({ status: onMainnet.status, body: onMainnet.body }).toEqual({
        status: 403,
        body: { type: 'api_error', code: 403, message: 'test keys settle testnets only' },
      });
      const live = await request('POST', `${h.api.baseUrl}/v1/api_keys`, { cookie: h.cookie, json: { name: 'live', test_net: false } });
      const res = await h.settle(await pay(), { authorization: `Bearer ${live.body.api_key}` });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 403,
        body: { type: 'api_error', code: 403, message: 'live keys settle mainnets only' },
      });
    });

    test('last_used_at is recorded for the key that settled', async () => {
      const list = await request('GET', `${h.api.baseUrl}/v1/api_keys`, { cookie: h.cookie });
      const used = list.body.apiKeys.filter((k: { last_used_at: string | null }) => k.last_used_at !== null);
      expect(used.length).toBeGreaterThanOrEqual(1);
    });
  });
});
