import type { Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { waitUntil } from '../../devnet/process';
import { Settlement } from '../../src/db/entities';
import { TEST_ACCOUNTS } from '../support/accounts';
import { DB_KINDS } from '../support/db';
import { request, signIn } from '../support/http';
import type { ExactPaymentOptions } from '../support/payments';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/** POST /v1/settle on the real stack: Temporal dev server, anvil with our contracts, real DB, real HTTP. */
describe.each(DB_KINDS)('POST /v1/settle, EIP-3009 same-chain (%s)', (kind) => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[kind === 'sqlite' ? 0 : 1];

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 0, platformFeeBps: 250 });
  });
  afterAll(async () => {
    await h?.close();
  });

  const pay = (o: Partial<ExactPaymentOptions> = {}) => h.pay(buyer, o);

  test('settles a payment: exact response, payout minus platform fee, one on-chain transfer, recorded', async () => {
    const body = await pay({ value: 2_000_000n });
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const [buyerBefore, payoutBefore, feeBefore] = await Promise.all([
      h.balanceOf(buyer.address),
      h.balanceOf(h.payout),
      h.balanceOf(h.feeRecipient),
    ]);

    const res = await h.settle(body);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: buyer.address,
    });
    const receipt = await h.chain.getTransactionReceipt({ hash: res.body.transaction });
    expect(receipt.status).toBe('success');
    expect(receipt.to?.toLowerCase()).toBe(h.stack.facilitator.toLowerCase());
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 2_000_000n);
    expect(await h.balanceOf(h.payout)).toBe(payoutBefore + 1_950_000n); // 2.5 % platform fee
    expect(await h.balanceOf(h.feeRecipient)).toBe(feeBefore + 50_000n);
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);

    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: `settle:base-sepolia:${buyer.address.toLowerCase()}:${nonce}` });
    expect(row).toMatchObject({
      route: 'eip3009',
      network: 'base-sepolia',
      payer: buyer.address.toLowerCase(),
      recipient: h.payout.toLowerCase(),
      amount: '2000000',
      fee: '50000',
      transaction: res.body.transaction,
      state: 'settled',
      errorReason: null,
    });
    expect(JSON.parse(row.response!)).toEqual(res.body);

    // Operators find it in Temporal by our search attributes; the request id is in the memo.
    const workflowId = row.id;
    const query = `WorkflowId="${workflowId}" AND X402Kind="settle" AND X402State="settled" AND X402Network="base-sepolia" AND X402Payer="${buyer.address.toLowerCase()}"`;
    const found = await waitUntil(
      'the workflow to be visible by its search attributes',
      async () => {
        for await (const wf of h.temporal.workflow.list({ query })) return wf;
        return undefined;
      },
      { timeoutMs: 15_000, intervalMs: 200 },
    );
    expect(found.workflowId).toBe(workflowId);
    expect(found.memo).toEqual({ requestId: res.headers.get('x-request-id') });

    // The same authorization later: same answer, no second transfer.
    const again = await h.settle(body);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(res.body);
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 2_000_000n);
  });

  test('50 concurrent identical requests: exactly one transfer and identical bodies', async () => {
    const body = await pay({ value: 1_234_567n });
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const before = await h.balanceOf(buyer.address);

    const replies = await Promise.all(Array.from({ length: 50 }, () => h.settle(body)));

    expect(new Set(replies.map((r) => r.status))).toEqual(new Set([200]));
    const first = JSON.stringify(replies[0].body);
    expect(replies.every((r) => JSON.stringify(r.body) === first)).toBe(true);
    expect(replies[0].body.success).toBe(true);
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(before - 1_234_567n);
  });

  test('another organization cannot claim an authorization settled for this one', async () => {
    const body = await pay({ value: 10n });
    const ours = await h.settle(body);
    expect(ours.status).toBe(200);
    const other = privateKeyToAccount(generatePrivateKey());
    const cookie = await signIn(h.api.baseUrl, other);
    await request('PATCH', `${h.api.baseUrl}/v1/organization`, { cookie, json: { payoutWalletTest: other.address } });
    const key = await request('POST', `${h.api.baseUrl}/v1/api_keys`, { cookie, json: { name: 'other seller', test_net: true } });
    const theirs = await h.settle(body, { authorization: `Bearer ${key.body.api_key}` });
    expect({ status: theirs.status, body: theirs.body }).toEqual({
      status: 409,
      body: { success: false, errorReason: 'invalid_transaction_state', transaction: '', network: 'base-sepolia', payer: buyer.address },
    });
    expect(await h.balanceOf(other.address)).toBe(0n);
  });

  test('a payer with no funds gets insufficient_funds and nothing is sent', async () => {
    const poor = privateKeyToAccount(generatePrivateKey());
    const body = await h.pay(poor);
    const res = await h.settle(body);
    expect(res.status).toBe(402);
    expect(res.body).toEqual({
      success: false,
      errorReason: 'insufficient_funds',
      transaction: '',
      network: 'base-sepolia',
      payer: poor.address,
    });
  });
});
