import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { numberToHex, parseTransaction, type Address, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { rpc, startAnvil, type Anvil } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { buildNetworkTable, type EvmNetwork } from '../../src/chains/networks';
import { Relayer } from '../../src/chains/evm/relayer';
import { SYNC_SEND_TIMEOUT_MS } from '../../src/chains/evm/relayer-broadcasts';
import { RelayerTransaction } from '../../src/db/entities';
import { DB_KINDS, oneDbKind, openTestDatabase, type TestDatabase } from '../support/db';

/**
 * The relayer's repairs on a real anvil of its own (mining modes are changed here, so not the shared
 * chains): a transaction that is underpriced, dropped, stuck behind a dropped one, or whose nonce
 * another transaction took. Each test uses a fresh signer, so nonces start at 0.
 *
 * Databases (README "Tests"): the repairs rewrite the write-ahead record (nonce, hash, the hashes
 * list), find a deleted one, record a gap filler, and let the record's unique id decide between two
 * relayers (each driver's unique-violation error): on both. The receipt waits below count RPC calls
 * and batches; the records they write are the same: on one.
 */
const REPLACE_AFTER_MS = 1_000;
const GWEI = 1_000_000_000n;
/** A fee ceiling above the 1,000 gwei base fee the underpriced test sets, which later blocks decay from (the ceiling has its own test). */
const CEILING = (100_000n * GWEI).toString();

let anvil: Anvil;
let network: EvmNetwork;

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 84532, log: () => undefined });
  network = buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: anvil.rpcUrl, MAX_FEE_PER_GAS_BASE_SEPOLIA: CEILING }).get('base-sepolia')!;
});
afterAll(() => anvil?.stop());

