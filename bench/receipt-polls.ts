/**
 * `npm run bench:receipt-polls`: how many JSON-RPC reads the relayer's receipt waits cost on a chain
 * with 1 s blocks (docs/decisions/receipt-waits-and-sync-broadcast.md). A relayer that has seen receipts take a block
 * asks for a transaction's receipt once when its wait starts, then once per new block, and one
 * `eth_blockNumber` every 100 ms serves all of its waiters. Measured through a counting JSON-RPC proxy
 * in front of an anvil of its own: `--waiters` transactions (default 8) waiting together, `--rounds`
 * times (default 3). It reports ratios, not pass or fail: they depend on the host's pace, which is why
 * they are not in the integration tests (test/integration/relayer-hygiene.test.ts keeps what cannot
 * flake there).
 *
 *   receipt reads per waiter: 1 + the blocks mined while waiting, when each wait asks once per block
 *   head polls per second: 10 for one shared poll every 100 ms; per-waiter polling would be waiters x 10
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { numberToHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc, startAnvil } from '../devnet/anvil';
import { buildNetworkTable } from '../src/chains/networks';
import { Relayer } from '../src/chains/evm/relayer';
import { RelayerTransaction } from '../src/db/entities';
import { openTestDatabase } from '../test/support/db';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const WAITERS = arg('waiters', 8);
const ROUNDS = arg('rounds', 3);

/** Forwards JSON-RPC to `upstream` and counts every method, batches included. */
function countingProxy(upstream: string): Promise<{ server: Server; url: string; calls: Map<string, number> }> {
  const calls = new Map<string, number>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', async () => {
      const parsed = JSON.parse(body) as { method: string } | { method: string }[];
      for (const { method } of [parsed].flat()) calls.set(method, (calls.get(method) ?? 0) + 1);
      const reply = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((r) => r.text());
      res.writeHead(200, { 'content-type': 'application/json' }).end(reply);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls })),
  );
}

async function main() {
  const anvil = await startAnvil({ chainId: 84532, log: () => undefined });
  const tdb = await openTestDatabase('sqlite');
  const proxy = await countingProxy(anvil.rpcUrl);
  try {
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1]);
    const network = buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: proxy.url }).get('base-sepolia')!;
    const account = privateKeyToAccount(generatePrivateKey());
    await rpc(anvil.rpcUrl, 'anvil_setBalance', [account.address, numberToHex(10n ** 20n)]);
    const relayer = new Relayer(network, account, tdb.db, { replaceAfterMs: 1_000 });
    const to = () => privateKeyToAccount(generatePrivateKey()).address;
    const record = async (id: string) => (await tdb.db.em.fork().findOne(RelayerTransaction, { id }))!;
    // Warm: five waits one after another, so the relayer has seen receipts take a block.
    for (let i = 0; i < 5; i++) {
      await relayer.send(`warm-${i}`, { to: to(), data: '0x' });
      await relayer.waitForReceipt(await record(`warm-${i}`), 20_000);
    }
    console.log(`${WAITERS} waiters, 1 s blocks, ${ROUNDS} rounds`);
    const head = async () => BigInt((await rpc(anvil.rpcUrl, 'eth_blockNumber', [])) as string);
    console.log(
      '| round | blocks mined while waiting | receipt reads per waiter (1 + blocks when once per block) | head polls per second (10: one shared poll) | elapsed s |',
    );
    console.log('|---|---|---|---|---|');
    for (let round = 1; round <= ROUNDS; round++) {
      const ids = Array.from({ length: WAITERS }, (_, i) => `r${round}-${i}`);
      for (const id of ids) await relayer.send(id, { to: to(), data: '0x' });
      proxy.calls.clear();
      const startBlock = await head();
      const started = Date.now();
      const receipts = await Promise.all(ids.map(async (id) => relayer.waitForReceipt(await record(id), 20_000)));
      const elapsed = (Date.now() - started) / 1000;
      const blocks = Number((await head()) - startBlock);
      if (receipts.some((r) => r?.status !== 'success')) throw new Error(`round ${round}: a wait ended without a successful receipt`);
      const reads = proxy.calls.get('eth_getTransactionReceipt') ?? 0;
      const heads = proxy.calls.get('eth_blockNumber') ?? 0;
      console.log(`| ${round} | ${blocks} | ${(reads / WAITERS).toFixed(2)} | ${(heads / elapsed).toFixed(1)} | ${elapsed.toFixed(2)} |`);
    }
  } finally {
    await new Promise((r) => proxy.server.close(r));
    await tdb.close();
    await anvil.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
