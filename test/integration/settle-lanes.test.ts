import { privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { laneOf } from '../../src/chains/evm/relayer-lanes';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * RELAYER_PRIVATE_KEYS: one worker with two settlement lanes. Each payment is sent from the lane its
 * settlement's workflow id hashes to, both lanes carry settlements at once (the chain mines nothing until
 * three are pending on each lane, then all six in one block), and each settles exactly once. One
 * database (README "Tests"): the lanes are a hash of the workflow id and the concurrency is on chain;
 * the records it writes are the relayer's, on both databases in relayer-hygiene and settle-durability.
 */
describe.each(oneDbKind('sqlite'))('relayer lanes (%s)', (kind) => {
  let h: SettleHarness;
  const laneKeys = [TEST_ACCOUNTS.relayerKeys[2], TEST_ACCOUNTS.relayerKeys[3]];
  const lanes = laneKeys.map((k) => privateKeyToAccount(k as `0x${string}`).address);
  const buyer = TEST_ACCOUNTS.buyers[3];

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 2, env: { RELAYER_PRIVATE_KEYS: laneKeys.join(',') } });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('payments go out from the lane of their id, concurrently on both lanes, each settled once', async () => {
    // Payments until each lane has three (the lane is a hash of the id, so this is deterministic per payment).
    const perLane: Awaited<ReturnType<SettleHarness['pay']>>[][] = [[], []];
    while (perLane.some((l) => l.length < 3)) {
      const body = await h.pay(buyer, { value: 10_000n });
      const a = body.paymentPayload.payload.authorization;
      const lane = laneOf(settleWorkflowId('base-sepolia', a.from, a.nonce), 2);
      if (perLane[lane].length < 3) perLane[lane].push(body);
    }
    const bodies = perLane.flat();
    const payoutBefore = await h.balanceOf(h.payout);
    const rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
    const nonces = (blockTag: 'latest' | 'pending') =>
      Promise.all(lanes.map((address) => h.chain.getTransactionCount({ address, blockTag })));
    const minedBefore = await nonces('latest');

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    let answers: Awaited<ReturnType<SettleHarness['settle']>>[];
    try {
      const settling = Promise.all(bodies.map((b) => h.settle(b)));
      await waitUntil(
        'three settlements pending on each lane at once',
        async () => (await nonces('pending')).every((n, i) => n === minedBefore[i]! + 3),
        { timeoutMs: 30_000, intervalMs: 50 },
      );
      await rpc(rpcUrl, 'evm_mine', []);
      answers = await settling;
    } finally {
      await rpc(rpcUrl, 'evm_setAutomine', [true]);
    }

    expect(answers.map((r) => [r.status, r.body.success])).toEqual(bodies.map(() => [200, true]));
    const receipts = await Promise.all(answers.map((r) => h.chain.getTransactionReceipt({ hash: r.body.transaction })));
    expect(new Set(receipts.map((r) => r.blockNumber)).size).toBe(1); // all six in the one block mined above
    expect(await nonces('latest')).toEqual(minedBefore.map((n) => n + 3));
    for (let i = 0; i < bodies.length; i++) {
      const tx = await h.chain.getTransaction({ hash: answers[i].body.transaction });
      expect(tx.from.toLowerCase()).toBe(lanes[i < 3 ? 0 : 1].toLowerCase());
      const a = bodies[i].paymentPayload.payload.authorization;
      expect(await h.settledEvents(a.from, a.nonce)).toBe(1);
    }
    expect(await h.balanceOf(h.payout)).toBe(payoutBefore + 6n * 10_000n);
    // A repeat is answered with the transaction of the first attempt.
    const again = await h.settle(bodies[4]);
    expect(again.body.transaction).toBe(answers[4].body.transaction);
  });
});
