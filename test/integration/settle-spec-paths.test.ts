import { createWalletClient, defineChain, http, parseEther, type Hex, type LocalAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import { Settlement } from '../../src/db/entities';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { waitForReceipt } from '../support/evm';
import { request } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * Paths the spec names that no other suite drives for real (issue 14): a settlement transaction
 * that reverts on chain (`invalid_transaction_state`), the payout to `extra.creditedRecipient`, and
 * the chain RPC down past every retry (`unexpected_settle_error`, `unexpected_verify_error`), and the
 * status record with the upstream gateway down.
 */
function walletOf(h: SettleHarness, account: LocalAccount) {
  const { rpcUrl, chainId } = h.stack.chains['base-sepolia'];
  const chain = defineChain({
    id: chainId,
    name: 'base-sepolia',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  return createWalletClient({ account, chain, transport: http(rpcUrl) });
}

describe.each(oneDbKind('postgres'))('spec paths of POST /v1/settle on the real stack (%s)', (kind) => {
  let h: SettleHarness;
  let rpcUrl: string;
  const funder = TEST_ACCOUNTS.buyers[kind === 'sqlite' ? 0 : 1];

  beforeAll(async () => {
    // A short wait, so a request answers settlement_pending while the chain is paused.
    h = await startSettleHarness(kind, { relayerIndex: 0, platformFeeBps: 250, env: { SETTLE_WAIT_MS: '1500', RECEIPT_WAIT_MS: '5000' } });
    rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
  });

  /** A fresh buyer holding exactly `usdc` base units and some ETH for its own transactions. */
  async function freshBuyer(usdc: bigint) {
    const buyer = privateKeyToAccount(generatePrivateKey());
    await rpc(rpcUrl, 'anvil_setBalance', [buyer.address, `0x${parseEther('1').toString(16)}`]);
    const hash = await walletOf(h, funder).writeContract({
      address: h.stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [buyer.address, usdc],
    } as never);
    expect((await waitForReceipt(h.chain, hash)).status).toBe('success');
    return buyer;
  }

  test('the buyer empties its wallet after verification: the settlement reverts on chain -> 409 invalid_transaction_state, nothing moves', async () => {
    const buyer = await freshBuyer(1_000_000n);
    const body = await h.pay(buyer, { value: 1_000_000n });
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const sink = privateKeyToAccount(generatePrivateKey()).address;
    const payoutBefore = await h.balanceOf(h.payout);

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    let settleHash: Hex;
    let drain: Hex;
    try {
      const pending = await h.settleUntilBroadcast(body); // verified (funds were there) and sent, not mined
      settleHash = pending.body.transaction as Hex;
      // The buyer's own transfer of everything, with a tip that puts it first in the next block (a
      // fixed gas limit: estimating on the pending state, after the settlement, would revert).
      drain = await walletOf(h, buyer).writeContract({
        address: h.stack.usdc,
        abi: tokenAbi,
        functionName: 'transfer',
        args: [sink, 1_000_000n],
        gas: 100_000n,
        maxPriorityFeePerGas: parseEther('0.000001'),
        maxFeePerGas: parseEther('0.000002'),
      } as never);
      await rpc(rpcUrl, 'evm_mine', []);
    } finally {
      await rpc(rpcUrl, 'evm_setAutomine', [true]);
    }
    expect((await waitForReceipt(h.chain, drain)).status).toBe('success');
    expect((await waitForReceipt(h.chain, settleHash)).status).toBe('reverted');

    const final = await h.settleUntilFinal(body);
    expect({ status: final.status, body: final.body }).toEqual({
      status: 409,
      body: { success: false, errorReason: 'invalid_transaction_state', transaction: '', network: 'base-sepolia', payer: buyer.address },
    });
    expect(await h.balanceOf(sink)).toBe(1_000_000n);
    expect(await h.balanceOf(h.payout)).toBe(payoutBefore);
    expect(await h.settledEvents(buyer.address, nonce)).toBe(0);
    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: `settle:base-sepolia:${buyer.address.toLowerCase()}:${nonce}` });
    expect(row).toMatchObject({ state: 'failed', errorReason: 'invalid_transaction_state', transaction: settleHash });
    // A repeat gets the same final answer and sends nothing more.
    const again = await h.settle(body);
    expect({ status: again.status, body: again.body }).toEqual({ status: 409, body: final.body });
  });

  test('extra.creditedRecipient: the payout goes there, not to the organization wallet; the fee is still taken', async () => {
    const buyer = await freshBuyer(2_000_000n);
    const credited = privateKeyToAccount(generatePrivateKey()).address;
    const body = await h.pay(buyer, { value: 2_000_000n, extra: { name: 'USDC', version: '2', creditedRecipient: credited } });
    const [payoutBefore, feeBefore] = await Promise.all([h.balanceOf(h.payout), h.balanceOf(h.feeRecipient)]);

    const res = await h.settleUntilFinal(body);

    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: { success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'base-sepolia', payer: buyer.address },
    });
    expect(await h.balanceOf(buyer.address)).toBe(0n);
    expect(await h.balanceOf(credited)).toBe(1_950_000n);
    expect(await h.balanceOf(h.feeRecipient)).toBe(feeBefore + 50_000n);
    expect(await h.balanceOf(h.payout)).toBe(payoutBefore);
    const nonce = body.paymentPayload.payload.authorization.nonce;
    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: `settle:base-sepolia:${buyer.address.toLowerCase()}:${nonce}` });
    expect(row.recipient).toBe(credited.toLowerCase());
  });
});

