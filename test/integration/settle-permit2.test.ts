import { createWalletClient, defineChain, http, maxUint256, parseEventLogs, type Address, type Hex, type LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import { fiatTokenAbi } from '../../devnet/usdc';
import {
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
} from '../../src/chains/devnet-addresses';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import { permit2SettleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { request, signIn } from '../support/http';
import { oneDbKind } from '../support/db';
import { waitForReceipt } from '../support/evm';
import { permit2612For, permit2Payment, randomPermit2Nonce, type Permit2PaymentOptions } from '../support/permit2-payments';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { facilitatorPermit2Abi, permit2Abi, tokenAbi } from '../../src/chains/evm/abi';

/**
 * POST /v1/settle, Permit2 route (exact and upto) on the real stack: buyers sign with viem as an
 * x402 client does, the facilitator contract pulls the payment through our Permit2 proxy and pays
 * the seller in one transaction.
 */
const permit2 = PERMIT2_CANONICAL_ADDRESS;
const usdcAbi = fiatTokenAbi();

function walletFor(h: SettleHarness, account: LocalAccount) {
  const { rpcUrl, chainId } = h.stack.chains['base-sepolia'];
  const chain = defineChain({
    id: chainId,
    name: 'base-sepolia',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  return createWalletClient({ account, chain, transport: http(rpcUrl) });
}

async function send(h: SettleHarness, account: LocalAccount, call: Parameters<ReturnType<typeof walletFor>['writeContract']>[0]) {
  const hash = await walletFor(h, account).writeContract(call);
  expect((await waitForReceipt(h.chain, hash)).status).toBe('success');
}

/** A Permit2 payment on base-sepolia from `buyer` to the harness's facilitator. */
const payWith = (h: SettleHarness, buyer: LocalAccount, o: Partial<Permit2PaymentOptions> = {}) =>
  permit2Payment({
    scheme: 'exact',
    buyer,
    network: 'base-sepolia',
    chainId: h.stack.chains['base-sepolia'].chainId,
    usdc: h.stack.usdc,
    facilitator: h.stack.facilitator,
    permit2,
    exactProxy: X402_EXACT_PERMIT2_PROXY_ADDRESS,
    uptoProxy: X402_UPTO_PERMIT2_PROXY_ADDRESS,
    ...o,
  });

/** Permit2Settled events of the facilitator for this owner and Permit2 nonce, over the whole chain. */
async function permit2SettledEvents(h: SettleHarness, owner: Address, nonce: bigint) {
  const logs = await h.chain.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
  return parseEventLogs({ abi: facilitatorPermit2Abi, logs, eventName: 'Permit2Settled' }).filter(
    (l) => l.args.owner.toLowerCase() === owner.toLowerCase() && l.args.nonce === nonce,
  );
}

const allowanceOf = (h: SettleHarness, owner: Address) =>
  h.chain.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'allowance', args: [owner, permit2] });

describe('POST /v1/settle, Permit2 exact and upto (sqlite)', () => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[4];

  beforeAll(async () => {
    h = await startSettleHarness('sqlite', { relayerIndex: 1, platformFeeBps: 250 });
    // The buyer's one-time Permit2 approval, as a Permit2 wallet makes it.
    await send(h, buyer, { address: h.stack.usdc, abi: usdcAbi, functionName: 'approve', args: [permit2, maxUint256] } as never);
  });
  afterAll(async () => {
    await h?.close();
  });

  const pay = (o: Partial<Permit2PaymentOptions> = {}) => payWith(h, buyer, o);
  const nonceOf = (body: Awaited<ReturnType<typeof pay>>) => BigInt(body.paymentPayload.payload.permit.nonce);
  const balances = () =>
    Promise.all([h.balanceOf(buyer.address), h.balanceOf(h.payout), h.balanceOf(h.feeRecipient), h.balanceOf(h.stack.facilitator)]);

  test('exact: settles the signed amount, pays out minus the platform fee in one transaction, records it; a repeat moves nothing', async () => {
    const body = await pay({ amount: 2_000_000n });
    const nonce = nonceOf(body);
    const [buyerBefore, payoutBefore, feeBefore, facilitatorBefore] = await balances();

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
    expect(await balances()).toEqual([buyerBefore - 2_000_000n, payoutBefore + 1_950_000n, feeBefore + 50_000n, facilitatorBefore]);
    const events = await permit2SettledEvents(h, buyer.address, nonce);
    expect(events.map((e) => e.args)).toEqual([
      {
        token: h.stack.usdc,
        owner: buyer.address,
        nonce,
        proxy: X402_EXACT_PERMIT2_PROXY_ADDRESS,
        payout: expect.any(String),
        amount: 2_000_000n,
        fee: 50_000n,
      },
    ]);
    expect(events[0]!.args.payout.toLowerCase()).toBe(h.payout.toLowerCase());

    const workflowId = permit2SettleWorkflowId('base-sepolia', buyer.address, nonce.toString());
    expect(workflowId).toBe(`settle:base-sepolia:${buyer.address.toLowerCase()}:${nonce}`);
    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: workflowId });
    expect(row).toMatchObject({
      route: 'permit2',
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

    // The same payload again: the same answer, no second transfer.
    const repeat = await h.settle(body);
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: res.body });
    expect(await balances()).toEqual([buyerBefore - 2_000_000n, payoutBefore + 1_950_000n, feeBefore + 50_000n, facilitatorBefore]);
    expect(await permit2SettledEvents(h, buyer.address, nonce)).toHaveLength(1);
  });

  test('upto: settles extra.settleAmount below the signed maximum; the response states the amount', async () => {
    const body = await pay({ scheme: 'upto', amount: 5_000_000n, settleAmount: 1_200_000n });
    const [buyerBefore, payoutBefore, feeBefore] = await balances();

    const res = await h.settle(body);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: buyer.address,
      amount: '1200000',
    });
    const [buyerAfter, payoutAfter, feeAfter] = await balances();
    expect([buyerAfter, payoutAfter, feeAfter]).toEqual([buyerBefore - 1_200_000n, payoutBefore + 1_170_000n, feeBefore + 30_000n]);
    const events = await permit2SettledEvents(h, buyer.address, nonceOf(body));
    expect(events.map((e) => [e.args.proxy, e.args.amount, e.args.fee])).toEqual([[X402_UPTO_PERMIT2_PROXY_ADDRESS, 1_200_000n, 30_000n]]);
    const row = await h.tdb.db.em
      .fork()
      .findOneOrFail(Settlement, { id: permit2SettleWorkflowId('base-sepolia', buyer.address, nonceOf(body).toString()) });
    expect(row).toMatchObject({ route: 'permit2', amount: '1200000', fee: '30000', state: 'settled' });
  });

  test('upto without settleAmount settles the full signed maximum', async () => {
    const body = await pay({ scheme: 'upto', amount: 800_000n });
    const [buyerBefore, payoutBefore] = await balances();
    const res = await h.settle(body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, amount: '800000' });
    const [buyerAfter, payoutAfter] = await balances();
    expect([buyerAfter, payoutAfter]).toEqual([buyerBefore - 800_000n, payoutBefore + 780_000n]);
  });

  test('20 concurrent identical upto requests: one transfer of settleAmount, identical bodies', async () => {
    const body = await pay({ scheme: 'upto', amount: 3_000_000n, settleAmount: 1_234_567n });
    const before = await h.balanceOf(buyer.address);
    const replies = await Promise.all(Array.from({ length: 20 }, () => h.settle(body)));
    expect(new Set(replies.map((r) => r.status))).toEqual(new Set([200]));
    expect(new Set(replies.map((r) => JSON.stringify(r.body))).size).toBe(1);
    expect(replies[0]!.body).toMatchObject({ success: true, amount: '1234567' });
    expect(await permit2SettledEvents(h, buyer.address, nonceOf(body))).toHaveLength(1);
    expect(await h.balanceOf(buyer.address)).toBe(before - 1_234_567n);
  });

  test('another organization cannot claim a Permit2 payment settled for this one', async () => {
    const body = await pay({ amount: 10n });
    expect((await h.settle(body)).status).toBe(200);
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

  test('permit2612: a buyer without a Permit2 allowance pays with the token permit applied in the same transaction', async () => {
    const fresh = privateKeyToAccount(generatePrivateKey());
    await send(h, buyer, { address: h.stack.usdc, abi: usdcAbi, functionName: 'transfer', args: [fresh.address, 3_000_000n] } as never);
    expect(await allowanceOf(h, fresh.address)).toBe(0n);
    const { chainId } = h.stack.chains['base-sepolia'];
    const eip2612 = await permit2612For(fresh, { chainId, usdc: h.stack.usdc, permit2, value: 10_000_000n, nonce: 0n });

    // Without the permit: the allowance is missing.
    const bare = await payWith(h, fresh, { amount: 2_000_000n });
    const refused = await h.settle(bare);
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 402,
      body: { success: false, errorReason: 'permit2_allowance_required', transaction: '', network: 'base-sepolia', payer: fresh.address },
    });

    const body = await payWith(h, fresh, { amount: 2_000_000n, permit2612: eip2612 });
    const payoutBefore = await h.balanceOf(h.payout);
    const res = await h.settle(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: fresh.address,
    });
    expect(await h.balanceOf(fresh.address)).toBe(1_000_000n);
    expect(await h.balanceOf(h.payout)).toBe(payoutBefore + 1_950_000n);
    expect(await allowanceOf(h, fresh.address)).toBe(8_000_000n); // the permit's 10 USDC minus this payment

    // The allowance now exists, so a later payment carrying the (spent) permit still settles.
    const next = await h.settle(await payWith(h, fresh, { amount: 500_000n, permit2612: eip2612 }));
    expect(next.status).toBe(200);
    expect(await h.balanceOf(fresh.address)).toBe(500_000n);
  });

  describe('rejections: exact status and body, nothing moves', () => {
    const stranger = privateKeyToAccount(generatePrivateKey());
    type Case = [string, number, () => Promise<{ body: unknown; payer: Address }>];
    const as = (body: Promise<unknown>, payer: Address = buyer.address) => body.then((b) => ({ body: b, payer }));
    const cases: Case[] = [
      [
        'invalid_network',
        400,
        () => as(pay().then((b) => ({ ...b, paymentRequirements: { ...b.paymentRequirements, network: 'optimism-sepolia' } }))),
      ],
      ['invalid_scheme', 400, () => as(pay().then((b) => ({ ...b, paymentRequirements: { ...b.paymentRequirements, scheme: 'upto' } })))],
      ['invalid_permit2_recipient_mismatch', 400, () => as(pay({ witnessTo: stranger.address }))],
      ['invalid_permit2_recipient_mismatch', 400, () => as(pay({ payTo: stranger.address }))],
      ['upto_facilitator_mismatch', 400, () => as(pay({ scheme: 'upto', witnessFacilitator: stranger.address }))],
      ['permit2_token_mismatch', 400, () => as(pay({ asset: stranger.address }))],
      ['invalid_exact_evm_payload_amount_mismatch', 400, () => as(pay({ amount: 1_000_000n, maxAmountRequired: 2_000_000n }))],
      [
        'invalid_upto_evm_payload_settlement_exceeds_amount',
        400,
        () => as(pay({ scheme: 'upto', amount: 1_000_000n, settleAmount: 1_000_001n })),
      ],
      ['invalid_payment_requirements', 400, () => as(pay({ scheme: 'upto', settleAmount: 0n }))],
      ['invalid_payment_requirements', 400, () => as(pay({ scheme: 'exact', settleAmount: 500n }))],
      ['invalid_permit2_spender', 400, () => as(pay({ scheme: 'exact', spender: X402_UPTO_PERMIT2_PROXY_ADDRESS }))],
      ['invalid_permit2_spender', 400, () => as(pay({ scheme: 'upto', spender: X402_EXACT_PERMIT2_PROXY_ADDRESS }))],
      ['invalid_permit2_signature', 400, () => as(pay({ signer: stranger }))],
      ['permit2_deadline_expired', 400, () => as(pay({ deadline: BigInt(Math.floor(Date.now() / 1000)) + 2n }))],
      ['permit2_not_yet_valid', 400, () => as(pay({ validAfter: BigInt(Math.floor(Date.now() / 1000)) + 600n }))],
      ['insufficient_funds', 402, () => as(payWith(h, stranger, { amount: 1_000_000n }), stranger.address)],
      [
        'permit2_invalid_nonce',
        409,
        async () => {
          const nonce = randomPermit2Nonce();
          await send(h, buyer, {
            address: permit2,
            abi: permit2Abi,
            functionName: 'invalidateUnorderedNonces',
            args: [nonce >> 8n, 1n << (nonce & 255n)],
          } as never);
          return as(pay({ nonce }));
        },
      ],
    ];

    test.each(cases)('%s (%i)', async (reason, status, make) => {
      const { body, payer } = await make();
      const before = await Promise.all([h.balanceOf(buyer.address), h.balanceOf(h.payout), h.balanceOf(h.stack.facilitator)]);
      const res = await h.settle(body);
      expect({ status: res.status, body: res.body }).toEqual({
        status,
        body: { success: false, errorReason: reason, transaction: '', network: 'base-sepolia', payer },
      });
      expect(await Promise.all([h.balanceOf(buyer.address), h.balanceOf(h.payout), h.balanceOf(h.stack.facilitator)])).toEqual(before);
    });

    test('permit2612 problems: amount too small, signed by someone else, expired', async () => {
      const fresh = privateKeyToAccount(generatePrivateKey());
      await send(h, buyer, { address: h.stack.usdc, abi: usdcAbi, functionName: 'transfer', args: [fresh.address, 2_000_000n] } as never);
      const { chainId } = h.stack.chains['base-sepolia'];
      const base = { chainId, usdc: h.stack.usdc, permit2, nonce: 0n };
      const now = BigInt(Math.floor(Date.now() / 1000));
      for (const [reason, permit] of [
        ['permit2_2612_amount_mismatch', await permit2612For(fresh, { ...base, value: 999_999n })],
        ['invalid_permit2_2612_signature', await permit2612For(fresh, { ...base, value: 1_000_000n, signer: stranger })],
        ['invalid_permit2_2612_signature', await permit2612For(fresh, { ...base, value: 1_000_000n, nonce: 1n })],
        ['permit2_2612_deadline_expired', await permit2612For(fresh, { ...base, value: 1_000_000n, deadline: now - 1n })],
      ] as const) {
        const res = await h.settle(await payWith(h, fresh, { amount: 1_000_000n, permit2612: permit }));
        expect({ status: res.status, body: res.body }).toEqual({
          status: 400,
          body: { success: false, errorReason: reason, transaction: '', network: 'base-sepolia', payer: fresh.address },
        });
      }
      expect(await h.balanceOf(fresh.address)).toBe(2_000_000n);
      expect(await allowanceOf(h, fresh.address)).toBe(0n);
    });

    test('a malformed Permit2 payload is invalid_payload; a rejected payment may be retried once fixed', async () => {
      const body = await pay();
      const broken = { ...body, paymentPayload: { ...body.paymentPayload, payload: { ...body.paymentPayload.payload, owner: 'nope' } } };
      const res = await h.settle(broken);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { success: false, errorReason: 'invalid_payload', transaction: '', network: 'base-sepolia' },
      });

      // A payTo mismatch rejects before any transaction; the corrected request settles the same signature.
      const wrongPayTo = await h.settle({ ...body, paymentRequirements: { ...body.paymentRequirements, payTo: stranger.address } });
      expect(wrongPayTo.body.errorReason).toBe('invalid_permit2_recipient_mismatch');
      const fixed = await h.settle(body);
      expect(fixed.status).toBe(200);
      expect(fixed.body.success).toBe(true);
    });
  });
});

