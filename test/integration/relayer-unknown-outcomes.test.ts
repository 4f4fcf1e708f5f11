import { createWalletClient, http, numberToHex, parseTransaction, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { rpc, startAnvil, type Anvil } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { startRpcProviderDouble, type RpcProviderDouble } from '../../devnet/rpc-provider-double';
import { buildNetworkTable, type EvmNetwork } from '../../src/chains/networks';
import { publicClientFor } from '../../src/chains/evm/clients';
import { RecordedCallMismatch, Relayer } from '../../src/chains/evm/relayer';
import { RelayerTransaction } from '../../src/db/entities';
import { sendTransferOnce, transferOnceNonce } from '../../activities/transfer-once';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind, openTestDatabase, type TestDatabase } from '../support/db';
import { readStackInfo } from '../support/stack-info';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * A hosted provider's bad days (devnet/rpc-provider-double.ts in front of the shared base-sepolia
 * anvil): the relayer never takes an unanswered question for "not mined", and a transfer it signs
 * moves money once whatever is broadcast. Each test uses a fresh relayer key, so its nonces start at 0.
 * One database (README "Tests"): the faults are the provider's; the relayer's records are read and
 * written as in relayer-hygiene's repairs, which run on both.
 */
const REPLACE_AFTER_MS = 300;
const GWEI = 1_000_000_000n;

const stack = readStackInfo();
const anvilUrl = stack.chains['base-sepolia'].rpcUrl;
const chain = publicClientFor(buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: anvilUrl }).get('base-sepolia')!);
const usdcOf = (address: Address) => chain.readContract({ address: stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [address] });
const nonceOf = (address: Address) => chain.getTransactionCount({ address, blockTag: 'latest' });
const fresh = () => privateKeyToAccount(generatePrivateKey()).address;

/** A fresh key with gas money and `usdc` of USDC (from a funded buyer). */
async function funded(usdc = 0n): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await rpc(anvilUrl, 'anvil_setBalance', [account.address, numberToHex(10n ** 20n)]);
  if (usdc > 0n) {
    const buyer = createWalletClient({ account: TEST_ACCOUNTS.buyers[4], transport: http(anvilUrl) });
    const hash = await buyer.writeContract({
      chain: null,
      address: stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [account.address, usdc],
    });
    await chain.waitForTransactionReceipt({ hash });
  }
  return account;
}

