import type { Hex } from 'viem';
import { rpc } from '../../devnet/anvil';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { DB_KINDS } from '../support/db';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * Crashes and slow chains: the worker is killed (SIGKILL) after it broadcast the settlement, and the
 * chain does not mine until a new worker runs. The payment completes exactly once, and the request
 * (or its repeat) gets the final answer.
 */
describe.each(DB_KINDS)('settlement durability (%s)', (kind) => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[3];
  const relayer = TEST_ACCOUNTS.relayers[2];
  let rpcUrl: string;

  beforeAll(async () => {
    // A short wait so the API answers settlement_pending while the chain is paused.
    h = await startSettleHarness(kind, { relayerIndex: 2, env: { SETTLE_WAIT_MS: '1500', RECEIPT_WAIT_MS: '5000' } });
    rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
  });

  const pay = () => h.pay(buyer, { value: 3_000_000n });

  test('worker killed after broadcasting: one transaction, one transfer, the same final answer', async () => {
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const buyerBefore = await h.balanceOf(buyer.address);
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer.address });

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    // Past SETTLE_WAIT_MS the API answers pending, with the hash once the transaction is recorded
    // (a loaded machine may need a repeat or two before the worker gets there).
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
    const tx = await h.chain.getTransaction({ hash });
    expect(tx.blockNumber).toBeNull(); // in the mempool, not mined

    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow(); // the old worker is really gone
    // A repeat while the worker is new and the chain still paused attaches to the same workflow.
    const repeat = await h.settle(body);
    expect(repeat.status).toBe(202);
    expect(repeat.body.transaction).toBe(hash);

    await rpc(rpcUrl, 'evm_mine', []);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    const final = await h.settleUntilFinal(body);

    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: hash, network: 'base-sepolia', payer: buyer.address });
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 3_000_000n);
    // The relayer sent exactly one transaction, and exactly one is recorded for this workflow.
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);
    const recorded = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${workflowId}%` } });
    expect(recorded.map((r) => ({ hash: r.hash, status: r.status }))).toEqual([{ hash, status: 'mined' }]);
  });

  test('worker killed after broadcasting and the payment mined while no worker runs: the re-run never calls it rejected', async () => {
    // The settlement's activities are local: their results reach history only when the workflow task
    // completes, so the new worker runs verification again, now with the nonce used on chain.
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const buyerBefore = await h.balanceOf(buyer.address);
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer.address });

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const pending = await h.settleUntilBroadcast(body);
    const hash = pending.body.transaction as Hex;
    await h.restartWorker({
      kill: true,
      whileDown: async () => {
        await rpc(rpcUrl, 'evm_mine', []);
        await rpc(rpcUrl, 'evm_setAutomine', [true]);
        expect((await h.chain.getTransactionReceipt({ hash })).status).toBe('success');
      },
    });

    const final = await h.settleUntilFinal(body);
    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: hash, network: 'base-sepolia', payer: buyer.address });
    const row = await h.tdb.db.em.fork().findOne(Settlement, { id: workflowId });
    expect(row).toMatchObject({ state: 'settled', errorReason: null, transaction: hash });
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 3_000_000n);
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);
  });

  test('a restarted worker re-sends a recorded transaction the node lost', async () => {
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer.address });

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const pending = await h.settleUntilBroadcast(body);
    const hash = pending.body.transaction as Hex;
    // The node forgets the transaction (as a restarted node or a dropped mempool entry would).
    await h.restartWorker({ kill: true });
    expect(await rpc(rpcUrl, 'anvil_dropTransaction', [hash])).toBeDefined();
    await rpc(rpcUrl, 'evm_setAutomine', [true]);

    const final = await h.settleUntilFinal(body, 90_000);
    expect(final.body.transaction).toBe(hash); // the same bytes were sent again, not a new transaction
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);
  });
});
