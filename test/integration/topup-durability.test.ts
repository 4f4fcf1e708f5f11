import { createWalletClient, encodeAbiParameters, http, keccak256, numberToHex, type Address } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { DEVNET_DEPOSITOR_ADDRESS, DEVNET_USDC_ISSUER_KEY } from '../../src/chains/devnet-addresses';
import { RelayerTransaction } from '../../src/db/entities';
import { relayerTxId, settleWorkflowId, topupWorkflowId } from '../../src/temporal/workflow-ids';
import { PARKED_MEMO } from '../../workflows/park';
import { oneDbKind } from '../support/db';
import { opsCli } from '../support/ops-cli';
import { startTopupHarness, type TopupHarness } from '../support/topup-harness';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * The TopUpWorkflow under crashes: the chain is held so the request answers 503 + Retry-After
 * (outcome unknown), the worker is SIGKILLed after the settlement landed and the deposit was signed,
 * and a new worker finishes it: exactly one settlement and one deposit, the same top-up for every
 * repeat. And under concurrent top-ups, whose deposits spend the relayer's shared allowance of the
 * deposit key back to zero while another top-up's approval waits to be mined.
 *
 * One database (README "Tests"): its races are the chain's (what is mined when, an allowance, a
 * pause) and Temporal's (a repeat before the workflow's first row: the run is found, not a row); each
 * kill lands while the worker waits (a receipt, an operator), its writes committed. The relayer's
 * records are on both databases in settle-durability and relayer-hygiene, the top-up row's upsert in
 * topup (PostgreSQL) and topup-operator (SQLite).
 */
