import type { Hex } from 'viem';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { DB_KINDS, oneDbKind, testOn } from '../support/db';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * Crashes and slow chains: the worker is killed (SIGKILL) after it broadcast the settlement, and the
 * chain does not mine until a new worker runs. The payment completes exactly once, and the request
 * (or its repeat) gets the final answer.
 *
 * Databases (README "Tests"): the kill with 50 settlements in flight lands while the worker's writes
 * (each relayer record in one transaction with its settlement row) are open and contend for the
 * database (SQLite's one writer, PostgreSQL's row locks): on both. The single kills land while the
 * worker waits for a receipt, its writes committed, and the new worker reads them back as every
 * recovery does: on one (`testOnce`).
 */
describe.each(DB_KINDS)('settlement durability (%s)', (kind) => {
  const testOnce = testOn(oneDbKind('sqlite'), kind);
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[3];
  const relayer = TEST_ACCOUNTS.relayers[2];
  let rpcUrl: string;

  beforeAll(async () => {
    // A short wait so the API answers settlement_pending while the chain is paused. No fee
    // replacement while it is: a slow host's restart can outlast the default 20 s, and a replacement
    // (a new hash, rightly) is not what these tests are about (relayer-hygiene's are).
    h = await startSettleHarness(kind, {
      relayerIndex: 2,
      env: { SETTLE_WAIT_MS: '1500', RECEIPT_WAIT_MS: '5000', RELAYER_REPLACE_AFTER_MS: '600000' },
    });
    rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
  });

  const pay = () => h.pay(buyer, { value: 3_000_000n });

  testOnce('worker killed after broadcasting: one transaction, one transfer, the same final answer', async () => {
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

  testOnce('worker killed after broadcasting and the payment mined while no worker runs: the re-run never calls it rejected', async () => {
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

  testOnce('a restarted worker re-sends a recorded transaction the node lost', async () => {
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer.address });

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const pending = await h.settleUntilBroadcast(body);
    const hash = pending.body.transaction as Hex;
    // While no worker runs, the node forgets the transaction (as a restarted node or a dropped mempool
    // entry would): anvil answers the hash it dropped (null if it dropped nothing).
    await h.restartWorker({
      kill: true,
      whileDown: async () => {
        expect(await rpc(rpcUrl, 'anvil_dropTransaction', [hash])).toBe(hash);
        await expect(h.chain.getTransaction({ hash })).rejects.toThrow(); // the node forgot it
      },
    });
    await rpc(rpcUrl, 'evm_setAutomine', [true]);

    const final = await h.settleUntilFinal(body, 90_000);
    expect(final.body.transaction).toBe(hash); // the same bytes were sent again, not a new transaction
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);
  });

  test('worker killed while 50 settlements are in flight: each settles exactly once, and the ledger equals the chain', async () => {
    const n = 50;
    // Distinct amounts, so a payment counted twice or swapped would show in the sums.
    const values = Array.from({ length: n }, (_, i) => 1_000_000n + BigInt(i));
    const bodies = await Promise.all(values.map((value) => h.pay(buyer, { value })));
    const ids = bodies.map((b) => settleWorkflowId('base-sepolia', buyer.address, b.paymentPayload.payload.authorization.nonce as Hex));
    const [buyerBefore, payoutBefore] = await Promise.all([h.balanceOf(buyer.address), h.balanceOf(h.payout)]);
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer.address });

    // One block a second: transactions pile up between blocks, so the kill finds many out and unmined.
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    await rpc(rpcUrl, 'evm_setIntervalMining', [1]);
    try {
      const first = Promise.all(bodies.map((b) => h.settle(b)));
      const recorded = () => h.tdb.db.em.fork().count(RelayerTransaction, { id: { $in: ids.map((id) => `${id}:settle`) } });
      await waitUntil('10 settlements broadcast', async () => (await recorded()) >= 10, { timeoutMs: 60_000, intervalMs: 20 });
      const inFlight = n - (await h.tdb.db.em.fork().count(Settlement, { id: { $in: ids }, state: 'settled' }));
      await h.restartWorker({ kill: true });
      expect(inFlight).toBeGreaterThan(0); // some were still in flight when the worker died

      for (const r of await first) expect([200, 202]).toContain(r.status);
      const finals = await Promise.all(bodies.map((b) => h.settleUntilFinal(b, 120_000)));
      for (const [i, f] of finals.entries()) {
        expect(f.status).toBe(200);
        expect(f.body).toEqual({
          success: true,
          transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
          network: 'base-sepolia',
          payer: buyer.address,
        });
        expect(await h.settledEvents(buyer.address, bodies[i].paymentPayload.payload.authorization.nonce as Hex)).toBe(1);
      }
      expect(new Set(finals.map((f) => f.body.transaction)).size).toBe(n);

      // The chain: exactly n transactions from the relayer, the buyer paid each amount once.
      const total = values.reduce((a, b) => a + b, 0n);
      expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + n);
      expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - total);
      // The ledger: one settled row per payment with the answered transaction, adding up to the payout's delta.
      const rows = await h.tdb.db.em.fork().find(Settlement, { id: { $in: ids } });
      expect(rows).toHaveLength(n);
      const byId = new Map(rows.map((r) => [r.id, r]));
      for (const [i, id] of ids.entries())
        expect(byId.get(id)).toMatchObject({ state: 'settled', transaction: finals[i].body.transaction });
      const paidOut = rows.reduce((a, r) => a + BigInt(r.amount) - BigInt(r.fee), 0n);
      expect(paidOut).toBe(total);
      expect(await h.balanceOf(h.payout)).toBe(payoutBefore + paidOut);
    } finally {
      await rpc(rpcUrl, 'evm_setIntervalMining', [0]);
      await rpc(rpcUrl, 'evm_setAutomine', [true]);
    }
  }, 300_000);
});