describe.each(DB_KINDS)('relayer hygiene (%s)', (kind) => {
  let tdb: TestDatabase;
  let account: PrivateKeyAccount;
  let relayer: Relayer;
  let client: PublicClient;

  beforeAll(async () => {
    tdb = await openTestDatabase(kind);
  });
  afterAll(() => tdb?.close());

  beforeEach(async () => {
    account = privateKeyToAccount(generatePrivateKey());
    await rpc(anvil.rpcUrl, 'anvil_setBalance', [account.address, numberToHex(10n ** 20n)]);
    relayer = new Relayer(network, account, tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    client = relayer.client;
    // Transactions stay in the pool until a test mines them.
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [0]);
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [false]);
  });
  afterEach(async () => {
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [0]);
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [true]);
  });

  const fresh = () => privateKeyToAccount(generatePrivateKey()).address;
  const record = async (id: string) => (await tdb.db.em.fork().findOne(RelayerTransaction, { id }))!;
  const nonceUsed = () => client.getTransactionCount({ address: account.address, blockTag: 'latest' });

  test('an underpriced transaction is replaced with the same nonce and fees raised ≥ 10%; the replacement’s receipt counts', async () => {
    const to = fresh();
    const { hash: first } = await relayer.send('underpriced', { to, data: '0x' });
    const original = await client.getTransaction({ hash: first });
    // The next block's base fee is far above what the transaction offers, so it is left out.
    await rpc(anvil.rpcUrl, 'anvil_setNextBlockBaseFeePerGas', [numberToHex(1000n * GWEI)]);
    await rpc(anvil.rpcUrl, 'evm_mine', []);
    expect(await nonceUsed()).toBe(0);
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1]);

    const receipt = await relayer.waitForReceipt(await record('underpriced'), 20_000);

    expect(receipt?.status).toBe('success');
    expect(receipt!.transactionHash).not.toBe(first);
    const mined = await client.getTransaction({ hash: receipt!.transactionHash });
    expect(mined.nonce).toBe(0);
    expect(mined.to?.toLowerCase()).toBe(to.toLowerCase());
    expect(mined.maxFeePerGas! * 10n).toBeGreaterThanOrEqual(original.maxFeePerGas! * 11n);
    expect(mined.maxPriorityFeePerGas! * 10n).toBeGreaterThanOrEqual(original.maxPriorityFeePerGas! * 11n);
    const rec = await record('underpriced');
    expect(rec.status).toBe('mined');
    expect(rec.hash).toBe(receipt!.transactionHash);
    expect(Relayer.hashesOf(rec)).toEqual(expect.arrayContaining([first, receipt!.transactionHash]));
    expect(await nonceUsed()).toBe(1);
  });

  test('a dropped transaction is sent again with the same bytes', async () => {
    const { hash } = await relayer.send('dropped', { to: fresh(), data: '0x' });
    await rpc(anvil.rpcUrl, 'anvil_dropTransaction', [hash]);
    await expect(client.getTransaction({ hash })).rejects.toThrow();
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [true]);

    const receipt = await relayer.waitForReceipt(await record('dropped'), 20_000);

    expect(receipt?.transactionHash).toBe(hash);
    expect(receipt?.status).toBe('success');
    expect(await nonceUsed()).toBe(1);
  });

  test('a gap left by a dropped transaction is filled by the wait of a later one', async () => {
    const a = await relayer.send('gap-a', { to: fresh(), data: '0x' });
    const b = await relayer.send('gap-b', { to: fresh(), data: '0x' });
    await rpc(anvil.rpcUrl, 'anvil_dropTransaction', [a.hash]);
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1]);
    await rpc(anvil.rpcUrl, 'evm_mine', []);
    expect(await nonceUsed()).toBe(0); // b waits behind the missing nonce 0

    const receipt = await relayer.waitForReceipt(await record('gap-b'), 20_000);

    expect(receipt?.status).toBe('success');
    expect(receipt!.transactionHash).toBe(b.hash); // b itself was not replaced: only the gap was the trouble
    expect((await client.getTransaction({ hash: b.hash })).nonce).toBe(1);
    expect((await client.getTransactionReceipt({ hash: a.hash })).status).toBe('success'); // a's own bytes, re-sent
    expect(await nonceUsed()).toBe(2);
  });

  test('a gap with no record at all is filled with a zero-value transfer to ourselves', async () => {
    const a = await relayer.send('lost-a', { to: fresh(), data: '0x' });
    const b = await relayer.send('lost-b', { to: fresh(), data: '0x' });
    await rpc(anvil.rpcUrl, 'anvil_dropTransaction', [a.hash]);
    await tdb.db.em.fork().nativeDelete(RelayerTransaction, { id: 'lost-a' }); // as if nonce 0 was never recorded
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1]);

    const receipt = await relayer.waitForReceipt(await record('lost-b'), 20_000);

    expect(receipt?.transactionHash).toBe(b.hash);
    const filler = await record(`gap:84532:${account.address.toLowerCase()}:0`);
    const fill = await client.getTransaction({ hash: filler.hash as Hex });
    expect({ nonce: fill.nonce, to: fill.to?.toLowerCase(), value: fill.value }).toEqual({
      nonce: 0,
      to: account.address.toLowerCase(),
      value: 0n,
    });
    expect((await client.getTransactionReceipt({ hash: filler.hash as Hex })).status).toBe('success');
    await expect(client.getTransactionReceipt({ hash: a.hash })).rejects.toThrow(); // the lost one never ran
    expect(await nonceUsed()).toBe(2);
  });

  test('“nonce too low” is never taken as ours: when another transaction used the nonce, the call is signed again with a new one', async () => {
    const to = fresh();
    const { hash: ours } = await relayer.send('taken', { to, data: '0x1234' });
    const pending = await client.getTransaction({ hash: ours });
    // Someone else with this key takes nonce 0 (outbid in the pool, then mined).
    const other = fresh();
    const foreign = await account.signTransaction({
      chainId: 84532,
      type: 'eip1559',
      to: other as Address,
      value: 1n,
      nonce: 0,
      gas: 21_000n,
      maxFeePerGas: pending.maxFeePerGas! * 2n,
      maxPriorityFeePerGas: pending.maxPriorityFeePerGas! * 2n,
    });
    await client.sendRawTransaction({ serializedTransaction: foreign });
    await rpc(anvil.rpcUrl, 'evm_mine', []);
    expect(await nonceUsed()).toBe(1);
    await expect(client.getTransactionReceipt({ hash: ours })).rejects.toThrow();
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [true]);

    const receipt = await relayer.waitForReceipt(await record('taken'), 20_000);

    expect(receipt?.status).toBe('success');
    expect(receipt!.transactionHash).not.toBe(ours);
    const mined = await client.getTransaction({ hash: receipt!.transactionHash });
    expect({ nonce: mined.nonce, to: mined.to?.toLowerCase(), input: mined.input }).toEqual({
      nonce: 1,
      to: to.toLowerCase(),
      input: '0x1234',
    });
    const rec = await record('taken');
    expect({ nonce: rec.nonce, hash: rec.hash, status: rec.status }).toEqual({ nonce: 1, hash: receipt!.transactionHash, status: 'mined' });
    expect(await nonceUsed()).toBe(2);
  });

  test('an absence this relayer saw is not trusted over the record: an effect recorded meanwhile elsewhere is used, not sent again', async () => {
    // The relayer remembers that it found no record (a settlement's verification looks, then send).
    expect(await relayer.find('elsewhere')).toBeNull();
    // Meanwhile another process with this key records and sends the same effect.
    const other = new Relayer(network, account, tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    const call = { to: fresh(), data: '0x' } as const;
    const { hash } = await other.send('elsewhere', call);

    // The record's unique id decides: the other transaction, and nothing broadcast for a second nonce.
    expect(await relayer.send('elsewhere', call)).toEqual({ hash, reused: true });
    expect(await client.getTransactionCount({ address: account.address, blockTag: 'pending' })).toBe(1);
    expect(await relayer.find('elsewhere')).toMatchObject({ hash, nonce: 0, status: 'signed' });
  });
});

