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
 *
 * Then, through the RPC provider double (devnet/rpc-provider-double.ts), one wait through `--limited`
 * seconds (default 20) of 429s with `Retry-After: 30` on receipts and heads, once per cap of that
 * pause (RPC_RETRY_AFTER_MAX_MS, `--caps`, default 1000,2000,5000,30000): the calls per second it
 * cost during the 429s, and how long after they ended the receipt was noticed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { numberToHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc, startAnvil } from '../devnet/anvil';
import { startRpcProviderDouble } from '../devnet/rpc-provider-double';
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
const LIMITED_S = arg('limited', 20);
const CAPS = (() => {
  const i = process.argv.indexOf('--caps');
  return (i > 0 ? process.argv[i + 1]! : '1000,2000,5000,30000').split(',').map(Number);
})();

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
    await rateLimited(anvil.rpcUrl, tdb);
  } finally {
    await new Promise((r) => proxy.server.close(r));
    await tdb.close();
    await anvil.stop();
  }
}

/** One receipt wait per cap through LIMITED_S seconds of 429s (Retry-After 30), on a warm relayer of 1 s blocks. */
async function rateLimited(upstream: string, tdb: Awaited<ReturnType<typeof openTestDatabase>>) {
  console.log(`\none wait through ${LIMITED_S} s of 429s (Retry-After: 30) on receipts and heads, 1 s blocks`);
  console.log('| RPC_RETRY_AFTER_MAX_MS | calls per second during the 429s | receipt noticed after the 429s ended (ms) |');
  console.log('|---|---|---|');
  for (const cap of CAPS) {
    const double = await startRpcProviderDouble({ upstream });
    try {
      const network = buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: double.url, RPC_RETRY_AFTER_MAX_MS: String(cap) }).get('base-sepolia')!;
      const account = privateKeyToAccount(generatePrivateKey());
      await rpc(upstream, 'anvil_setBalance', [account.address, numberToHex(10n ** 20n)]);
      const relayer = new Relayer(network, account, tdb.db, { replaceAfterMs: 600_000 });
      const record = async (id: string) => (await tdb.db.em.fork().findOne(RelayerTransaction, { id }))!;
      const to = () => privateKeyToAccount(generatePrivateKey()).address;
      for (let i = 0; i < 3; i++) {
        await relayer.send(`limited-${cap}-warm-${i}`, { to: to(), data: '0x' });
        await relayer.waitForReceipt(await record(`limited-${cap}-warm-${i}`), 20_000);
      }
      const id = `limited-${cap}`;
      await relayer.send(id, { to: to(), data: '0x' });
      const methods = ['eth_getTransactionReceipt', 'eth_blockNumber', 'eth_getBlockByNumber'];
      double.setRules([{ methods, fault: 'rate-limit-429', probability: 1, retryAfterSeconds: 30 }]);
      const from = double.calls.length;
      const wait = relayer.waitForReceipt(await record(id), LIMITED_S * 1000 + 120_000);
      await new Promise((r) => setTimeout(r, LIMITED_S * 1000));
      const during = double.calls.length - from;
      double.setRules([]);
      const ended = Date.now();
      const receipt = await wait;
      if (receipt?.status !== 'success') throw new Error(`cap ${cap}: the wait ended without a successful receipt`);
      console.log(`| ${cap} | ${(during / LIMITED_S).toFixed(2)} | ${Date.now() - ended} |`);
    } finally {
      await double.stop();
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
