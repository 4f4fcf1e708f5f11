import { WorkflowUpdateStage } from '@temporalio/client';
import type { Hex } from 'viem';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { startRpcProviderDouble, type RpcProviderDouble } from '../../devnet/rpc-provider-double';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import { X402State } from '../../src/temporal/search-attributes';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { replaceUpdate } from '../../workflows/operator-actions';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { opsCli } from '../support/ops-cli';
import { HOLD_BROADCASTS, heldBroadcast, updateEvents } from '../support/held-broadcasts';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { readStackInfo } from '../support/stack-info';

/**
 * A settlement stuck in `submitted` resolved by an operator (README "For operators"), on the real
 * stack: the relayer's own repair is pushed far out (RELAYER_REPLACE_AFTER_MS, RECEIPT_WAIT_MS), so
 * only the operator's action moves it. `ops rebroadcast` re-sends a transaction the node dropped;
 * a `replace` accepted and in flight when the worker is SIGKILLed still ends in exactly one transfer.
 * The worker and the API reach the chain through the provider double, which holds the replacement's
 * broadcast so that the kill lands while the action is unfinished.
 */
describe.each(oneDbKind('postgres'))('operator actions on a stuck settlement (%s)', (kind) => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[3];
  const relayer = TEST_ACCOUNTS.relayers[2];
  let rpcUrl: string;
  let provider: RpcProviderDouble;

  beforeAll(async () => {
    rpcUrl = readStackInfo().chains['base-sepolia'].rpcUrl;
    provider = await startRpcProviderDouble({ upstream: rpcUrl });
    h = await startSettleHarness(kind, {
      relayerIndex: 2,
      env: {
        SETTLE_WAIT_MS: '1500',
        RECEIPT_WAIT_MS: '90000',
        RELAYER_REPLACE_AFTER_MS: '600000',
        RPC_URLS_BASE_SEPOLIA: provider.url,
      },
    });
  });
  // Each test stops the chain's mining (`stuck`); it mines again whatever the test's outcome.
  afterEach(async () => {
    provider.setRules([]);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
  });
  afterAll(async () => {
    await h?.close();
    await provider?.stop();
  });

  const ops = (...args: string[]) => opsCli(h.stack.temporalAddress)(...args);
  /**
   * A payment whose transaction is out (recorded, broadcast) while the chain does not mine, past the
   * fast path's short wait (whose end re-sends the same bytes): the workflow is in `submitted`, waiting
   * RECEIPT_WAIT_MS in confirmPayment, where only an operator moves it.
   */
  const stuck = async () => {
    const body = await h.pay(buyer, { value: 2_000_000n });
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const pending = await h.settleUntilBroadcast(body);
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const handle = h.temporal.workflow.getHandle(workflowId);
    await waitUntil(
      'the settlement in submitted',
      async () => (await handle.describe()).typedSearchAttributes.get(X402State) === 'submitted',
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    return { body, nonce, workflowId, hash: pending.body.transaction as Hex };
  };

  test('a dropped transaction: ops rebroadcast sends the same bytes, one transfer; a repeat is refused (exit 2)', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer.address });
    const s = await stuck();
    await rpc(rpcUrl, 'anvil_dropTransaction', [s.hash]);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    await expect(h.chain.getTransaction({ hash: s.hash })).rejects.toThrow(); // the node forgot it
    expect((await h.settle(s.body)).status).toBe(202);

    const done = await ops('rebroadcast', '--workflow-id', s.workflowId, '--operator', 'carol', '--reason', 'node lost it (INC-3)');
    expect(done.out).toMatch(/ is submitted; sending rebroadcast \(operator carol: node lost it \(INC-3\)\)/);
    expect(done.out).toContain(`done: {"hash":"${s.hash}"`);
    expect(done.code).toBe(0);

    const final = await h.settleUntilFinal(s.body);
    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: s.hash, network: 'base-sepolia', payer: buyer.address });
    expect(await h.settledEvents(buyer.address, s.nonce)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 2_000_000n);
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);
    const row = (await h.tdb.db.em.fork().findOne(Settlement, { id: s.workflowId }))!;
    expect({ state: row.state, operator: row.operator, operatorReason: row.operatorReason }).toEqual({
      state: 'settled',
      operator: 'carol',
      operatorReason: 'rebroadcast: node lost it (INC-3)',
    });

    const again = await ops('rebroadcast', '--workflow-id', s.workflowId, '--operator', 'carol', '--reason', 'again');
    expect(again.code).toBe(2);
    expect(again.out).toContain(`refused: ${s.workflowId} is completed (state settled)`);
  });

  test('replace accepted, the worker SIGKILLed at once: the replacement (same nonce, higher fees) is the one transfer', async () => {
    const buyerBefore = await h.balanceOf(buyer.address);
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer.address });
    const s = await stuck();
    const before = await h.chain.getTransaction({ hash: s.hash });

    // Broadcasts hang at the provider: the replacement is signed and recorded, and never reaches the node.
    provider.setRules(HOLD_BROADCASTS);
    const handle = h.temporal.workflow.getHandle(s.workflowId);
    const update = await handle.startUpdate(replaceUpdate, {
      args: [{ operator: 'dave', reason: 'fee too low (INC-4)' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    const sent = await heldBroadcast(provider, [s.hash]);
    const killed = h.worker.child.pid!;
    await h.restartWorker({
      kill: true,
      whileDown: async () => {
        expect(() => process.kill(killed, 0)).toThrow();
        // The action was unfinished at the kill: the node has only the original, the update no outcome.
        await expect(h.chain.getTransaction({ hash: sent })).rejects.toThrow();
        expect((await h.chain.getTransaction({ hash: s.hash })).blockNumber).toBeNull();
        expect(await updateEvents(handle, update.updateId)).toEqual({ accepted: true, completed: false });
        provider.setRules([]);
      },
    });
    const replaced = await update.result();
    expect(replaced.status).toBe('signed');
    expect(replaced.hash).not.toBe(s.hash);
    const after = await h.chain.getTransaction({ hash: replaced.hash as Hex });
    expect(after.nonce).toBe(before.nonce);
    expect(after.maxFeePerGas! > before.maxFeePerGas!).toBe(true);

    await rpc(rpcUrl, 'evm_mine', []);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    const final = await h.settleUntilFinal(s.body, 120_000);
    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: replaced.hash, network: 'base-sepolia', payer: buyer.address });
    expect(await h.settledEvents(buyer.address, s.nonce)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 2_000_000n);
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);
    const recorded = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${s.workflowId}%` } });
    expect(recorded.map((r) => ({ hash: r.hash, status: r.status }))).toEqual([{ hash: replaced.hash, status: 'mined' }]);
    // One record, at one nonce: the original, the replacement held at the kill, and the one the update
    // answered. The retried action is a replace step of its own: once the restarted worker's
    // confirmation has re-sent the held replacement, the retry bumps the fees once more.
    const hashes = JSON.parse(recorded[0]!.hashes!) as string[];
    expect(hashes.slice(0, 2)).toEqual([s.hash, sent]);
    expect(hashes.at(-1)).toBe(replaced.hash);
    expect(hashes.length).toBeLessThanOrEqual(3);
  }, 240_000);
});