/**
 * Where blocks take time (anvil mining every second), waiting transactions ask for their receipt once
 * per new block and share one head poll: counted by a JSON-RPC proxy in front of the chain.
 */
describe.each(oneDbKind('postgres'))('receipt waits with 1 s blocks (%s)', (kind) => {
  let tdb: TestDatabase;
  let proxy: Server;
  const calls = new Map<string, number>();
  const counted = (method: string) => calls.get(method) ?? 0;
  /** Answer `eth_sendRawTransactionSync` as a node without EIP-7966 does (geth's words). */
  let withoutSync = false;
  /** While set, every `eth_sendRawTransaction` waits for it before it reaches the node (a slow node). */
  let holdSends: Promise<void> | undefined;
  let releaseSends = () => {};
  /** The nonce whose `eth_sendRawTransaction` the node refuses (as for a balance it no longer has). */
  let refuseNonce: number | undefined;
  /** The nonces of the `eth_sendRawTransaction` calls that reached the node, in the order they did. */
  const sentNonces: number[] = [];
  /** How many `eth_sendRawTransaction` calls each request that had any carried (a JSON-RPC batch carries several). */
  const sendsPerRequest: number[] = [];
  /** Answer every JSON-RPC batch with one error, as a provider without batches does. */
  let refuseBatches = false;

  beforeAll(async () => {
    tdb = await openTestDatabase(kind);
    proxy = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', async () => {
        type Call = { id: number; method: string; params: unknown[] };
        const parsed = JSON.parse(body) as Call | Call[];
        const answer = (reply: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
        const all = [parsed].flat();
        for (const { method } of all) calls.set(method, counted(method) + 1);
        // Answered here instead of by the node: refused sends, and the synchronous method where "absent".
        const answers = new Map<Call, object>();
        const sends = all.filter((c) => c.method === 'eth_sendRawTransaction');
        if (sends.length > 0) {
          sendsPerRequest.push(sends.length);
          await holdSends;
          if (refuseBatches && Array.isArray(parsed)) {
            const error = { code: -32600, message: 'batch requests are not supported' };
            return answer({ jsonrpc: '2.0', id: null, error });
          }
          for (const call of sends) {
            const nonce = parseTransaction(call.params[0] as Hex).nonce!;
            if (nonce === refuseNonce) answers.set(call, { code: -32003, message: 'insufficient funds for gas * price + value' });
            else sentNonces.push(nonce);
          }
        }
        for (const call of all) {
          if (withoutSync && call.method === 'eth_sendRawTransactionSync') {
            answers.set(call, { code: -32601, message: 'the method eth_sendRawTransactionSync does not exist/is not available' });
          }
        }
        const onward = all.filter((c) => !answers.has(c));
        const forwarded = JSON.stringify(Array.isArray(parsed) ? onward : onward[0]);
        const upstream =
          onward.length === 0
            ? []
            : await fetch(anvil.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: forwarded }).then((r) =>
                r.json(),
              );
        const replies = new Map<number, unknown>([upstream as { id: number }[]].flat().map((r) => [r.id, r]));
        for (const [call, error] of answers) replies.set(call.id, { jsonrpc: '2.0', id: call.id, error });
        const reply = all.map((c) => replies.get(c.id));
        answer(Array.isArray(parsed) ? reply : reply[0]);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    await new Promise((r) => proxy?.close(r));
    await tdb?.close();
  });
  afterEach(async () => {
    withoutSync = false;
    releaseSends(); // a test that failed while holding them must not leave requests hanging
    holdSends = undefined;
    refuseNonce = undefined;
    sentNonces.length = 0;
    sendsPerRequest.length = 0;
    refuseBatches = false;
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [0]);
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [true]);
  });

  const counting = () => {
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    return buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: url, MAX_FEE_PER_GAS_BASE_SEPOLIA: CEILING }).get('base-sepolia')!;
  };
  const funded = async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    await rpc(anvil.rpcUrl, 'anvil_setBalance', [account.address, numberToHex(10n ** 20n)]);
    return account;
  };
  const to = () => privateKeyToAccount(generatePrivateKey()).address;
  const record = async (id: string) => (await tdb.db.em.fork().findOne(RelayerTransaction, { id }))!;
  /** A relayer that has seen receipts take a block: five waits, one after another. */
  const warmed = async (prefix: string) => {
    const relayer = new Relayer(counting(), await funded(), tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    for (let i = 0; i < 5; i++) {
      await relayer.send(`${prefix}-warm-${i}`, { to: to(), data: '0x' });
      expect((await relayer.waitForReceipt(await record(`${prefix}-warm-${i}`), 20_000))?.status).toBe('success');
    }
    return relayer;
  };

  // How many reads these waits cost per block is a measurement of the host's pace, not a property a
  // test can hold on a loaded machine: `npm run bench:receipt-polls` reports it (bench/README.md).
  test('eight transactions waiting together on 1 s blocks each get their own receipt', async () => {
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1]);
    const relayer = await warmed(`${kind}-shared`);
    const ids = Array.from({ length: 8 }, (_, i) => `${kind}-shared-${i}`);
    const hashes: Hex[] = [];
    for (const id of ids) hashes.push((await relayer.send(id, { to: to(), data: '0x' })).hash);

    const receipts = await Promise.all(ids.map(async (id) => relayer.waitForReceipt(await record(id), 20_000)));

    expect(receipts.map((r) => r?.transactionHash)).toEqual(hashes);
    expect(receipts.map((r) => r?.status)).toEqual(ids.map(() => 'success'));
    expect((await Promise.all(ids.map(record))).map((r) => r.status)).toEqual(ids.map(() => 'mined'));
  });

  test('one simulation per transaction: send takes the simulation of the same call, and estimates another call afresh', async () => {
    const relayer = new Relayer(counting(), await funded(), tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    const call = { to: to(), data: '0x' as Hex };
    calls.clear();

    expect(await relayer.simulate(`${kind}-sim`, call)).toBe(21_000n);
    const { hash } = await relayer.send(`${kind}-sim`, call);
    expect(counted('eth_estimateGas')).toBe(1);

    await relayer.simulate(`${kind}-sim-other`, call);
    await relayer.send(`${kind}-sim-other`, { ...call, to: to() });
    expect(counted('eth_estimateGas')).toBe(3);

    // The record it just signed answers the receipt wait's lookup: the same transaction, mined.
    const receipt = await relayer.waitForReceipt((await relayer.find(`${kind}-sim`))!, 20_000);
    expect(receipt?.transactionHash).toBe(hash);
    expect((await record(`${kind}-sim`)).status).toBe('mined');
  });

  test('a transaction dropped while waiting per block is sent again with the same bytes', async () => {
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1]);
    const relayer = await warmed(`${kind}-drop`);
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [0]);
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [false]);
    const { hash } = await relayer.send(`${kind}-drop`, { to: to(), data: '0x' });
    await rpc(anvil.rpcUrl, 'anvil_dropTransaction', [hash]);
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [true]);
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1]);

    const receipt = await relayer.waitForReceipt(await record(`${kind}-drop`), 20_000);

    expect(receipt?.transactionHash).toBe(hash);
    expect(receipt?.status).toBe('success');
    expect((await record(`${kind}-drop`)).status).toBe('mined');
  });

  /**
   * A relayer that has learnt that the node mines at once: its first transaction goes plainly, and
   * once transactions are found mined within 50 ms of their broadcast on average, the next go
   * synchronously. On a loaded host a round trip through the proxy alone can take longer than that, so
   * the clock (Date, nothing else) stands still while it learns: the first receipt then counts as found
   * at once, and the second send is synchronous whatever the host's pace. The tests below are about
   * what the relayer does once it has learnt, not about how fast this machine is.
   */
  const paced = async (prefix: string, opts = { replaceAfterMs: REPLACE_AFTER_MS }) => {
    const relayer = new Relayer(counting(), await funded(), tdb.db, opts);
    calls.clear();
    const sendAndWait = async (id: string) => {
      await relayer.send(id, { to: to(), data: '0x' });
      expect((await relayer.waitForReceipt(await record(id), 20_000))?.status).toBe('success');
      return [counted('eth_sendRawTransactionSync'), counted('eth_sendRawTransaction')];
    };
    // Every fakeable API but Date: timers, I/O and promises run as usual.
    jest.useFakeTimers({
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'requestAnimationFrame',
        'cancelAnimationFrame',
        'requestIdleCallback',
        'cancelIdleCallback',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    try {
      expect(await sendAndWait(`${prefix}-pace-0`)).toEqual([0, 1]);
      // Synchronous; where the node has no such method, refused and then sent plainly.
      expect(await sendAndWait(`${prefix}-pace-1`)).toEqual([1, withoutSync ? 2 : 1]);
    } finally {
      jest.useRealTimers();
    }
    calls.clear();
    return relayer;
  };

  test('where the node mines at once, the broadcast answers with the receipt and the wait asks for none', async () => {
    const relayer = await paced(`${kind}-sync`);

    const { hash } = await relayer.send(`${kind}-sync`, { to: to(), data: '0x' });
    const receipt = await relayer.waitForReceipt((await relayer.find(`${kind}-sync`))!, 20_000);

    expect(receipt?.transactionHash).toBe(hash);
    expect(receipt?.status).toBe('success');
    expect((await record(`${kind}-sync`)).status).toBe('mined');
    expect(counted('eth_sendRawTransactionSync')).toBe(1);
    expect(counted('eth_sendRawTransaction')).toBe(0);
    expect(counted('eth_getTransactionReceipt')).toBe(0);
  });

  test('a node that does not mine holds a synchronous broadcast only until its bound; the sends after it are plain', async () => {
    const relayer = await paced(`${kind}-held`, { replaceAfterMs: 60_000 });
    await rpc(anvil.rpcUrl, 'evm_setAutomine', [false]);
    const started = Date.now();
    const a = await relayer.send(`${kind}-held-a`, { to: to(), data: '0x' });
    // Held for the bound, and answered while the node still mines nothing (the counts below): the
    // send never waits for the block itself.
    expect(Date.now() - started).toBeGreaterThanOrEqual(SYNC_SEND_TIMEOUT_MS);
    // Sent again plainly after the bound ("already known": the node holds it once, unmined).
    expect(counted('eth_sendRawTransactionSync')).toBe(1);
    expect(counted('eth_sendRawTransaction')).toBe(1);
    const mined = await relayer.client.getTransactionCount({ address: relayer.address, blockTag: 'latest' });
    expect(await relayer.client.getTransactionCount({ address: relayer.address, blockTag: 'pending' })).toBe(mined + 1);

    calls.clear();
    const b = await relayer.send(`${kind}-held-b`, { to: to(), data: '0x' });
    expect(counted('eth_sendRawTransactionSync')).toBe(0);
    expect(counted('eth_sendRawTransaction')).toBe(1);

    await rpc(anvil.rpcUrl, 'evm_mine', []);
    const receipts = await Promise.all(
      [`${kind}-held-a`, `${kind}-held-b`].map(async (id) => relayer.waitForReceipt(await record(id), 20_000)),
    );
    expect(receipts.map((r) => r?.transactionHash)).toEqual([a.hash, b.hash]);
    expect(receipts.map((r) => r?.status)).toEqual(['success', 'success']);
  });

  /** A relayer that has not learnt the node's pace (its broadcasts are plain), with the proxy holding every broadcast. */
  const holdingBroadcasts = async () => {
    holdSends = new Promise((r) => (releaseSends = r));
    return new Relayer(counting(), await funded(), tdb.db, { replaceAfterMs: 60_000 });
  };

  /** The nonces of `ids`' records, once all are signed and a broadcast has reached the (holding) proxy. */
  const recordedWhileHeld = (ids: string[]) =>
    waitUntil(
      `${ids.length} recorded transactions while the first broadcast is held`,
      async () => {
        const rows = await Promise.all(ids.map((id) => tdb.db.em.fork().findOne(RelayerTransaction, { id })));
        const all = rows.every((r) => r?.status === 'signed') && counted('eth_sendRawTransaction') > 0;
        return all ? rows.map((r) => r!.nonce) : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 20 },
    );

  test('a slow broadcast holds up only the broadcasts after it: the next transactions are signed and recorded meanwhile, then go out together in nonce order', async () => {
    const relayer = await holdingBroadcasts();
    calls.clear();

    const ids = [0, 1, 2].map((i) => `${kind}-order-${i}`);
    const sends = ids.map((id) => relayer.send(id, { to: to(), data: '0x' }));
    // Recorded (write-ahead) while the first broadcast is still held; the other two wait behind it.
    const recorded = await recordedWhileHeld(ids);
    expect(counted('eth_sendRawTransaction')).toBe(1);
    expect(sentNonces).toEqual([]);

    releaseSends();
    const sent = await Promise.all(sends);
    const first = Math.min(...recorded);
    expect([...recorded].sort((a, b) => a - b)).toEqual([first, first + 1, first + 2]);
    expect(sentNonces).toEqual([first, first + 1, first + 2]);
    // The two that waited went in one JSON-RPC batch.
    expect(sendsPerRequest).toEqual([1, 2]);
    const receipts = await Promise.all(ids.map(async (id) => relayer.waitForReceipt(await record(id), 20_000)));
    expect(receipts.map((r) => r?.transactionHash)).toEqual(sent.map((s) => s.hash));
    expect(receipts.map((r) => r?.status)).toEqual(['success', 'success', 'success']);
  });

  test('a refused broadcast fails only its own send (asked again alone): the one batched with it still goes out, in nonce order', async () => {
    const relayer = await holdingBroadcasts();
    const ids = [0, 1, 2].map((i) => `${kind}-refused-${i}`);
    const calls = new Map(ids.map((id) => [id, { to: to(), data: '0x' as const }]));
    const sends = ids.map((id) =>
      relayer.send(id, calls.get(id)!).then(
        (s) => s.hash,
        (err: unknown) => err,
      ),
    );
    const nonces = await recordedWhileHeld(ids);
    const first = Math.min(...nonces);
    const refused = ids[nonces.indexOf(first + 1)]!;
    refuseNonce = first + 1;
    releaseSends();
    const results = await Promise.all(sends);

    // The refusal reaches the send it belongs to; the broadcast batched with it still went out.
    ids.forEach((id, i) => {
      if (id === refused) expect(String(results[i])).toMatch(/insufficient funds/i);
      else expect(results[i]).toMatch(/^0x[0-9a-f]{64}$/);
    });
    expect(sentNonces).toEqual([first, first + 2]);
    expect(sendsPerRequest).toEqual([1, 2, 1]);

    // Its retry (the activity's) re-sends the recorded bytes; then all three are mined.
    refuseNonce = undefined;
    const retried = await relayer.send(refused, calls.get(refused)!);
    expect(retried).toEqual({ hash: (await record(refused)).hash, reused: true });
    await rpc(anvil.rpcUrl, 'evm_mine', []);
    const receipts = await Promise.all(ids.map(async (id) => relayer.waitForReceipt(await record(id), 20_000)));
    expect(receipts.map((r) => r?.status)).toEqual(['success', 'success', 'success']);
  });

  test('a provider that refuses JSON-RPC batches: the broadcasts of the refused batch go again one by one, in nonce order', async () => {
    const relayer = await holdingBroadcasts();
    refuseBatches = true;
    const ids = [0, 1, 2].map((i) => `${kind}-unbatched-${i}`);
    const sends = ids.map((id) => relayer.send(id, { to: to(), data: '0x' }));
    const recorded = await recordedWhileHeld(ids);
    releaseSends();
    const sent = await Promise.all(sends);

    // The first alone, the refused batch of two, then those two alone, one after the other.
    expect(sendsPerRequest).toEqual([1, 2, 1, 1]);
    const first = Math.min(...recorded);
    expect(sentNonces).toEqual([first, first + 1, first + 2]);
    const receipts = await Promise.all(ids.map(async (id) => relayer.waitForReceipt(await record(id), 20_000)));
    expect(receipts.map((r) => r?.transactionHash)).toEqual(sent.map((s) => s.hash));
    expect(receipts.map((r) => r?.status)).toEqual(['success', 'success', 'success']);
  });

  test('a node without eth_sendRawTransactionSync: the transaction is sent plainly, and the method is not asked again', async () => {
    withoutSync = true;
    // Learning the pace ends with the one synchronous ask, refused and sent plainly (checked below).
    const relayer = await paced(`${kind}-plain`);

    for (let i = 0; i < 3; i++) {
      const { hash } = await relayer.send(`${kind}-plain-${i}`, { to: to(), data: '0x' });
      const receipt = await relayer.waitForReceipt(await record(`${kind}-plain-${i}`), 20_000);
      expect(receipt?.transactionHash).toBe(hash);
      expect(receipt?.status).toBe('success');
    }
    expect(counted('eth_sendRawTransactionSync')).toBe(0);
    expect(counted('eth_sendRawTransaction')).toBe(3);
  });
});
