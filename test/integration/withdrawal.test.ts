import { createWalletClient, http, numberToHex, parseEventLogs, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { DEVNET_GATEWAY_DEPLOYER_KEY } from '../../src/chains/devnet-addresses';
import { waitForReceipt } from '../support/evm';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import { WITHDRAWAL_ROUTE } from '../../src/gateway/withdrawal-types';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { gatewayHelpers } from '../support/gateway';
import { request, signIn, type JsonResponse } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { gatewayWalletAbi } from '../../src/chains/evm/abi';

/**
 * Gateway-wallet withdrawals of the facilitator's own balance as a durable WithdrawalWorkflow, on the
 * real stack (Temporal, anvil with our GatewayWallet at a 5-block delay, real worker process).
 */
describe.each(oneDbKind('sqlite'))('gateway wallet: balances and WithdrawalWorkflow (%s)', (kind) => {
  const g = gatewayHelpers();
  const relayer = TEST_ACCOUNTS.relayers[3]; // the depositor: this worker's relayer
  const buyer = TEST_ACCOUNTS.buyers[2];
  // Withdrawals are for operators only: the harness's organization is owned by an OPERATOR_ADDRESSES wallet.
  const operator = privateKeyToAccount(generatePrivateKey());
  let h: SettleHarness;
  let rpcUrl: string;

  beforeAll(async () => {
    h = await startSettleHarness(kind, {
      relayerIndex: 3,
      owner: operator,
      env: { WITHDRAWAL_POLL_MS: '100', RECEIPT_WAIT_MS: '5000', OPERATOR_ADDRESSES: operator.address },
    });
    rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
    await g.deposit(buyer, 4_000_000n, relayer.address); // a buyer funds the facilitator's gateway balance
  });
  afterAll(async () => {
    await h?.close();
  });

  const auth = () => ({ authorization: `Bearer ${h.apiKey}` });
  const balances = () => request('GET', `${h.api.baseUrl}/v1/gateway/balances?network=base-sepolia`, { headers: auth() });
  const withdraw = (json: unknown) => request('POST', `${h.api.baseUrl}/v1/gateway/withdrawals`, { json, headers: auth() });
  const record = (id: string) => request('GET', `${h.api.baseUrl}/v1/gateway/withdrawals/${encodeURIComponent(id)}`, { headers: auth() });
  const untilState = (id: string, state: string, timeoutMs = 30_000) =>
    waitUntil(
      `withdrawal ${id} to be ${state}`,
      async () => {
        const r = await record(id);
        return r.status === 200 && r.body.state === state ? r : undefined;
      },
      { timeoutMs, intervalMs: 100 },
    );
  const mine = (blocks: number) => rpc(rpcUrl, 'anvil_mine', [numberToHex(blocks)]);
  /**
   * Whether the workflow read the chain at `height` or later (in a readWithdrawalBlock run by the
   * worker with `pid`, when given) and then started another timer: it saw that height and chose to
   * wait on. Read from its history, so it is a fact, not a guess after a sleep.
   */
  const waitedOnAfterReading = async (id: string, height: bigint, pid?: number) => {
    const events = (await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
    const byId = new Map(events.map((e) => [String(e.eventId), e]));
    const read = events.findIndex((e) => {
      const done = e.activityTaskCompletedEventAttributes;
      const scheduled = byId.get(String(done?.scheduledEventId))?.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name !== 'readWithdrawalBlock') return false;
      const started = byId.get(String(done!.startedEventId))?.activityTaskStartedEventAttributes;
      if (pid !== undefined && !started?.identity?.startsWith(`${pid}@`)) return false;
      const result = JSON.parse(Buffer.from(done!.result!.payloads![0]!.data!).toString()) as { blockNumber: string };
      return BigInt(result.blockNumber) >= height;
    });
    return read >= 0 && events.slice(read + 1).some((e) => e.timerStartedEventAttributes);
  };
  const withdrawnEvents = async (fromBlock: bigint) => {
    const logs = await g.client.getLogs({ address: g.wallet, fromBlock, toBlock: 'latest' });
    return parseEventLogs({ abi: gatewayWalletAbi, logs, eventName: 'Withdrawn' }).filter(
      (l) => l.args.depositor.toLowerCase() === relayer.address.toLowerCase(),
    );
  };

  test('a normal API key (organization not owned by an operator) gets 403 on every gateway route, and starts nothing', async () => {
    const cookie = await signIn(h.api.baseUrl, privateKeyToAccount(generatePrivateKey()));
    const key = await request('POST', `${h.api.baseUrl}/v1/api_keys`, { cookie, json: { name: 'seller', test_net: true } });
    expect(key.status).toBe(201);
    const headers = { authorization: `Bearer ${key.body.api_key}` };
    const forbidden = { type: 'api_error', code: 403, message: "operators only: this organization's owner is not in OPERATOR_ADDRESSES" };
    const idempotencyKey = `not-an-operator-${kind}`;
    const withdrawals = () => h.tdb.db.em.fork().count(Settlement, { route: WITHDRAWAL_ROUTE });
    const before = await withdrawals();
    const answers = [
      await request('GET', `${h.api.baseUrl}/v1/gateway/balances?network=base-sepolia`, { headers }),
      await request('POST', `${h.api.baseUrl}/v1/gateway/withdrawals`, {
        json: { network: 'base-sepolia', amount: '1', idempotencyKey },
        headers,
      }),
      await request('GET', `${h.api.baseUrl}/v1/gateway/withdrawals/anything`, { headers }),
    ];
    for (const res of answers) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual(forbidden);
    }
    expect(await withdrawals()).toBe(before);
    // The operator's own key gets through.
    expect((await balances()).status).toBe(200);
  });

  test('GET /v1/gateway/balances: the four balance views of the facilitator account, as the contract has them', async () => {
    const res = await balances();
    expect(res.status).toBe(200);
    const block = await g.client.getBlockNumber({ cacheTime: 0 });
    expect(res.body).toEqual({
      network: 'base-sepolia',
      gatewayWallet: g.wallet,
      token: g.stack.usdc,
      depositor: relayer.address,
      tokenSupported: true,
      availableBalance: (await g.view('availableBalance', relayer.address)).toString(),
      withdrawingBalance: '0',
      withdrawableBalance: '0',
      totalBalance: (await g.view('totalBalance', relayer.address)).toString(),
      withdrawalBlock: (await g.view('withdrawalBlock', relayer.address)).toString(),
      // The spec's delay is the contract's: this stack deploys the wallet with 5 blocks.
      withdrawalDelayBlocks: '5',
      blockNumber: block.toString(),
    });
    expect(BigInt(res.body.availableBalance)).toBeGreaterThanOrEqual(4_000_000n);

    const bad = await request('GET', `${h.api.baseUrl}/v1/gateway/balances?network=nope`, { headers: auth() });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ type: 'api_error', code: 400, message: 'network: must be an EVM network id, e.g. base-sepolia' });
    const anonymous = await request('GET', `${h.api.baseUrl}/v1/gateway/balances?network=base-sepolia`);
    expect(anonymous.status).toBe(401);
  });

  test('a full withdrawal: available -> withdrawing -> withdrawable -> out to the wallet, exact amounts', async () => {
    const start = (await g.client.getBlockNumber({ cacheTime: 0 })) + 1n; // the first block after this point
    const [walletBefore, availableBefore, totalBefore] = await Promise.all([
      g.usdcOf(relayer.address),
      g.view('availableBalance', relayer.address),
      g.view('totalBalance', relayer.address),
    ]);

    const res = await withdraw({ network: 'base-sepolia', amount: '1000000', idempotencyKey: `full-${kind}` });
    expect(res.status).toBe(202);
    const id = `withdrawal:base-sepolia:${relayer.address.toLowerCase()}:full-${kind}`;
    expect(res.body).toEqual({
      id,
      network: 'base-sepolia',
      gatewayWallet: g.wallet,
      token: g.stack.usdc,
      depositor: relayer.address,
      amount: '1000000',
      state: 'initiating',
      initiateTransaction: null,
      withdrawalDelayBlocks: '5',
      withdrawalBlock: null,
      withdrawTransaction: null,
      errorReason: null,
      message: null,
    });

    const waiting = await untilState(id, 'waiting');
    expect(waiting.body.initiateTransaction).toMatch(/^0x[0-9a-f]{64}$/);
    const initReceipt = await g.client.getTransactionReceipt({ hash: waiting.body.initiateTransaction });
    expect(waiting.body.withdrawalBlock).toBe((initReceipt.blockNumber + 5n).toString());
    expect(waiting.body.withdrawalDelayBlocks).toBe('5');
    // Mid-delay: the amount is withdrawing, not withdrawable, and the total is unchanged.
    const mid: JsonResponse = await balances();
    expect(mid.body).toMatchObject({
      availableBalance: (availableBefore - 1_000_000n).toString(),
      withdrawingBalance: '1000000',
      withdrawableBalance: '0',
      totalBalance: totalBefore.toString(),
      withdrawalBlock: waiting.body.withdrawalBlock,
    });
    // A second withdrawal meanwhile would restart this one's delay: refused while it is in progress.
    const busy = await withdraw({ network: 'base-sepolia', amount: '1' });
    expect(busy.status).toBe(409);
    expect(busy.body).toEqual({ type: 'api_error', code: 409, message: `withdrawal ${id} is still in progress on base-sepolia` });

    await mine(5);
    const done = await untilState(id, 'withdrawn');
    expect(done.body).toEqual({
      ...res.body,
      state: 'withdrawn',
      initiateTransaction: waiting.body.initiateTransaction,
      withdrawalBlock: waiting.body.withdrawalBlock,
      withdrawTransaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(await g.usdcOf(relayer.address)).toBe(walletBefore + 1_000_000n);
    const after = await balances();
    expect(after.body).toMatchObject({
      availableBalance: (availableBefore - 1_000_000n).toString(),
      withdrawingBalance: '0',
      withdrawableBalance: '0',
      totalBalance: (totalBefore - 1_000_000n).toString(),
    });
    const events = await withdrawnEvents(start);
    expect(events.map((e) => [e.transactionHash, e.args.value])).toEqual([[done.body.withdrawTransaction, 1_000_000n]]);

    // The same key again is the same withdrawal; a different amount under it is a conflict.
    const repeat = await withdraw({ network: 'base-sepolia', amount: '1000000', idempotencyKey: `full-${kind}` });
    expect(repeat.status).toBe(202);
    expect(repeat.body).toEqual(done.body);
    const reused = await withdraw({ network: 'base-sepolia', amount: '2', idempotencyKey: `full-${kind}` });
    expect(reused.status).toBe(409);

    // Operators find it in Temporal by kind.
    const described = await h.temporal.workflow.getHandle(id).describe();
    expect(described.typedSearchAttributes.get({ name: 'X402Kind', type: 'KEYWORD' } as never)).toBe('withdrawal');
  });

  test("the delay is the contract's: after the owner sets 7 blocks, balances and the withdrawal report 7 and it waits 7", async () => {
    const setDelay = async (blocks: bigint) => {
      const owner = createWalletClient({
        chain: g.client.chain,
        transport: http(rpcUrl),
        account: privateKeyToAccount(DEVNET_GATEWAY_DEPLOYER_KEY),
      });
      await waitForReceipt(
        g.client,
        await owner.writeContract({
          address: g.wallet,
          abi: gatewayWalletAbi,
          functionName: 'setWithdrawalDelay',
          args: [blocks],
          chain: null,
        }),
      );
    };
    await setDelay(7n);
    try {
      expect((await balances()).body.withdrawalDelayBlocks).toBe('7');
      const res = await withdraw({ network: 'base-sepolia', amount: '1000', idempotencyKey: `delay-${kind}` });
      expect(res.status).toBe(202);
      expect(res.body.withdrawalDelayBlocks).toBe('7');
      const waiting = await untilState(res.body.id, 'waiting');
      const initReceipt = await g.client.getTransactionReceipt({ hash: waiting.body.initiateTransaction });
      expect(waiting.body).toMatchObject({ withdrawalDelayBlocks: '7', withdrawalBlock: (initReceipt.blockNumber + 7n).toString() });
      const relayerNonce = await g.client.getTransactionCount({ address: relayer.address });
      await mine(5); // the stack's usual delay is not enough any more
      const height = await g.client.getBlockNumber({ cacheTime: 0 });
      expect(height).toBe(BigInt(waiting.body.withdrawalBlock) - 2n);
      await waitUntil('the workflow to read the new height and wait on', () => waitedOnAfterReading(res.body.id, height), {
        timeoutMs: 30_000,
      });
      expect((await record(res.body.id)).body.state).toBe('waiting');
      expect(await g.client.getTransactionCount({ address: relayer.address })).toBe(relayerNonce); // no withdraw sent
      await mine(2);
      expect((await untilState(res.body.id, 'withdrawn')).body.withdrawalDelayBlocks).toBe('7');
    } finally {
      await setDelay(5n);
    }
  });

  test('bad requests: 400 envelope, nothing started', async () => {
    const available = await g.view('availableBalance', relayer.address);
    const tooMuch = await withdraw({ network: 'base-sepolia', amount: (available + 1n).toString() });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body).toEqual({
      type: 'api_error',
      code: 400,
      message: `amount: exceeds the available balance ${available} in the gateway wallet`,
    });
    const zero = await withdraw({ network: 'base-sepolia', amount: '0' });
    expect(zero.status).toBe(400);
    expect(zero.body.message).toMatch(/^amount: /);
    const unknown = await record('withdrawal:base-sepolia:nope');
    expect(unknown.status).toBe(404);
  });

  test('worker SIGKILLed while waiting for withdrawalBlock: exactly one initiate, one withdraw, one transfer', async () => {
    const start = (await g.client.getBlockNumber({ cacheTime: 0 })) + 1n; // the first block after this point
    const [walletBefore, totalBefore, relayerNonceBefore] = await Promise.all([
      g.usdcOf(relayer.address),
      g.view('totalBalance', relayer.address),
      g.client.getTransactionCount({ address: relayer.address }),
    ]);
    const res = await withdraw({ network: 'base-sepolia', amount: '500000', idempotencyKey: `crash-${kind}` });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    const waiting = await untilState(id, 'waiting');

    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow(); // really gone
    // Still waiting after the restart: the new worker read the chain and went back to its timer, and
    // nothing was sent again.
    const height = await g.client.getBlockNumber({ cacheTime: 0 });
    await waitUntil('the new worker to read the chain and wait on', () => waitedOnAfterReading(id, height, h.worker.child.pid!), {
      timeoutMs: 90_000, // a read the kill cut short is retried after its 60 s start-to-close timeout
    });
    expect((await record(id)).body.state).toBe('waiting');
    expect(await g.client.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);

    await mine(5);
    const done = await untilState(id, 'withdrawn');
    expect(done.body.initiateTransaction).toBe(waiting.body.initiateTransaction);
    expect([waiting.body.withdrawalDelayBlocks, done.body.withdrawalDelayBlocks]).toEqual(['5', '5']);
    expect(await g.client.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 2);
    expect(await g.usdcOf(relayer.address)).toBe(walletBefore + 500_000n);
    expect(await g.view('totalBalance', relayer.address)).toBe(totalBefore - 500_000n);
    const events = await withdrawnEvents(start);
    expect(events.map((e) => [e.transactionHash, e.args.value])).toEqual([[done.body.withdrawTransaction as Hex, 500_000n]]);
    const recorded = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${id}:%` } }, { orderBy: { nonce: 'asc' } });
    expect(recorded.map((r) => [r.id, r.hash, r.status])).toEqual([
      [`${id}:initiate`, waiting.body.initiateTransaction, 'mined'],
      [`${id}:withdraw`, done.body.withdrawTransaction, 'mined'],
    ]);
  });
});