describe.each(oneDbKind('postgres'))('relayer under a misbehaving provider (%s)', (kind) => {
  let tdb: TestDatabase;
  let provider: RpcProviderDouble;
  let network: EvmNetwork;

  beforeAll(async () => {
    tdb = await openTestDatabase(kind);
  });
  afterAll(() => tdb?.close());
  beforeEach(async () => {
    // Like most hosted providers: no eth_sendRawTransactionSync, so every send is plain.
    provider = await startRpcProviderDouble({ upstream: anvilUrl, seed: 7, noSyncSend: true });
    network = buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: provider.url }).get('base-sepolia')!;
  });
  afterEach(() => provider?.stop());

  const record = async (id: string) => (await tdb.db.em.fork().findOne(RelayerTransaction, { id }))!;
  /** Receipt lookups answered 429 until at least `repairs` repair windows have passed and the relayer asked `min` times. */
  const receiptsRateLimited = async (min: number, repairs: number) => {
    const from = Date.now();
    provider.setRules([{ methods: ['eth_getTransactionReceipt'], fault: 'rate-limit-429', probability: 1, retryAfterSeconds: 0 }]);
    const limited = () => provider.calls.filter((c) => c.method === 'eth_getTransactionReceipt' && c.fault === 'rate-limit-429').length;
    return {
      /** Ends the window once it held; returns how many lookups were refused. */
      async end(): Promise<number> {
        await waitUntil('the 429 window', async () => limited() >= min && Date.now() - from >= repairs * REPLACE_AFTER_MS, {
          timeoutMs: 30_000,
          intervalMs: 20,
        });
        provider.setRules([]);
        return limited();
      },
    };
  };

  test('receipts answered 429 while repairs fall due: a mined plain call is never signed again (one nonce, one transfer)', async () => {
    const account = await funded();
    const relayer = new Relayer(network, account, tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    const to = fresh();
    const { hash } = await relayer.send('mined-unseen', { to, data: '0x' });
    // anvil mines at once: the transaction is in a block before the provider starts refusing.
    expect((await chain.waitForTransactionReceipt({ hash })).status).toBe('success');
    const window = await receiptsRateLimited(30, 5);

    const waiting = relayer.waitForReceipt(await record('mined-unseen'), 60_000);
    const refused = await window.end();
    const receipt = await waiting;

    expect(refused).toBeGreaterThanOrEqual(30);
    expect(receipt?.transactionHash).toBe(hash);
    expect(await nonceOf(account.address)).toBe(1); // no second transaction at a new nonce
    expect(await record('mined-unseen')).toMatchObject({ hash, nonce: 0, status: 'mined', hashes: null });
    // Nothing else was ever broadcast for it.
    expect(provider.calls.filter((c) => c.method.startsWith('eth_sendRawTransaction')).map((c) => c.hash)).toEqual([hash]);
  });

  test('a refund under the same faults moves its USDC once, and its record names the transaction that paid', async () => {
    const amount = 10_000n;
    const account = await funded(amount * 3n);
    const relayer = new Relayer(network, account, tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    const payee = fresh();
    const hash = await sendTransferOnce(relayer, 'refund:unseen', stack.usdc, payee, amount);
    expect((await chain.waitForTransactionReceipt({ hash })).status).toBe('success');
    const window = await receiptsRateLimited(30, 5);

    const waiting = relayer.waitForReceipt(await record('refund:unseen'), 60_000);
    await window.end();
    const receipt = await waiting;

    expect(receipt).toMatchObject({ transactionHash: hash, status: 'success' });
    expect(await usdcOf(payee)).toBe(amount);
    expect(await usdcOf(account.address)).toBe(amount * 2n);
    expect(await nonceOf(account.address)).toBe(1);
  });

  test('a second broadcast of a keyed transfer, at another nonce or by another key, reverts and moves nothing', async () => {
    const amount = 25_000n;
    const account = await funded(amount * 4n);
    const relayer = new Relayer(network, account, tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    const payee = fresh();
    const hash = await sendTransferOnce(relayer, 'refund:twice', stack.usdc, payee, amount);
    expect((await chain.waitForTransactionReceipt({ hash })).status).toBe('success');
    const { input } = await chain.getTransaction({ hash });
    expect(
      await chain.readContract({
        address: stack.usdc,
        abi: tokenAbi,
        functionName: 'authorizationState',
        args: [account.address, transferOnceNonce('refund:twice')],
      }),
    ).toBe(true);

    // The same call at the next nonce of the same key, and from an unrelated key: both revert.
    const sendRaw = async (from: PrivateKeyAccount) => {
      const wallet = createWalletClient({ account: from, transport: http(anvilUrl) });
      const h = await wallet.sendTransaction({ chain: null, to: stack.usdc, data: input, gas: 200_000n });
      return (await chain.waitForTransactionReceipt({ hash: h })).status;
    };
    expect(await sendRaw(account)).toBe('reverted');
    expect(await sendRaw(await funded())).toBe('reverted');
    // A retry of the effect itself re-sends the recorded bytes: the same hash.
    expect(await sendTransferOnce(relayer, 'refund:twice', stack.usdc, payee, amount)).toBe(hash);

    expect(await usdcOf(payee)).toBe(amount);
    expect(await usdcOf(account.address)).toBe(amount * 3n);
  });

  test('a record of another call under the same id is never adopted', async () => {
    const account = await funded();
    const relayer = new Relayer(network, account, tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    const first = { to: fresh(), data: '0x01' as Hex };
    const { hash } = await relayer.send('reused-id', first);

    await expect(relayer.send('reused-id', { to: first.to, data: '0x02' })).rejects.toThrow(RecordedCallMismatch);
    await expect(relayer.send('reused-id', { to: fresh(), data: '0x01' })).rejects.toThrow(RecordedCallMismatch);
    expect(await relayer.send('reused-id', first)).toEqual({ hash, reused: true });
    expect(await nonceOf(account.address)).toBe(1);
  });

  test('a replica lagging behind during a repair: the spent nonce is not re-signed while the mined block is out of its sight', async () => {
    const account = await funded();
    const relayer = new Relayer(network, account, tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    const { hash } = await relayer.send('lagging', { to: fresh(), data: '0x' });
    const mined = await chain.waitForTransactionReceipt({ hash });
    // Blocks after ours, so that a replica 3 behind knows the head moved but not our block.
    for (let i = 0; i < 3; i++) await rpc(anvilUrl, 'evm_mine', []);
    // The receipt and block reads come from the lagging replica; the latest nonce count from the head.
    provider.setRules([
      { methods: ['eth_getTransactionReceipt', 'eth_getBlockByNumber', 'eth_blockNumber'], fault: 'lag', probability: 1, lagBlocks: 4 },
    ]);
    expect(await relayer.client.getTransactionReceipt({ hash }).catch((e: Error) => e.name)).toBe('TransactionReceiptNotFoundError');

    const waiting = relayer.waitForReceipt(await record('lagging'), 60_000);
    // The send asked for the pending count once; each repair since asks for the latest.
    const counts = () => provider.calls.filter((c) => c.method === 'eth_getTransactionCount').length;
    await waitUntil('three repairs under the lag', async () => counts() >= 4, { timeoutMs: 30_000, intervalMs: 20 });
    provider.setRules([]);
    const receipt = await waiting;

    expect(receipt).toMatchObject({ transactionHash: hash, blockNumber: mined.blockNumber });
    expect(await nonceOf(account.address)).toBe(1);
    expect(await record('lagging')).toMatchObject({ hash, status: 'mined', hashes: null });
  });
});

/** A chain of the describe's own (its blocks and base fee are the tests'), mining only when told, and a SQLite database. */
function ownChain() {
  const own = {} as { tdb: TestDatabase; anvil: Anvil; funded(): Promise<PrivateKeyAccount> };
  beforeAll(async () => {
    [own.tdb, own.anvil] = await Promise.all([openTestDatabase('sqlite'), startAnvil({ chainId: 84532, log: () => undefined })]);
    await rpc(own.anvil.rpcUrl, 'evm_setAutomine', [false]);
  });
  afterAll(async () => {
    await own.anvil?.stop();
    await own.tdb?.close();
  });
  own.funded = async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    await rpc(own.anvil.rpcUrl, 'anvil_setBalance', [account.address, numberToHex(10n ** 20n)]);
    return account;
  };
  return own;
}

describe('the fee ceiling', () => {
  // Its own chain: blocks here carry a base fee far above the ceiling.
  const own = ownChain();

  test('replacement bumps stop at MAX_FEE_PER_GAS_<NET>: at the ceiling the transaction waits, re-sent, never bumped past it', async () => {
    const ceiling = 3n * GWEI;
    const env = { RPC_URLS_BASE_SEPOLIA: own.anvil.rpcUrl, MAX_FEE_PER_GAS_BASE_SEPOLIA: ceiling.toString() };
    const network = buildNetworkTable(env).get('base-sepolia')!;
    const account = await own.funded();
    const relayer = new Relayer(network, account, own.tdb.db, { replaceAfterMs: REPLACE_AFTER_MS });
    const { hash } = await relayer.send('ceiling', { to: fresh(), data: '0x' });
    const first = await relayer.client.getTransaction({ hash });
    expect(first.maxFeePerGas! < ceiling).toBe(true);
    // From the next block on, the base fee is far above the ceiling: the transaction is never included.
    await rpc(own.anvil.rpcUrl, 'anvil_setNextBlockBaseFeePerGas', [numberToHex(50n * GWEI)]);
    await rpc(own.anvil.rpcUrl, 'evm_mine', []);
    const stored = () => own.tdb.db.em.fork().findOne(RelayerTransaction, { id: 'ceiling' });

    let repairs = 0;
    const receipt = await relayer.waitForReceipt((await stored())!, 10 * REPLACE_AFTER_MS, () => repairs++);

    expect(receipt).toBeNull();
    expect(repairs).toBeGreaterThan(0);
    const rec = (await stored())!;
    // One replacement, up to the ceiling exactly; the later repairs found nothing more to offer.
    expect(Relayer.hashesOf(rec)).toHaveLength(2);
    const latest = parseTransaction(rec.rawTx as Hex) as { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint; nonce: number };
    expect({ nonce: latest.nonce, maxFeePerGas: latest.maxFeePerGas }).toEqual({ nonce: 0, maxFeePerGas: ceiling });
    expect(latest.maxPriorityFeePerGas <= ceiling).toBe(true);
    expect(await anvilNonce(own.anvil.rpcUrl, account.address)).toBe(0);
  });
});

describe('reorgs', () => {
  const own = ownChain();

  test('a mined transaction that a reorg removes within CONFIRMATION_DEPTH is sent again with the same bytes, and counts only once final again', async () => {
    const env = { RPC_URLS_BASE_SEPOLIA: own.anvil.rpcUrl, CONFIRMATION_DEPTH_BASE_SEPOLIA: '2' };
    const network = buildNetworkTable(env).get('base-sepolia')!;
    const account = await own.funded();
    await rpc(own.anvil.rpcUrl, 'evm_mine', []);
    // No repair falls due during the test: what is mined again is what the wait sends again.
    const relayer = new Relayer(network, account, own.tdb.db, { replaceAfterMs: 60_000 });
    const client = relayer.client;
    const { hash } = await relayer.send('reorged', { to: fresh(), data: '0x' });
    await rpc(own.anvil.rpcUrl, 'evm_mine', []);
    const first = await client.getTransactionReceipt({ hash });

    let headAtReport: bigint | undefined;
    const stored = () => own.tdb.db.em.fork().findOne(RelayerTransaction, { id: 'reorged' });
    let polled!: () => void;
    const sighted = new Promise<void>((resolve) => (polled = resolve));
    const waiting = relayer.waitForReceipt(
      (await stored())!,
      60_000,
      () => polled(),
      async () => {
        headAtReport = await client.getBlockNumber({ cacheTime: 0 });
      },
    );
    await sighted; // the wait has looked once: it saw the receipt, one block deep
    // The block that mined it is taken out before two more follow it: the chain no longer has it, and
    // anvil does not put a rolled-back transaction back in its pool (nor do other nodes reliably).
    await rpc(own.anvil.rpcUrl, 'anvil_rollback', [1]);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(first.blockNumber - 1n);
    expect(await client.getTransactionCount({ address: account.address, blockTag: 'latest' })).toBe(0);
    expect((await stored())!.status).toBe('signed'); // not reported: it was never final
    await rpc(own.anvil.rpcUrl, 'evm_setIntervalMining', [1]);
    const receipt = await waiting;
    await rpc(own.anvil.rpcUrl, 'evm_setIntervalMining', [0]);

    expect(receipt).toMatchObject({ transactionHash: hash, status: 'success' });
    expect(receipt!.blockHash).not.toBe(first.blockHash); // mined again, in a block of the new chain
    expect(headAtReport! >= receipt!.blockNumber + 2n).toBe(true); // reported two blocks deep
    expect(await stored()).toMatchObject({ hash, status: 'mined', nonce: 0, hashes: null });
    expect(await client.getTransactionCount({ address: account.address, blockTag: 'latest' })).toBe(1);
  });
});

const anvilNonce = async (url: string, address: Address) => Number(await rpc(url, 'eth_getTransactionCount', [address, 'latest']));
