/**
 * The faults `npm run chaos -- --faults rpc,temporal,db,reorg` adds to the kills of bench/chaos.ts
 * (issue 37): a hosted provider's bad day in front of each EVM chain (devnet/rpc-provider-double.ts),
 * a Temporal dev server killed and started again on its database file, every database connection
 * dropped once, and one reorg of the settlement chain within its confirmation depth.
 */
import type { FaultRule, RpcFault, RpcProviderDouble } from '../devnet/rpc-provider-double';
import { startTemporalDevServer, type DevServer } from '../temporal/dev-server';
import type { LogFn } from '../devnet/process';
import { rpc } from '../devnet/anvil';

export const FAULTS = ['rpc', 'temporal', 'db', 'reorg'] as const;
export type Fault = (typeof FAULTS)[number];

/** `rpc,temporal,db,reorg` (or `none`, or empty) as a set; an unknown name is an error. */
export function parseFaults(list: string | undefined): Set<Fault> {
  const out = new Set<Fault>();
  for (const name of (list ?? '').split(',').map((s) => s.trim())) {
    if (name === '' || name === 'none') continue;
    if (!(FAULTS as readonly string[]).includes(name)) throw new Error(`--faults: unknown fault ${name} (known: ${FAULTS.join(', ')})`);
    out.add(name as Fault);
  }
  return out;
}

/** What viem and our relayer read; sends are eth_sendRawTransaction (and the Sync one, refused as -32601). */
const READS = [
  'eth_blockNumber',
  'eth_chainId',
  'eth_call',
  'eth_estimateGas',
  'eth_gasPrice',
  'eth_maxPriorityFeePerGas',
  'eth_feeHistory',
  'eth_getBalance',
  'eth_getCode',
  'eth_getStorageAt',
  'eth_getTransactionCount',
  'eth_getTransactionReceipt',
  'eth_getTransactionByHash',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getLogs',
];
/** The reads a lagging replica answers from an older head. */
const LAGGED = [
  'eth_blockNumber',
  'eth_getTransactionCount',
  'eth_getTransactionReceipt',
  'eth_getTransactionByHash',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
];
const SENDS = ['eth_sendRawTransaction'];

/**
 * The provider's schedule for the whole run (the PRNG is the double's, seeded with --seed). Each
 * call tries the rules in order, so a later rule's share is a little under its probability.
 * Hangs stay rare: each one costs its caller the client's 10 s timeout.
 */
export const PROVIDER_RULES: FaultRule[] = [
  { methods: READS, fault: 'rate-limit-429', probability: 0.02, retryAfterSeconds: 0 },
  { methods: READS, fault: 'rate-limit-429', probability: 0.01, retryAfterSeconds: 1 },
  { methods: READS, fault: 'limit-32005', probability: 0.02 },
  { methods: '*', fault: 'server-5xx', probability: 0.02 },
  { methods: '*', fault: 'reset', probability: 0.015 },
  { methods: '*', fault: 'hang', probability: 0.002 },
  { methods: SENDS, fault: 'drop', probability: 0.04 },
  { methods: SENDS, fault: 'lose-answer', probability: 0.04 },
  { methods: LAGGED, fault: 'lag', probability: 0.04, lagBlocks: 1 },
  { methods: LAGGED, fault: 'lag', probability: 0.03, lagBlocks: 2 },
  { methods: LAGGED, fault: 'lag', probability: 0.03, lagBlocks: 3 },
];

/** One line of what the provider did: calls, and how many of them got each fault. */
export function providerSummary(p: RpcProviderDouble): string {
  const by = new Map<RpcFault | 'none', number>();
  for (const c of p.calls) by.set(c.fault, (by.get(c.fault) ?? 0) + 1);
  const sends = p.calls.filter((c) => SENDS.includes(c.method)).length;
  const faults = [...by].filter(([f]) => f !== 'none').map(([f, n]) => `${f}=${n}`);
  return `${p.calls.length} calls (${sends} broadcasts), faulted: ${faults.join(' ') || 'none'}; dropped broadcasts ${p.dropped.length}`;
}

/**
 * SIGKILLs the dev server (no shutdown: whatever it had not written to its SQLite file is lost), waits
 * `downMs`, then starts it again on the same file and port. Returns the new server.
 */
export async function restartTemporal(server: DevServer, o: { dbFile: string; downMs: number; log: LogFn }): Promise<DevServer> {
  const port = Number(server.address.split(':').pop());
  process.kill(server.pid, 'SIGKILL');
  await server.stop(); // only waits for the exit: the process is gone already
  await new Promise((r) => setTimeout(r, o.downMs));
  return startTemporalDevServer({ uiPort: false, dbFile: o.dbFile, port, log: o.log, readyTimeoutMs: 120_000 });
}

// `pg` ships without types here (as in test/support/db.ts); this is the sliver we use.
interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<{ rowCount: number | null; rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- pg ships no types here; only this narrow shape is used
const { Client: PgClientCtor } = require('pg') as { Client: new (opts: { connectionString: string }) => PgClient };

/**
 * Drops every other connection to the database of `databaseUrl` (the API's, the worker's, the
 * bench's own pool) from a connection of its own. Returns how many were terminated.
 */
export async function dropDatabaseConnections(databaseUrl: string): Promise<number> {
  const client = new PgClientCtor({ connectionString: databaseUrl });
  await client.connect();
  try {
    const res = await client.query(
      'select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
    );
    return res.rows.filter((r) => r.ok === true).length;
  } finally {
    await client.end();
  }
}

/**
 * The confirmation depth the run gives the settlement chain with the reorg fault: a receipt counts
 * once this many blocks follow it, so a reorg of up to this many blocks only takes out transactions
 * nobody was told about yet (base-sepolia's production depth is 0, a rollup's sequencer being final).
 */
export const REORG_CONFIRMATION_DEPTH = 2;

/**
 * Reorgs the chain at `rpcUrl`: anvil drops its last `depth` blocks and mines as many new, empty
 * ones in their place (anvil_reorg), so the head keeps its height under other hashes and the
 * transactions of the dropped blocks are gone (anvil does not put them back in its pool). It waits
 * (up to ~10 s) for a head whose last `depth` blocks hold transactions, so the reorg takes something
 * out. Mining pauses while it looks and reorgs (the caller stops its own block ticker too), so the
 * blocks counted are the blocks dropped; what arrives meanwhile waits in the pool for the next block.
 * Returns the head and the hashes of the transactions taken out.
 */
export async function reorgChain(rpcUrl: string, depth: number): Promise<{ head: bigint; removed: string[] }> {
  for (let attempt = 1; ; attempt++) {
    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    try {
      const head = BigInt(await rpc<string>(rpcUrl, 'eth_blockNumber'));
      const removed: string[] = [];
      for (let b = head - BigInt(depth) + 1n; b <= head; b++) {
        const block = await rpc<{ transactions: string[] } | null>(rpcUrl, 'eth_getBlockByNumber', [`0x${b.toString(16)}`, false]);
        removed.push(...(block?.transactions ?? []));
      }
      if (removed.length > 0 || attempt >= 100) {
        await rpc(rpcUrl, 'anvil_reorg', [depth, []]);
        return { head, removed };
      }
    } finally {
      await rpc(rpcUrl, 'evm_setAutomine', [true]);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