describe.each(oneDbKind('postgres'))('the chain RPC and the upstream gateway down (%s)', (kind) => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[kind === 'sqlite' ? 0 : 1];

  beforeAll(async () => {
    // Port 9 (discard) refuses connections: every read of base-sepolia fails, in the API and the worker.
    h = await startSettleHarness(kind, {
      relayerIndex: 0,
      env: { RPC_URLS_BASE_SEPOLIA: 'http://127.0.0.1:9', GATEWAY_API_URL_TESTNET: 'http://127.0.0.1:9' },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('POST /v1/settle -> 500 unexpected_settle_error once verification gives up; nothing is sent', async () => {
    const body = await h.pay(buyer, { value: 1_000n });
    // The test reads the chain directly (only the stack's configured RPC URL is down).
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: TEST_ACCOUNTS.relayers[0].address });
    const buyerBefore = await h.balanceOf(buyer.address);
    const res = await h.settle(body);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 500,
      body: { success: false, errorReason: 'unexpected_settle_error', transaction: '', network: 'base-sepolia' },
    });
    const nonce = body.paymentPayload.payload.authorization.nonce;
    const workflowId = `settle:base-sepolia:${buyer.address.toLowerCase()}:${nonce}`;
    expect((await h.temporal.workflow.getHandle(workflowId).describe()).status.name).toBe('FAILED');
    // No row at all: a settlement's first row is its rejection or the write-ahead `submitted` record,
    // and a verification that gave up is neither.
    expect(await h.tdb.db.em.fork().findOne(Settlement, { id: workflowId })).toBeNull();
    expect(await h.chain.getTransactionCount({ address: TEST_ACCOUNTS.relayers[0].address, blockTag: 'pending' })).toBe(relayerNonceBefore);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore);
  });

  test('POST /v1/verify -> 500 unexpected_verify_error', async () => {
    const body = await h.pay(buyer, { value: 1_000n });
    const res = await request('POST', `${h.api.baseUrl}/v1/verify`, { json: body, headers: { authorization: `Bearer ${h.apiKey}` } });
    expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: { errorReason: 'unexpected_verify_error' } });
  });

  test('GET /v1/batched-sample with the gateway down: 200, gatewaySupported null (the spec: "or null if that call failed")', async () => {
    const res = await request('GET', `${h.api.baseUrl}/v1/batched-sample`, { headers: { authorization: `Bearer ${h.apiKey}` } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, data: { gatewaySupported: null, organizationId: expect.any(String) } });
  });
});