describe.each(oneDbKind('postgres'))('top-up durability (%s)', (kind) => {
  let h: TopupHarness;
  let rpcUrl: string;
  beforeAll(async () => {
    h = await startTopupHarness(kind, {
      relayerIndex: 1,
      env: { TOPUP_WAIT_MS: '1000', TOPUP_RETRY_AFTER_SECONDS: '3', RECEIPT_WAIT_MS: '3000' },
    });
    rpcUrl = h.stack.chains.base.rpcUrl;
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    // A failed pause test leaves the shared token unpaused for the next files.
    if (h)
      await createWalletClient({ account: privateKeyToAccount(DEVNET_USDC_ISSUER_KEY), transport: http(rpcUrl) })
        .writeContract({ chain: null, address: h.stack.usdc, abi: tokenAbi, functionName: 'unpause' })
        .catch(() => undefined);
    await h?.close();
  });

  test('worker killed between settlement and deposit: 503 + Retry-After meanwhile, exactly one deposit after restart', async () => {
    const payer = await h.freshPayer(10_000_000n);
    const pay = await h.xPayment(payer, { value: 5_000_000n });
    const before = await h.usdcOf(payer.address);

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const first = await h.post({}, pay.header);
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('3');
    // (the record may not be written yet on a loaded machine; the id and state are always there)
    expect(first.body).toMatchObject({
      success: false,
      state: 'settling',
      errorReason: 'settlement_pending',
      topupId: expect.stringMatching(/^topup:demo-merchant:/),
    });
    expect(first.body.depositTx ?? null).toBeNull();
    const topupId: string = first.body.topupId;
    const depositTxId = relayerTxId(topupId, 'deposit');
    const em = () => h.tdb.db.em.fork();

    // Mine block by block (the settlement, then the relayer's approval) and stop once the approval
    // is mined: the deposit is signed only after that receipt, so no block of ours can include it.
    const approvalMined = async () => {
      const approval = await em().findOne(RelayerTransaction, { id: relayerTxId(topupId, 'approve') });
      return approval ? (await rpc(rpcUrl, 'eth_getTransactionReceipt', [approval.hash])) !== null : false;
    };
    await waitUntil(
      'the approval to be mined',
      async () => {
        if (await approvalMined()) return true;
        await rpc(rpcUrl, 'evm_mine', []);
        return false;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await waitUntil('the deposit to be signed', async () => !!(await em().findOne(RelayerTransaction, { id: depositTxId })), {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();

    const midway = await h.get(`/v1/demo-merchant/topups/${topupId}`);
    expect(midway.body).toMatchObject({ state: 'depositing', settlementTx: expect.stringMatching(/^0x[0-9a-f]{64}$/), depositTx: null });
    const repeat = await h.post({}, pay.header);
    expect(repeat.status).toBe(503);
    expect(repeat.body).toMatchObject({ topupId, state: 'depositing', errorReason: 'settlement_pending' });
    expect(await h.depositedEvents(payer.address)).toEqual([]);

    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    await rpc(rpcUrl, 'evm_mine', []);
    const { final } = await h.repeatUntil(pay.header, 200, 90_000);
    expect(final.body).toMatchObject({
      topupId,
      state: 'deposited',
      grossAmount: '5000000',
      netAmount: '4975000',
      settlementTx: midway.body.settlementTx,
    });
    expect(await h.depositedEvents(payer.address)).toEqual([4_975_000n]);
    expect(await h.merchantBalance(payer.address)).toBe(4_975_000n);
    expect(await h.usdcOf(payer.address)).toBe(before - 5_000_000n);
    const deposits = await em().find(RelayerTransaction, { id: depositTxId });
    expect(deposits.map((d) => ({ hash: d.hash, status: d.status }))).toEqual([{ hash: final.body.depositTx, status: 'mined' }]);
  });

  test('a repeat before its top-up wrote its first row attaches to it (503 settling), never 409 credit_limit_reached; one deposit', async () => {
    const payer = await h.freshPayer(10_000_000n);
    const pay = await h.xPayment(payer, { value: 5_000_000n });
    const topupId = topupWorkflowId('demo-merchant', payer.address, pay.nonce);
    let first: Awaited<ReturnType<TopupHarness['post']>> | undefined;
    let repeat: typeof first;
    await h.restartWorker({
      whileDown: async () => {
        // No worker: the workflow is started, and nothing writes its row.
        first = await h.post({}, pay.header);
        expect(await h.rows([topupId])).toEqual([]);
        expect((await h.temporal.workflow.getHandle(topupId).describe()).status.name).toBe('RUNNING');
        // Meanwhile the buyer's headroom no longer fits this top-up (as when a concurrent top-up of
        // the same buyer deposited first): a new request would be refused, the repeat is not new.
        await h.setCreditLimit(payer.address, 1_000_000n);
        expect((await h.get(`/v1/demo-merchant/topups/quote?buyer=${payer.address}&amount=5000000`)).body).toMatchObject({
          errorReason: 'credit_limit_reached',
        });
        repeat = await h.post({}, pay.header);
        await h.setCreditLimit(payer.address, 1_000_000_000n);
      },
    });
    for (const res of [first!, repeat!]) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('3');
      expect(res.body).toEqual({
        success: false,
        topupId,
        state: 'settling',
        errorReason: 'settlement_pending',
        error: 'the top-up is being processed',
      });
    }
    const { final } = await h.repeatUntil(pay.header, 200, 60_000);
    expect(final.body).toMatchObject({ topupId, state: 'deposited', netAmount: '4975000', refundTx: null });
    expect(await h.depositedEvents(payer.address)).toEqual([4_975_000n]);
  });

  test('an approval estimated while another was outstanding and mined after a deposit spent the allowance to zero still succeeds: exactly one deposit', async () => {
    const usdc = h.stack.usdc;
    const relayer = h.relayer.address;
    // FiatToken's allowed[owner][spender] (the mapping at slot 10 of FiatTokenV1's layout), written
    // directly to stand for other top-ups: their approvals outstanding, then spent by their deposits.
    const slot = keccak256(
      encodeAbiParameters(
        [{ type: 'address' }, { type: 'bytes32' }],
        [DEVNET_DEPOSITOR_ADDRESS, keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [relayer, 10n]))],
      ),
    );
    const allowance = () =>
      h.chain.readContract({
        address: usdc,
        abi: tokenAbi,
        functionName: 'allowance',
        args: [relayer, DEVNET_DEPOSITOR_ADDRESS as Address],
      });
    const setAllowance = async (value: bigint) => {
      await rpc(rpcUrl, 'anvil_setStorageAt', [usdc, slot, numberToHex(value, { size: 32 })]);
      expect(await allowance()).toBe(value);
    };
    const payer = await h.freshPayer(10_000_000n);
    const pay = await h.xPayment(payer, { value: 5_000_000n });
    const topupId = topupWorkflowId('demo-merchant', payer.address, pay.nonce);
    const settleTxId = relayerTxId(settleWorkflowId('base', payer.address, pay.nonce), 'settle');
    const approveTxId = relayerTxId(topupId, 'approve');
    const recorded = (id: string) => h.tdb.db.em.fork().findOne(RelayerTransaction, { id });
    const receiptOf = (hash: string) => rpc<{ status: string } | null>(rpcUrl, 'eth_getTransactionReceipt', [hash]);

    // Another top-up's approval is outstanding (its deposit has not spent it yet).
    await setAllowance(3_000_000n);
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    expect((await h.post({}, pay.header)).status).toBe(503);
    // Mine until the settlement is mined, and not one block more: this top-up's approval is estimated
    // and signed only after that receipt, so it waits in the pool, estimated at the outstanding allowance.
    await waitUntil(
      'the settlement to be mined',
      async () => {
        const settle = await recorded(settleTxId);
        if (settle && (await receiptOf(settle.hash))) return true;
        await rpc(rpcUrl, 'evm_mine', []);
        return false;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const approval = await waitUntil('the approval to be signed', async () => (await recorded(approveTxId)) ?? undefined, {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    // Precondition: the approval waits in the pool, signed from an estimate on the outstanding allowance.
    expect(await receiptOf(approval.hash)).toBeNull();
    expect(await allowance()).toBe(3_000_000n);
    expect(await h.depositedEvents(payer.address)).toEqual([]);
    // The other top-up's deposit spends its approval before ours is mined: ours runs on a zero allowance.
    await setAllowance(0n);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    await rpc(rpcUrl, 'evm_mine', []);

    const mined = await waitUntil(
      'the approval to be mined',
      async () => (await receiptOf((await recorded(approveTxId))!.hash)) ?? undefined,
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    expect(mined.status).toBe('0x1');
    const { final } = await h.repeatUntil(pay.header, 200, 60_000);
    expect(final.body).toMatchObject({ topupId, state: 'deposited', netAmount: '4975000', refundTx: null });
    expect(await h.depositedEvents(payer.address)).toEqual([4_975_000n]);
    expect(await h.merchantBalance(payer.address)).toBe(4_975_000n);
    // Its own net approved and spent by its deposit: nothing left over, nothing missing.
    expect(await allowance()).toBe(0n);
  });

  test('an approval mined and reverted (USDC paused before it was mined) parks in needs_review with the reason; ops retry-deposit: one deposit', async () => {
    const usdc = h.stack.usdc;
    const pauser = createWalletClient({ account: privateKeyToAccount(DEVNET_USDC_ISSUER_KEY), transport: http(rpcUrl) });
    await rpc(rpcUrl, 'anvil_setBalance', [pauser.account.address, numberToHex(10n ** 20n)]);
    const payer = await h.freshPayer(10_000_000n);
    const pay = await h.xPayment(payer, { value: 5_000_000n });
    const before = await h.usdcOf(payer.address);
    const topupId = topupWorkflowId('demo-merchant', payer.address, pay.nonce);
    const settleTxId = relayerTxId(settleWorkflowId('base', payer.address, pay.nonce), 'settle');
    const records = () => h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${topupId}:%` } }, { orderBy: { id: 'asc' } });
    const recorded = (id: string) => h.tdb.db.em.fork().findOne(RelayerTransaction, { id });
    const receiptOf = (hash: string) =>
      rpc<{ status: string; transactionIndex: string; blockNumber: string } | null>(rpcUrl, 'eth_getTransactionReceipt', [hash]);

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    expect((await h.post({}, pay.header)).status).toBe(503);
    await waitUntil(
      'the settlement to be mined',
      async () => {
        const settle = await recorded(settleTxId);
        if (settle && (await receiptOf(settle.hash))) return true;
        await rpc(rpcUrl, 'evm_mine', []);
        return false;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const approval = await waitUntil(
      'the approval to be signed',
      async () => (await recorded(relayerTxId(topupId, 'approve'))) ?? undefined,
      {
        timeoutMs: 60_000,
        intervalMs: 100,
      },
    );
    expect(await receiptOf(approval.hash)).toBeNull(); // signed while the token was not paused, waiting in the pool
    // FiatToken's pauser pauses it in the approval's block, ahead of it (a higher tip).
    const pause = await pauser.writeContract({
      chain: null,
      address: usdc,
      abi: tokenAbi,
      functionName: 'pause',
      maxFeePerGas: 1_000_000_000_000n,
      maxPriorityFeePerGas: 500_000_000_000n,
    });
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    await rpc(rpcUrl, 'evm_mine', []);
    const [paused, reverted] = [(await receiptOf(pause))!, (await receiptOf(approval.hash))!];
    expect({ pause: paused.status, approval: reverted.status, sameBlock: paused.blockNumber === reverted.blockNumber }).toEqual({
      pause: '0x1',
      approval: '0x0',
      sameBlock: true,
    });
    expect(Number(paused.transactionIndex)).toBeLessThan(Number(reverted.transactionIndex));

    const reason = `the top-up relayer's approval ${approval.hash} was mined and reverted; nothing was deposited`;
    const { final: parked } = await h.repeatUntil(pay.header, 500, 60_000);
    expect(parked.body).toMatchObject({
      topupId,
      state: 'needs_review',
      errorReason: 'needs_review',
      error: reason,
      depositTx: null,
      refundTx: null,
    });
    const handle = h.temporal.workflow.getHandle(topupId);
    expect((await handle.describe()).memo?.[PARKED_MEMO]).toEqual({ reason, at: expect.any(String) });
    // Not retried: one approval, reverted; nothing deposited or refunded.
    expect((await records()).map((r) => r.id)).toEqual([relayerTxId(topupId, 'approve')]);
    // A worker SIGKILLed while it waits: the new one replays the parked history and waits on.
    await h.restartWorker({ kill: true });
    const unpaused = await pauser.writeContract({ chain: null, address: usdc, abi: tokenAbi, functionName: 'unpause' });
    expect((await h.chain.waitForTransactionReceipt({ hash: unpaused })).status).toBe('success');
    expect(await h.chain.readContract({ address: usdc, abi: tokenAbi, functionName: 'paused' })).toBe(false);

    const ops = opsCli(h.stack.temporalAddress);
    const retried = await ops('retry-deposit', '--workflow-id', topupId, '--operator', 'alice', '--reason', 'USDC unpaused (INC-9)');
    expect(retried.out).toContain('done: {"state":"deposited","operatorActions":[{"action":"retry-deposit","operator":"alice"');
    expect(retried.code).toBe(0);
    const final = await h.post({}, pay.header);
    expect(final.status).toBe(200);
    expect(final.body).toMatchObject({ topupId, state: 'deposited', netAmount: '4975000', refundTx: null });
    expect(await h.depositedEvents(payer.address)).toEqual([4_975_000n]);
    expect(await h.merchantBalance(payer.address)).toBe(4_975_000n);
    expect(await h.usdcOf(payer.address)).toBe(before - 5_000_000n); // paid once, not refunded
    const after = await records();
    expect(after.map((r) => r.id)).toEqual([
      relayerTxId(topupId, 'approve'),
      relayerTxId(topupId, 'approve-2'),
      relayerTxId(topupId, 'deposit'),
    ]);
    expect(await Promise.all(after.map(async (r) => (await receiptOf(r.hash))!.status))).toEqual(['0x0', '0x1', '0x1']);
  });
});