/**
 * Kill the worker after it broadcast the Permit2 settlement (chain paused), restart it: the payment
 * completes exactly once and every repeat gets the same final answer.
 */
describe.each(oneDbKind('sqlite'))('Permit2 settlement durability (%s)', (kind) => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[4];
  const relayer = TEST_ACCOUNTS.relayers[3];
  let rpcUrl: string;

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 3, env: { SETTLE_WAIT_MS: '1500', RECEIPT_WAIT_MS: '5000' } });
    rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
    await send(h, buyer, { address: h.stack.usdc, abi: usdcAbi, functionName: 'approve', args: [permit2, maxUint256] } as never);
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
  });

  test('upto: worker SIGKILLed after broadcasting; one transaction, one transfer of settleAmount, the same final answer', async () => {
    const body = await payWith(h, buyer, { scheme: 'upto', amount: 4_000_000n, settleAmount: 3_000_000n });
    const nonce = BigInt(body.paymentPayload.payload.permit.nonce);
    const workflowId = permit2SettleWorkflowId('base-sepolia', buyer.address, nonce.toString());
    const buyerBefore = await h.balanceOf(buyer.address);
    const payoutBefore = await h.balanceOf(h.payout);
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer.address });

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const pending = await h.settleUntilBroadcast(body);
    expect(pending.status).toBe(202);
    expect(pending.body).toEqual({
      success: false,
      errorReason: 'settlement_pending',
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: buyer.address,
    });
    const hash = pending.body.transaction as Hex;
    expect((await h.chain.getTransaction({ hash })).blockNumber).toBeNull(); // in the mempool, not mined

    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();
    const repeat = await h.settle(body);
    expect(repeat.status).toBe(202);
    expect(repeat.body.transaction).toBe(hash);

    await rpc(rpcUrl, 'evm_mine', []);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    const final = await h.settleUntilFinal(body);

    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: hash, network: 'base-sepolia', payer: buyer.address, amount: '3000000' });
    expect(await permit2SettledEvents(h, buyer.address, nonce)).toHaveLength(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 3_000_000n);
    expect(await h.balanceOf(h.payout)).toBe(payoutBefore + 3_000_000n); // no platform fee on this organization
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);
    const recorded = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${workflowId}%` } });
    expect(recorded.map((r) => ({ hash: r.hash, status: r.status }))).toEqual([{ hash, status: 'mined' }]);
    const again = await h.settle(body);
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: final.body });
  });
});
