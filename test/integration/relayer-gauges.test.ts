import { formatEther, numberToHex, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc, startAnvil, type Anvil } from '../../devnet/anvil';
import { buildNetworkTable, type NetworkTable } from '../../src/chains/networks';
import { Relayer } from '../../src/chains/evm/relayer';
import { Metrics } from '../../src/observability/metrics';
import { oneDbKind, openTestDatabase, type TestDatabase } from '../support/db';
import { sample, series } from '../support/promql';

/**
 * x402_relayer_nonce and x402_relayer_balance_ether on a real anvil of each describe (mining is paused
 * here, so not the shared chains) and a real database of relayer records: exact values after a
 * known number of transactions, a pending one, a dropped one, and the node going away.
 */

describe.each(oneDbKind('postgres'))('relayer gauges (%s)', (kind) => {
  let anvil: Anvil;
  let networks: NetworkTable;
  let tdb: TestDatabase;

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 84532, log: () => undefined });
    // Only base-sepolia is enabled (the other networks have no RPC URL here).
    networks = buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: anvil.rpcUrl, RPC_URLS_OPTIMISM_SEPOLIA: 'none' });
    tdb = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await anvil?.stop();
    await tdb?.close();
  });

  test('latest, pending and recorded next nonces and the gas balance, exactly; a dead node leaves the chain series out and counts its errors', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    await rpc(anvil.rpcUrl, 'anvil_setBalance', [account.address, numberToHex(10n ** 20n)]);
    const relayer = new Relayer(networks.get('base-sepolia')!, account, tdb.db, { replaceAfterMs: 60_000 });
    const metrics = new Metrics();
    // cacheMs 0: every scrape reads the chain (production caches 10 s).
    metrics.observeOperations({ relayer: account.address, db: tdb.db, networks, cacheMs: 0 });
    const address = account.address.toLowerCase();
    const scrape = async () => (await metrics.render()).body;
    const nonces = (text: string) =>
      Object.fromEntries(
        ['latest', 'pending', 'recorded'].map((kind) => [
          kind,
          series(text, 'x402_relayer_nonce', { network: 'base-sepolia', address, kind }),
        ]),
      );
    const enabled = [...networks.values()].filter((n) => n.enabled).map((n) => n.id);
    expect(enabled).toEqual(['base-sepolia']);

    // Nothing sent yet: the chain says 0, and nothing is recorded (no series).
    let text = await scrape();
    expect(nonces(text)).toEqual({ latest: [0], pending: [0], recorded: [] });
    expect(series(text, 'x402_relayer_balance_ether', { network: 'base-sepolia', address })).toEqual([100]);

    // Two transactions mined (automine).
    for (const id of ['gauge-1', 'gauge-2']) {
      const { hash } = await relayer.send(id, { to: privateKeyToAccount(generatePrivateKey()).address, data: '0x' });
      await relayer.client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    }
    text = await scrape();
    expect(nonces(text)).toEqual({ latest: [2], pending: [2], recorded: [2] });
    const balance = formatEther(await relayer.client.getBalance({ address: account.address }));
    expect(series(text, 'x402_relayer_balance_ether', { network: 'base-sepolia', address })).toEqual([Number(balance)]);
    expect(Number(balance)).toBeLessThan(100); // the gas of two transactions

    try {
      // A third is sent while nothing is mined: pending runs ahead of latest.
      await rpc(anvil.rpcUrl, 'evm_setAutomine', [false]);
      const { hash } = await relayer.send('gauge-3', { to: privateKeyToAccount(generatePrivateKey()).address, data: '0x' });
      expect(nonces(await scrape())).toEqual({ latest: [2], pending: [3], recorded: [3] });

      // The node drops it: recorded runs ahead of pending (what X402RelayerNonceGap watches).
      await rpc(anvil.rpcUrl, 'anvil_dropTransaction', [hash as Hex]);
      expect(nonces(await scrape())).toEqual({ latest: [2], pending: [2], recorded: [3] });
    } finally {
      await rpc(anvil.rpcUrl, 'evm_setAutomine', [true]);
    }

    // The node goes away: no chain series, the records still answer, and each failed read (balance,
    // nonces) is one RPC error of base-sepolia. The counter is rendered while the gauges still read,
    // so a scrape's errors show in the next one.
    text = await scrape();
    const errorsBefore = sample(text, 'x402_rpc_errors_total', { network: 'base-sepolia' });
    await anvil.stop();
    text = await scrape();
    expect(nonces(text)).toEqual({ latest: [], pending: [], recorded: [3] });
    expect(series(text, 'x402_relayer_balance_ether')).toEqual([]);
    text = await scrape();
    expect(sample(text, 'x402_rpc_errors_total', { network: 'base-sepolia' }) - errorsBefore).toBe(2);
    expect(series(text, 'x402_stuck_payments')).toEqual([]); // only the API's operations (stuck: true) export it
  });
});
