/**
 * Chaos run (issue 12, "Proof"; issue 37, every money path under a misbehaving world): on the real
 * local stack, at once, settlements (EIP-3009, Permit2, Solana, and cross-chain EIP-3009 from
 * base-sepolia to optimism-sepolia over the bridge attester double), paid chats and video jobs (a
 * share of them failed by the provider doubles, so refunded), top-ups on `base` through the top-up gateway (some
 * refused, some refunded after their deposit reverts), and gateway-wallet withdrawals; meanwhile the
 * worker, the API and the top-up gateway are SIGKILLed at random moments and the settlement chain is
 * stopped and restarted once. Clients send the same request again on a dropped connection, a 5xx or
 * a 202. `--faults` adds, each once or for the whole run:
 *   rpc       the service reaches every EVM chain through devnet/rpc-provider-double.ts (seeded with
 *             --seed): 429 (Retry-After 0 or 1 s) and -32005 on reads, 5xx and resets, rare hangs, a
 *             replica 1-3 blocks behind, dropped broadcasts and lost answers; no eth_sendRawTransactionSync
 *   temporal  the dev server keeps its state in a file and is SIGKILLed and started again on it mid-run;
 *             the surviving worker and API must go on (checked: payments first sent after it settle)
 *   db        every database connection is dropped once mid-run (PostgreSQL: pg_terminate_backend;
 *             SQLite has none, and says so)
 *   reorg     base-sepolia and base (top-ups) count a receipt two blocks deep, and the last two blocks
 *             of each are reorged away once mid-run (anvil_reorg: same height, empty blocks)
 * `--cluster` runs it on the topology of `npm run cluster` (devnet/cluster-plan.ts): the Temporal server on
 * PostgreSQL with its history shards, our database on PostgreSQL, two workers each with its own relayer
 * lanes. It implies `--db postgres --faults temporal,db` and makes them a cluster's: the Temporal server
 * is SIGKILLed and started again on its PostgreSQL state twice; the connections of our database and of
 * Temporal's two are dropped; and worker-2 is SIGKILLed for good halfway, so worker-1 finishes what
 * worker-2's lanes had in flight (reported: those payments' outcomes and which key mined them).
 * At the end every effect must have moved money exactly once or not at all, as its records say (per
 * kind: settled, refused, refunded, or parked in needs_review or flagged X402Stuck after a stuck scan
 * run on demand); no refund paid twice; each ledger equals its chain; and the relayer's transactions
 * on each chain match its write-ahead records (none unrecorded, no record paid twice). The bench's own
 * checks read anvil directly, never through a provider double.
 *
 *   npm run chaos -- [--n 200] [--concurrency 24] [--seed 1] [--db sqlite|postgres] [--faults rpc,temporal,db,reorg] [--cluster] [--logs]
 *
 * `--n` settlements, a quarter per scheme, plus n/6 chats, n/12 each of image, video and music jobs, n/15 top-up payers (three top-ups each)
 * and n/20 withdrawals (at least one of each). Loopback only and bounded (a deadline per request);
 * prints a table per kind and `lost=0 doubled=0 stuck_unflagged=0`, or exits 1.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { Connection as SolanaConnection, Keypair, type PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { createPublicClient, createWalletClient, http, maxUint256, parseEventLogs, type Address, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Client as TemporalClient, Connection as TemporalConnection } from '@temporalio/client';
import { startTemporalDevServer, type DevServer } from '../temporal/dev-server';
import type { ClusterServer } from '../temporal/cluster-server';
import { CLUSTER_WORKERS, clusterDatabaseUrl, freeClusterPort, startClusterTemporal, temporalDatabases } from '../devnet/cluster-plan';
import { dropClusterDatabases } from '../test/support/cluster';
import { RelayerTransaction } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import { startRpcProviderDouble, type RpcProviderDouble } from '../devnet/rpc-provider-double';
import { rpc, startAnvil, type Anvil } from '../devnet/anvil';
import { deployDevnet } from '../devnet/deploy';
import { startSolanaDevnet } from '../devnet/solana-rpc';
import { describeExit, prefixedStderr, type ManagedProcess } from '../devnet/process';
import { PERMIT2_CANONICAL_ADDRESS } from '../src/chains/devnet-addresses';
import { DEVNET_SOLANA_FEE_PAYER } from '../src/chains/solana/fee-payer';
import { Settlement } from '../src/db/entities';
import { TEST_ACCOUNTS } from '../test/support/accounts';
import { openTestDatabase, type DbKind } from '../test/support/db';
import { request, signIn } from '../test/support/http';
import { dbEnv, startWorker, testDataConverter } from '../test/support/services';
import { solanaRpcCall } from '../test/support/solana';
import { sleep } from './measure';
import { spawnApi, stopTree } from './processes';
import { workflowBundleOptions } from '../src/temporal/workflow-bundle';
import {
  dropDatabaseConnections,
  parseFaults,
  PROVIDER_RULES,
  providerSummary,
  REORG_CONFIRMATION_DEPTH,
  reorgChain,
  restartTemporal,
  type Fault,
} from './chaos-faults';
import { auditRelayer, isParked, isTerminal, runStuckScan, viewWorkflow, type RelayerAudit, type WorkflowView } from './chaos-audit';
import { auditCrosschain, CROSSCHAIN_ROUTE, setupCrosschain } from './chaos-crosschain';
import { setupInference } from './chaos-inference';
import { setupTopup } from './chaos-topup';
import { setupWithdrawals, WITHDRAWAL_ENV } from './chaos-withdrawal';
import { rng, type ChaosKind, type KindTally } from './chaos-kinds';

interface Options {
  n: number;
  concurrency: number;
  seed: number;
  db: DbKind;
  faults: Set<Fault>;
  logs: boolean;
  /** --cluster: the Temporal server on PostgreSQL and two workers (see the file comment). */
  cluster: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { n: 200, concurrency: 24, seed: Date.now() % 100_000, db: 'sqlite', faults: new Set(), logs: false, cluster: false };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--logs') o.logs = true;
    else if (flag === '--cluster') o.cluster = true;
    else if (flag === '--n') o.n = Math.min(1000, Number(value)) || o.n;
    else if (flag === '--concurrency') o.concurrency = Math.min(64, Number(value)) || o.concurrency;
    else if (flag === '--seed') o.seed = Number(value);
    else if (flag === '--db') o.db = value === 'postgres' ? 'postgres' : 'sqlite';
    else if (flag === '--faults') o.faults = parseFaults(value);
    else continue;
    if (flag !== '--logs' && flag !== '--cluster') i++;
  }
  if (o.cluster) {
    o.db = 'postgres';
    o.faults.add('temporal');
    o.faults.add('db');
  }
  return o;
}

import { settlementBody, SOLANA_USDC, type Kind, type Payment } from './chaos-payments';
import { tokenAbi } from '../src/chains/evm/abi';

const DEADLINE_MS = 240_000;
/** The worker's stuck threshold and the API's parking delay in this run (both far shorter than in production). */
const STUCK_AFTER_SECONDS = 30;
const SETTLE_PARK_AFTER_MS = 60_000;
/** After a Temporal restart or dropped connections, no kills for this long: the survivors must settle payments. */
const SURVIVOR_WINDOW_MS = 20_000;

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const random = rng(opts.seed);
  const log = (name: string) => (opts.logs ? prefixedStderr(name) : () => undefined);
  const cleanups: (() => Promise<unknown>)[] = [];
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const faults = [...opts.faults].join(',') || 'none';
  say(
    `chaos: n=${opts.n} concurrency=${opts.concurrency} seed=${opts.seed} db=${opts.db} faults=${faults}` +
      `${opts.cluster ? ' cluster (Temporal server on PostgreSQL, two workers)' : ''}; loadavg ${loadavg()}`,
  );
  if (opts.faults.has('db') && opts.db === 'sqlite')
    say('db fault: SQLite has no connections to drop (one file, opened in each process): skipped');
  // The new faults draw from a generator of their own, so that a run without them is the run it always was.
  const faultRandom = rng(opts.seed ^ 0x5eed_37);
  const runStarted = Date.now();
  try {
    // --- the stack: Temporal, one anvil chain (state in a file, so it survives a restart), Solana devnet.
    const tmp = mkdtempSync(join(os.tmpdir(), 'x402-chaos-'));
    cleanups.push(async () => rmSync(tmp, { recursive: true, force: true }));
    const stateFile = join(tmp, 'anvil-84532.json');
    // With the temporal fault the dev server keeps its state in a file, so that it survives a SIGKILL;
    // the cluster's server keeps it in PostgreSQL (databases named after clusterDb, dropped at the end).
    const temporalDb = opts.faults.has('temporal') && !opts.cluster ? join(tmp, 'temporal.sqlite') : undefined;
    const clusterDb = `x402_chaos_${randomBytes(4).toString('hex')}`;
    let cluster: ClusterServer | undefined;
    if (opts.cluster) {
      cleanups.push(() => dropClusterDatabases(clusterDb));
      cluster = await startClusterTemporal({
        database: clusterDb,
        dir: join(tmp, 'temporal'),
        port: await freeClusterPort(),
        log: log('temporal'),
      });
    }
    let temporal: DevServer = cluster ?? (await startTemporalDevServer({ uiPort: false, dbFile: temporalDb, log: log('temporal') }));
    cleanups.push(() => temporal.stop());
    // The workers: one with the relayer key alone, or the cluster's two, each with its own lanes.
    const workerPlans = opts.cluster
      ? CLUSTER_WORKERS
      : [{ name: 'worker', env: {} as Record<string, string>, lanes: [TEST_ACCOUNTS.relayerKeys[0] as Hex] }];
    let anvil: Anvil = await startAnvil({ chainId: 84532, stateFile, stateIntervalSec: 1, log: log('anvil') });
    cleanups.push(() => anvil.stop());
    const solana = await startSolanaDevnet({ usdcMint: SOLANA_USDC.toBase58(), feePayers: [DEVNET_SOLANA_FEE_PAYER.publicKey] });
    cleanups.push(() => solana.stop());
    const buyers = TEST_ACCOUNTS.buyers;
    const lanes = workerPlans.flatMap((w) => w.lanes.map((k) => privateKeyToAccount(k).address));
    const relayers = [...new Set([...TEST_ACCOUNTS.relayers.map((a) => a.address), ...lanes])];
    const deployed = await deployDevnet({
      rpcUrl: anvil.rpcUrl,
      chainId: 84532,
      relayers,
      buyers: buyers.map((b) => ({ address: b.address, amount: 1_000_000_000_000n })),
    });
    const chain = createPublicClient({ transport: http(anvil.rpcUrl) }) as PublicClient;
    for (const b of buyers) {
      const wallet = createWalletClient({ account: b, transport: http(anvil.rpcUrl) });
      const hash = await wallet.writeContract({
        chain: null,
        address: deployed.usdc,
        abi: tokenAbi,
        functionName: 'approve',
        args: [PERMIT2_CANONICAL_ADDRESS, maxUint256],
      });
      await chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    }
    // The bench reads the chain from anvil itself; with the rpc fault the service goes through the double.
    let provider: RpcProviderDouble | undefined;
    if (opts.faults.has('rpc')) {
      provider = await startRpcProviderDouble({ upstream: anvil.rpcUrl, seed: opts.seed, rules: PROVIDER_RULES, noSyncSend: true });
      cleanups.push(() => provider!.stop());
    }
    const relayerAddress = privateKeyToAccount(TEST_ACCOUNTS.relayerKeys[0]).address;
    // The other money paths: their chains, doubles and funded accounts, each as the integration tests start them.
    const rpcSeed = (k: number) => (opts.faults.has('rpc') ? opts.seed + k : undefined);
    const crosschain = await setupCrosschain({ sourceRpcUrl: anvil.rpcUrl, seed: rpcSeed(1), log: log('anvil:11155420') });
    cleanups.push(() => crosschain.stop());
    const funder = createWalletClient({ account: buyers[0], transport: http(anvil.rpcUrl) });
    const inference = await setupInference({
      chats: Math.max(1, Math.round(opts.n / 6)),
      media: Math.max(1, Math.round(opts.n / 12)),
      chain,
      usdc: deployed.usdc,
      facilitator: deployed.facilitator,
      revenue: relayerAddress,
      fund: async (to, amount) => {
        const hash = await funder.writeContract({
          chain: null,
          address: deployed.usdc,
          abi: tokenAbi,
          functionName: 'transfer',
          args: [to, amount],
        });
        await chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
      },
      deadlineMs: DEADLINE_MS,
    });
    cleanups.push(() => inference.stop());
    const topup = await setupTopup({
      payers: Math.max(1, Math.round(opts.n / 15)),
      relayer: relayerAddress,
      seed: rpcSeed(2),
      logs: opts.logs,
      log: log('anvil:8453'),
      deadlineMs: DEADLINE_MS,
    });
    cleanups.push(() => topup.stop());
    const withdrawals = await setupWithdrawals({
      count: Math.max(1, Math.round(opts.n / 20)),
      rpcUrl: anvil.rpcUrl,
      chain,
      usdc: deployed.usdc,
      depositor: relayerAddress,
      funder: buyers[1],
      seed: opts.seed,
      deadlineMs: DEADLINE_MS,
    });
    const evmChains = { 'base-sepolia': chain, 'optimism-sepolia': crosschain.dest, base: topup.chain };
    // Every signer of the run: the role key and every worker's lanes.
    const signers = [...new Set([relayerAddress, ...lanes])];
    const relayerNonceAtStart = new Map<string, number>();
    for (const [name, c] of Object.entries(evmChains))
      for (const a of signers) relayerNonceAtStart.set(`${name}:${a}`, await c.getTransactionCount({ address: a, blockTag: 'latest' }));
    // Withdrawals are for operators: the organization's owner is one.
    const owner = privateKeyToAccount(generatePrivateKey());
    const { code } = await bundleWorkflowCode({ ...workflowBundleOptions(), logger: new DefaultLogger('WARN') });
    const bundlePath = join(tmp, 'workflow-bundle.js');
    writeFileSync(bundlePath, code);

    // --- the service: database, API process (fixed port, so clients keep their URL), worker process.
    const env: Record<string, string> = {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: `chaos-${randomBytes(4).toString('hex')}`,
      RELAYER_PRIVATE_KEY: TEST_ACCOUNTS.relayerKeys[0],
      RPC_URLS_BASE_SEPOLIA: provider?.url ?? anvil.rpcUrl,
      ...crosschain.env,
      ...inference.env,
      ...topup.env,
      ...WITHDRAWAL_ENV,
      OPERATOR_ADDRESSES: owner.address,
      ...(opts.faults.has('reorg')
        ? { CONFIRMATION_DEPTH_BASE_SEPOLIA: String(REORG_CONFIRMATION_DEPTH), CONFIRMATION_DEPTH_BASE: String(REORG_CONFIRMATION_DEPTH) }
        : {}),
      SOLANA_RPC_URL_SOLANA_DEVNET: solana.url,
      WORKFLOW_BUNDLE_PATH: bundlePath,
      SETTLE_WAIT_MS: '10000', // a paid chat waits this long for its payment before answering 503 (and refunding)
      RECEIPT_WAIT_MS: '5000',
      RELAYER_REPLACE_AFTER_MS: '8000',
      STUCK_AFTER_SECONDS: String(STUCK_AFTER_SECONDS),
      SETTLE_PARK_AFTER_MS: String(SETTLE_PARK_AFTER_MS),
    };
    const tdb = await openTestDatabase(opts.db, env);
    cleanups.push(() => tdb.close());
    const svcEnv = { ...env, ...dbEnv(tdb.config), SESSION_SECRET: tdb.config.SESSION_SECRET! };
    let api = await spawnApi({ ...svcEnv, LOG_LEVEL: 'warn' }, opts.logs);
    const port = Number(new URL(api.baseUrl).port);
    /** The worker processes; `retired` is the one killed for good (--cluster). */
    const workers: { name: string; env: Record<string, string>; proc: ManagedProcess; retired: boolean }[] = [];
    for (const w of workerPlans) {
      const env = { ...svcEnv, ...w.env };
      workers.push({ name: w.name, env, proc: await startWorker(env, { onLine: opts.logs ? log(w.name) : undefined }), retired: false });
    }
    const live = () => workers.filter((w) => !w.retired);
    await topup.start(svcEnv);
    const events: string[] = [];
    let started = Date.now();
    const stamp = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
    // A (re)start can fail while Temporal, the chain or the provider is down: try again, and say so.
    const restartWorker = async (w: (typeof workers)[number]) => {
      for (let attempt = 1; ; attempt++) {
        try {
          w.proc = await startWorker(w.env, { onLine: opts.logs ? log(w.name) : undefined });
          return;
        } catch (err) {
          if (attempt >= 5) throw err;
          events.push(`${stamp()} ${w.name} start failed (attempt ${attempt}): ${String(err).split('\n')[0]}`);
          await sleep(1000 * attempt);
        }
      }
    };
    const restartApi = async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await spawnApi({ ...svcEnv, LOG_LEVEL: 'warn' }, opts.logs, port);
        } catch (err) {
          if (attempt >= 5) throw err;
          events.push(`${stamp()} api start failed (attempt ${attempt}): ${String(err).split('\n')[0]}`);
          await sleep(1000 * attempt);
        }
      }
    };
    cleanups.push(
      async () => Promise.all(workers.map((w) => stopTree(w.proc))),
      async () => stopTree(api.proc),
    );

    const cookie = await signIn(api.baseUrl, owner);
    const payout = privateKeyToAccount(generatePrivateKey()).address;
    await request('PATCH', `${api.baseUrl}/v1/organization`, { cookie, json: { payoutWalletTest: payout, platformFeeBps: 0 } });
    const apiKey = (await request('POST', `${api.baseUrl}/v1/api_keys`, { cookie, json: { name: 'chaos', test_net: true } })).body
      .api_key as string;
    const sellerSol = Keypair.generate().publicKey;
    await solanaRpcCall(solana.url, 'devnet_fundToken', [sellerSol.toBase58(), 0]);
    const solBuyers = Array.from({ length: 8 }, () => Keypair.generate());
    for (const b of solBuyers) await solanaRpcCall(solana.url, 'devnet_fundToken', [b.publicKey.toBase58(), 1_000_000_000]);
    const solConn = new SolanaConnection(solana.url, 'confirmed');

    // --- the payments: distinct amounts, so each one's transfer can be found on chain.
    const kinds: Kind[] = ['eip3009', 'permit2', 'solana', 'crosschain'];
    const payments: Payment[] = Array.from({ length: opts.n }, (_, i) => ({
      i,
      kind: kinds[i % kinds.length],
      amount: 1_000_000n + BigInt(i),
      tries: 0,
    }));
    const before = {
      payout: await usdcOf(chain, deployed.usdc, payout),
      seller: await splBalance(solConn, sellerSol),
      destPayout: await usdcOf(crosschain.dest, deployed.usdc, payout),
    };
    const bodyOf = (p: Payment) =>
      settlementBody(p, { buyers, usdc: deployed.usdc, facilitator: deployed.facilitator, solBuyers, sellerSol, solConn });

    /** A seller: the same payment again on a dropped connection, a 5xx or a 202, until a final answer. */
    const settle = async (p: Payment) => {
      p.body = await bodyOf(p);
      p.sentAt = Date.now();
      const until = p.sentAt + DEADLINE_MS;
      while (Date.now() < until) {
        p.tries++;
        const res = await fetch(`http://127.0.0.1:${port}/v1/settle`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
          body: JSON.stringify(p.body),
          signal: AbortSignal.timeout(30_000),
        }).catch(() => undefined);
        const body = res
          ? ((await res.json().catch(() => ({}))) as { success?: boolean; transaction?: string; errorReason?: string })
          : undefined;
        if (res && res.status === 200 && body?.success) p.outcome = { settled: true, transaction: body.transaction! };
        else if (res && res.status >= 400 && res.status < 500 && res.status !== 429) {
          p.outcome = { settled: false, status: res.status, reason: body?.errorReason ?? 'unknown' };
        } else if (res && res.status === 200) p.outcome = { settled: false, status: 200, reason: body?.errorReason ?? 'failed' };
        if (p.outcome) return void (p.answeredAt = Date.now());
        await sleep(250 + random() * 500);
      }
    };

    // --- the monkey: SIGKILL worker or API every 0.5-2 s, and the chain once, while payments run; with
    // --faults, Temporal once and the database connections once, each at a seeded share of the payments sent.
    // The other kinds' jobs, spread evenly among the settlements.
    const kindContext = { apiUrl: () => `http://127.0.0.1:${port}`, apiKey, cookie, db: tdb.db, random };
    const extraKinds: ChaosKind[] = [...inference.kinds(kindContext), topup.kind(kindContext), withdrawals.kind(kindContext)];
    const jobs = [
      ...payments.map((p) => ({ at: (p.i + 0.5) / payments.length, run: () => settle(p) })),
      ...extraKinds.flatMap((k) => Array.from({ length: k.count }, (_, i) => ({ at: (i + 0.5) / k.count, run: () => k.run(i) }))),
    ].sort((a, b) => a.at - b.at);

    let done = false;
    let next = 0;
    started = Date.now();
    // The dev server restarts once; the cluster's server twice (a first and a second half of the run).
    const temporalAts = temporalDb ? [0.2 + faultRandom() * 0.3] : cluster ? [0.1 + faultRandom() * 0.25, 0.55 + faultRandom() * 0.25] : [];
    /** --cluster: worker-2 is killed for good once half the jobs were sent. */
    const retireAt = opts.cluster ? 0.5 : undefined;
    /** The payments sent and not yet answered when worker-2 was killed for good. */
    let inFlightAtRetire: Payment[] = [];
    const dbAt = opts.faults.has('db') && opts.db === 'postgres' ? 0.3 + faultRandom() * 0.4 : undefined;
    const reorgAt = opts.faults.has('reorg') ? 0.3 + faultRandom() * 0.4 : undefined;
    // A block a second besides the transactions' own: receipts get their confirmations, withdrawals their delay.
    let ticking = true;
    let reorging = false;
    // With the reorg fault `base` (top-ups) counts receipts two blocks deep too, so it ticks as well.
    const ticked = () => (opts.faults.has('reorg') ? [anvil.rpcUrl, topup.rpcUrl] : [anvil.rpcUrl]);
    const ticker = (async () => {
      while (ticking) {
        await sleep(1000);
        if (reorging) continue;
        for (const url of ticked()) await rpc(url, 'evm_mine', []).catch(() => undefined); // the chain may be down for its restart
      }
    })();
    cleanups.push(async () => {
      ticking = false;
      await ticker;
    });
    const checks: string[] = [];
    /**
     * After a Temporal restart or dropped connections, no kills for SURVIVOR_WINDOW_MS: the worker and
     * API that lived through it must settle payments first sent after it (proof they reconnected).
     */
    const survivors = async (what: string, since: number) => {
      const procs = [...live().map((w) => w.proc), api.proc];
      const until = since + SURVIVOR_WINDOW_MS;
      const fresh = () => payments.filter((p) => (p.sentAt ?? 0) >= since && p.outcome?.settled && (p.answeredAt ?? 0) <= until).length;
      while (Date.now() < until && !done && !procs.some((p) => p.hasExited) && fresh() < 3) await sleep(250);
      const n = fresh();
      const who = `${live()
        .map((w) => `${w.name === 'worker' ? 'the worker' : w.name} (pid ${w.proc.child.pid})`)
        .join(', ')} and the API (pid ${api.proc.child.pid}) that lived through it`;
      const exits = procs.filter((p) => p.hasExited);
      for (const p of exits) {
        checks.push(`${what}: the ${p.name} (pid ${p.child.pid}) exited by itself (${describeExit(await p.exited)}); its last lines:`);
        checks.push(
          ...p
            .recentOutput()
            .split('\n')
            .slice(-8)
            .map((l) => `      ${l}`),
        );
      }
      if (n > 0)
        checks.push(`${what}: ${who} settled ${n} payment(s) first sent after it, within ${((Date.now() - since) / 1000).toFixed(1)} s`);
      else if (done) checks.push(`${what}: not shown, the payments ended first`);
      else checks.push(`${what}: NO payment first sent after it settled within ${SURVIVOR_WINDOW_MS / 1000} s through ${who}`);
    };
    /** A worker or API that ended without being killed is reported and started again. */
    const reviveCrashed = async () => {
      for (const w of live()) {
        if (!w.proc.hasExited) continue;
        events.push(
          `${stamp()} ${w.name} exited by itself (${describeExit(await w.proc.exited)}): ${w.proc.recentOutput().split('\n').pop()}`,
        );
        await restartWorker(w);
      }
      if (api.proc.hasExited) {
        events.push(
          `${stamp()} the API exited by itself (${describeExit(await api.proc.exited)}): ${api.proc.recentOutput().split('\n').pop()}`,
        );
        api = await restartApi();
      }
    };
    const restartTemporalNow = async (note = '') => {
      events.push(`${stamp()} SIGKILL temporal${note}`);
      const downMs = 1000 + faultRandom() * 2000;
      if (cluster) {
        await cluster.restart({ kill: true, downMs });
        events.push(`${stamp()} temporal server back on its PostgreSQL databases`);
        return;
      }
      temporal = await restartTemporal(temporal, { dbFile: temporalDb!, downMs, log: log('temporal') });
      events.push(`${stamp()} temporal back on its database file`);
    };
    const dropConnectionsNow = async (note = '') => {
      const n = await dropDatabaseConnections(tdb.config.DATABASE_URL!);
      events.push(`${stamp()} dropped ${n} database connections${note}`);
      if (cluster) {
        const dropped = [];
        for (const db of temporalDatabases(clusterDb)) dropped.push(`${await dropDatabaseConnections(clusterDatabaseUrl(db))} of ${db}`);
        events.push(`${stamp()} dropped Temporal's database connections: ${dropped.join(', ')}${note}`);
      }
    };
    /** What each reorg took out of its chain: base-sepolia (settlements, chats, media, withdrawals), then base (top-ups). */
    const reorgedOut: { name: string; chain: PublicClient; hashes: Hex[] }[] = [];
    const reorgNow = async (note = '') => {
      reorging = true;
      try {
        for (const [name, url, c] of [
          ['base-sepolia', anvil.rpcUrl, chain],
          ['base', topup.rpcUrl, topup.chain],
        ] as const) {
          const r = await reorgChain(url, REORG_CONFIRMATION_DEPTH);
          reorgedOut.push({ name, chain: c, hashes: r.removed as Hex[] });
          const blocks = `${r.head - BigInt(REORG_CONFIRMATION_DEPTH) + 1n}-${r.head}`;
          events.push(`${stamp()} reorg of ${name} blocks ${blocks}: ${r.removed.length} transaction(s) dropped${note}`);
        }
      } finally {
        reorging = false;
      }
    };
    /** --cluster: worker-2 SIGKILLed and never started again; worker-1 must finish what its lanes had in flight. */
    const retireWorkerNow = async (note = '') => {
      const w = workers[workers.length - 1];
      // At a moment when one of its lanes has recorded the transaction of a settlement not yet answered
      // (so the other worker must finish it), if one comes within 15 s.
      const mine = new Set(workerPlans.at(-1)!.lanes.map((k) => privateKeyToAccount(k).address.toLowerCase()));
      const laneInFlight = async () => {
        const ids = payments
          .filter((p) => (p.kind === 'eip3009' || p.kind === 'permit2') && p.sentAt && !p.outcome && p.workflowId)
          .map((p) => relayerTxId(p.workflowId!, 'settle'));
        if (!ids.length) return false;
        const rows = await tdb.db.em.fork().find(RelayerTransaction, { id: { $in: ids } }, { fields: ['signer'] });
        return rows.some((r) => mine.has(r.signer.toLowerCase()));
      };
      for (const until = Date.now() + 15_000; !done && Date.now() < until && !(await laneInFlight().catch(() => false));) await sleep(100);
      inFlightAtRetire = payments.filter((p) => p.sentAt !== undefined && !p.outcome);
      w.retired = true;
      events.push(`${stamp()} SIGKILL ${w.name} for good (${inFlightAtRetire.length} payments in flight)${note}`);
      w.proc.child.kill('SIGKILL');
      await w.proc.exited;
    };
    const monkey = (async () => {
      let chainRestarted = false;
      let temporalRestarts = 0;
      let retired = false;
      let connectionsDropped = false;
      let reorged = false;
      while (!done) {
        await sleep(500 + random() * 1500);
        if (done) break;
        await reviveCrashed();
        const sent = next / jobs.length;
        if (reorgAt !== undefined && !reorged && sent >= reorgAt) {
          reorged = true;
          await reorgNow();
          continue;
        }
        if (temporalRestarts < temporalAts.length && sent >= temporalAts[temporalRestarts]) {
          temporalRestarts++;
          await restartTemporalNow(temporalAts.length > 1 ? ` (${temporalRestarts} of ${temporalAts.length})` : '');
          await survivors(`temporal restart${temporalAts.length > 1 ? ` ${temporalRestarts}` : ''}`, Date.now());
          continue;
        }
        if (retireAt !== undefined && !retired && sent >= retireAt) {
          retired = true;
          const since = Date.now();
          await retireWorkerNow();
          await survivors(`${workers[workers.length - 1].name} killed for good`, since);
          continue;
        }
        if (dbAt !== undefined && !connectionsDropped && sent >= dbAt) {
          connectionsDropped = true;
          const since = Date.now();
          await dropConnectionsNow();
          await survivors('dropped database connections', since);
          continue;
        }
        const roll = random();
        if (!chainRestarted && roll < 0.2) {
          chainRestarted = true;
          events.push(`${stamp()} anvil stop`);
          await anvil.stop();
          await sleep(1500);
          anvil = await startAnvil({ chainId: 84532, port: anvil.port, stateFile, stateIntervalSec: 1, log: log('anvil') });
          events.push(`${stamp()} anvil back at block ${await chain.getBlockNumber({ cacheTime: 0 })}`);
        } else if (roll < 0.6) {
          // One worker of the dev run; on the cluster one of the live ones (the draw is the dev run's own when there is one).
          const w = live().length > 1 ? live()[Math.floor(random() * live().length)] : live()[0];
          events.push(`${stamp()} SIGKILL ${w.name}`);
          w.proc.child.kill('SIGKILL');
          await w.proc.exited;
          await sleep(random() * 1500);
          await restartWorker(w);
        } else if (roll < 0.8) {
          events.push(`${stamp()} SIGKILL api`);
          api.proc.child.kill('SIGKILL');
          await api.proc.exited;
          await sleep(random() * 1500);
          api = await restartApi();
        } else {
          events.push(`${stamp()} SIGKILL topup gateway`);
          await topup.kill(random() * 1500);
        }
      }
      // Each fault happens at least once, even in a short run.
      if (!chainRestarted) {
        events.push(`${stamp()} anvil stop (end of run)`);
        await anvil.stop();
        anvil = await startAnvil({ chainId: 84532, port: anvil.port, stateFile, stateIntervalSec: 1, log: log('anvil') });
      }
      while (temporalRestarts < temporalAts.length) {
        temporalRestarts++;
        await restartTemporalNow(` (end of run${temporalAts.length > 1 ? `, ${temporalRestarts} of ${temporalAts.length}` : ''})`);
      }
      if (retireAt !== undefined && !retired) await retireWorkerNow(' (end of run)');
      if (dbAt !== undefined && !connectionsDropped) await dropConnectionsNow(' (end of run)');
      if (reorgAt !== undefined && !reorged) await reorgNow(' (end of run)');
      await reviveCrashed();
    })();

    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        while (next < jobs.length) await jobs[next++].run();
      }),
    );
    done = true;
    await monkey;
    say(`requests ended in ${((Date.now() - started) / 1000).toFixed(1)} s; chaos: ${events.length} events`);
    for (const e of events) say(`  ${e}`);
    for (const c of checks) say(`  ${c}`);
    if (provider) say(`rpc provider double (base-sepolia): ${providerSummary(provider)}`);
    if (crosschain.provider) say(`rpc provider double (optimism-sepolia): ${providerSummary(crosschain.provider)}`);
    if (topup.provider) say(`rpc provider double (base): ${providerSummary(topup.provider)}`);

    // --- the verdict: the workflows of unanswered payments, then the chain, then the ledger.
    const temporalConnection = await TemporalConnection.connect({ address: temporal.address });
    cleanups.push(() => temporalConnection.close());
    const temporalClient = new TemporalClient({
      connection: temporalConnection,
      dataConverter: testDataConverter({ ...process.env, ...env }),
    });
    const unanswered = payments.filter((p) => !p.outcome);
    const views = new Map<Payment, WorkflowView>();
    const viewAll = async () => {
      for (const p of unanswered) views.set(p, await viewWorkflow(temporalClient, p.workflowId!));
    };
    await viewAll();
    // Each workflow id is derived here as the API derives it; a settled payment's must name a workflow.
    let unknownIds = 0;
    for (const p of payments.filter((q) => q.outcome?.settled)) {
      if ((await viewWorkflow(temporalClient, p.workflowId!)).status === 'ABSENT') unknownIds++;
    }
    if (unknownIds) say(`bench error: ${unknownIds} settled payment(s) have no workflow under the id the bench derived`);
    // The other kinds wait (bounded) for their refunds, deliveries and payouts, then judge.
    const auditOthers = () => Promise.all(extraKinds.map((k) => k.audit({ temporal: temporalClient, db: tdb.db })));
    let tallies: KindTally[] = await auditOthers();
    const waiting = () =>
      unanswered.filter((p) => {
        const v = views.get(p)!;
        return v.status === 'RUNNING' && !isParked(v);
      });
    if (waiting().length || tallies.some((t) => t.stuckUnflagged > 0)) {
      // The stuck scan runs every minute; here it is run once more, now, as an operator would see it.
      say(
        `${waiting().length} unanswered payment(s) and ${tallies.reduce((s, t) => s + t.stuckUnflagged, 0)} other effect(s) still running: ${await runStuckScan(
          temporalClient,
          env.TEMPORAL_TASK_QUEUE,
          waiting().map((p) => views.get(p)!),
          STUCK_AFTER_SECONDS,
        )}`,
      );
      for (let i = 0; i < 20 && waiting().length; i++) {
        await sleep(500); // the flag is set by the workflow itself when it takes the signal
        await viewAll();
      }
      if (tallies.some((t) => t.stuckUnflagged > 0)) {
        await sleep(2000);
        tallies = await auditOthers();
      }
    }
    const cross = await auditCrosschain({
      payments: payments
        .filter((p) => p.kind === 'crosschain' && p.workflowId)
        .map((p) => ({ workflowId: p.workflowId!, amount: p.amount })),
      db: tdb.db,
      source: chain,
      dest: crosschain.dest,
      usdc: deployed.usdc,
      facilitator: deployed.facilitator,
      payout,
      payoutBefore: before.destPayout,
      waitMs: 90_000,
    });

    const transfers = parseEventLogs({
      abi: tokenAbi,
      eventName: 'Transfer',
      logs: await chain.getLogs({ address: deployed.usdc, fromBlock: 0n, toBlock: 'latest' }),
    }).filter((l) => l.args.to.toLowerCase() === payout.toLowerCase());
    const evmCount = new Map<bigint, number>();
    for (const t of transfers) evmCount.set(t.args.value, (evmCount.get(t.args.value) ?? 0) + 1);
    const landedSolana = async (p: Payment) => {
      const signature = p.outcome?.settled ? p.outcome.transaction : undefined;
      return signature ? (await solConn.getSignatureStatus(signature, { searchTransactionHistory: true })).value?.err === null : false;
    };

    type Verdict = 'settled' | 'refused' | 'parked' | 'stuck_unflagged' | 'lost';
    const verdicts = new Map<Payment, Verdict>();
    let lost = 0;
    let doubled = 0;
    const problems: string[] = [];
    const parkedMoved = { evm: 0n, solana: 0n };
    const moves = new Map<Payment, number>();
    for (const p of payments) {
      // A cross-chain payment moves money twice by design: the burn on the source, the payout on the destination.
      const moved =
        p.kind === 'solana'
          ? (await landedSolana(p))
            ? 1
            : 0
          : p.kind === 'crosschain'
            ? (cross.burns.get(p.workflowId!) ?? 0)
            : (evmCount.get(p.amount) ?? 0);
      moves.set(p, moved);
      const view = views.get(p);
      const paidOut = cross.payouts.get(p.workflowId!) ?? 0;
      let verdict: Verdict;
      if (p.kind === 'crosschain' && paidOut > 1) {
        doubled++;
        problems.push(`#${p.i} crosschain ${p.workflowId}: paid out ${paidOut} times on the destination`);
      }
      if (p.outcome?.settled && p.kind === 'crosschain' && paidOut === 0) {
        // Answered at the burn; the payout follows, or its bridge leg waits for an operator.
        verdict = cross.bridgeParked.has(p.workflowId!) ? 'parked' : 'lost';
        if (verdict === 'lost') problems.push(`#${p.i} crosschain ${p.workflowId}: burned ${moved}, never paid out on the destination`);
      } else if (p.outcome?.settled) verdict = 'settled';
      else if (p.outcome) verdict = p.outcome.status >= 400 && p.outcome.status < 500 ? 'refused' : 'lost';
      else if (view && isParked(view)) verdict = 'parked';
      else if (view && view.status === 'RUNNING' && !isTerminal(view)) verdict = 'stuck_unflagged';
      else verdict = 'lost';
      verdicts.set(p, verdict);
      if (moved > 1) {
        doubled++;
        problems.push(`#${p.i} ${p.kind} ${p.workflowId}: paid out ${moved} times`);
      }
      const where = view ? ` (workflow ${view.status}${view.state ? ` in ${view.state}` : ''}${view.stuck ? ', flagged stuck' : ''})` : '';
      if (verdict === 'settled' && moved !== 1) {
        lost++;
        problems.push(`#${p.i} ${p.kind}: answered settled (${(p.outcome as { transaction: string }).transaction}) but nothing moved`);
      } else if (verdict === 'refused' && moved !== 0) {
        lost++;
        problems.push(
          `#${p.i} ${p.kind}: money moved but the seller was told ${p.outcome && !p.outcome.settled ? `${p.outcome.status} ${p.outcome.reason}` : ''}`,
        );
      } else if (verdict === 'lost') {
        lost++;
        problems.push(
          p.outcome && !p.outcome.settled
            ? `#${p.i} ${p.kind}: final answer ${p.outcome.status} ${p.outcome.reason} is not a 4xx (moved ${moved})`
            : `#${p.i} ${p.kind} ${p.workflowId}: no final answer within ${DEADLINE_MS / 1000} s${where}, moved ${moved}`,
        );
      } else if (verdict === 'stuck_unflagged') {
        problems.push(`#${p.i} ${p.kind} ${p.workflowId}: no final answer${where}, not flagged; moved ${moved}`);
      } else if (verdict === 'parked') {
        if (moved === 1 && p.kind !== 'crosschain') parkedMoved[p.kind === 'solana' ? 'solana' : 'evm'] += p.amount;
        problems.push(`#${p.i} ${p.kind} ${p.workflowId}: parked${where}, moved ${moved}`);
      }
    }
    const stuckUnflagged = [...verdicts.values()].filter((v) => v === 'stuck_unflagged').length;

    // The relayer account on chain against its write-ahead records: no transaction nobody recorded, no
    // record carried out twice.
    const relayerAudits: [string, RelayerAudit][] = [];
    for (const [chainName, c] of Object.entries(evmChains)) {
      for (const a of signers) {
        const audit = await auditRelayer(c, tdb.db, a, relayerNonceAtStart.get(`${chainName}:${a}`)!);
        const name = signers.length > 1 ? `${chainName} (${a})` : chainName;
        if (signers.length > 1 && audit.mined === 0 && audit.records === 0) continue;
        relayerAudits.push([name, audit]);
        doubled += audit.twice.length + audit.unrecorded;
        for (const t of audit.twice)
          problems.push(`relayer record ${t.id}: ${t.hashes.length} successful transactions ${t.hashes.join(' ')}`);
        if (audit.unrecorded) problems.push(`relayer on ${name}: ${audit.unrecorded} mined transaction(s) that no record names`);
        for (const t of audit.duplicateReverted)
          problems.push(`relayer record ${t.id}: mined ${t.hashes.length} times, the others reverted: ${t.hashes.join(' ')}`);
      }
    }
    problems.push(...cross.problems);

    const sameChain = (p: Payment) => p.kind === 'eip3009' || p.kind === 'permit2';
    const settledEvm = payments.filter((p) => sameChain(p) && p.outcome?.settled).reduce((s, p) => s + p.amount, 0n);
    const settledSol = payments.filter((p) => p.kind === 'solana' && p.outcome?.settled).reduce((s, p) => s + p.amount, 0n);
    const chainEvm = (await usdcOf(chain, deployed.usdc, payout)) - before.payout;
    const chainSol = (await splBalance(solConn, sellerSol)) - before.seller;
    // The organization's settlements (chats, top-ups and withdrawals have rows of their own routes).
    const rows = await tdb.db.em
      .fork()
      .find(Settlement, { state: 'settled', id: { $in: payments.map((p) => p.workflowId!).filter(Boolean) } });
    const ledger = (route: (r: string) => boolean) =>
      rows.filter((r) => route(r.route)).reduce((s, r) => s + BigInt(r.amount) - BigInt(r.fee), 0n);
    const ledgerEvm = ledger((r) => r !== 'solana' && r !== CROSSCHAIN_ROUTE);
    const ledgerSol = ledger((r) => r === 'solana');
    // A parked payment's transfer may have happened: the chain has it, the settled rows and the answers not yet.
    const ledgerOk =
      ledgerEvm + parkedMoved.evm === chainEvm &&
      ledgerSol + parkedMoved.solana === chainSol &&
      settledEvm + parkedMoved.evm === chainEvm &&
      settledSol + parkedMoved.solana === chainSol &&
      cross.ledgerOk;
    if (!ledgerOk)
      problems.push(
        `ledger ${ledgerEvm}/${ledgerSol} vs chain ${chainEvm}/${chainSol} vs answers ${settledEvm}/${settledSol} (EVM/Solana; parked and moved ${parkedMoved.evm}/${parkedMoved.solana})`,
      );

    say('');
    say(
      '| kind | requests | settled | refused (4xx) | refunded | parked | stuck, unflagged | lost | doubled | ledger = chain | tries (mean) |',
    );
    say('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const k of kinds) {
      const of = payments.filter((p) => p.kind === k);
      const count = (v: Verdict) => of.filter((p) => verdicts.get(p) === v).length;
      const mean = of.reduce((s, p) => s + p.tries, 0) / Math.max(1, of.length);
      const twice = of.filter((p) => (moves.get(p) ?? 0) > 1 || (cross.payouts.get(p.workflowId!) ?? 0) > 1).length;
      say(
        `| ${k} | ${of.length} | ${count('settled')} | ${count('refused')} | 0 | ${count('parked')} | ${count('stuck_unflagged')} | ${count('lost')} | ${twice} | ${k === 'crosschain' ? cross.ledgerOk : ledgerOk} | ${mean.toFixed(1)} |`,
      );
    }
    for (const t of tallies) {
      say(
        `| ${t.kind} | ${t.total} | ${t.settled} | ${t.refused} | ${t.refunded} | ${t.parked} | ${t.stuckUnflagged} | ${t.lost} | ${t.doubled} | ${t.ledgerOk} | ${(t.tries / Math.max(1, t.total)).toFixed(1)} |`,
      );
      lost += t.lost;
      doubled += t.doubled;
      problems.push(...t.problems);
    }
    const othersOk = tallies.every((t) => t.ledgerOk);
    for (const t of tallies.filter((x) => x.answers)) {
      const by = new Map<string, number>();
      for (const a of t.answers!) by.set(String(a ?? 'none'), (by.get(String(a ?? 'none')) ?? 0) + 1);
      say(`${t.kind} answers: ${[...by].map(([a, n]) => `${a}=${n}`).join(' ')}`);
    }
    const stuckUnflaggedAll = stuckUnflagged + tallies.reduce((s, t) => s + t.stuckUnflagged, 0);
    const reasons = new Map<string, number>();
    for (const p of payments) if (p.outcome && !p.outcome.settled) reasons.set(p.outcome.reason, (reasons.get(p.outcome.reason) ?? 0) + 1);
    if (reasons.size) say(`refusals: ${[...reasons].map(([r, c]) => `${r}=${c}`).join(' ')}`);
    say(`ledger = chain: ${ledgerOk} (EVM ${chainEvm}, Solana ${chainSol} base units)`);
    for (const r of reorgedOut) {
      // The reorg took these out of the chain; whatever of them was owed is back, sent again from its record.
      const back = await Promise.all(
        r.hashes.map((hash) =>
          r.chain.getTransactionReceipt({ hash }).then(
            () => true,
            () => false,
          ),
        ),
      );
      say(`reorg of ${r.name}: ${r.hashes.length} transaction(s) dropped, ${back.filter(Boolean).length} mined again since`);
    }
    for (const [name, a] of relayerAudits)
      say(
        `relayer on ${name}: ${a.mined} transactions (${a.reverted} reverted) for ${a.records} records; ` +
          `unrecorded ${a.unrecorded}, records carried out twice ${a.twice.length}, with a reverted duplicate ${a.duplicateReverted.length}`,
      );
    if (inFlightAtRetire.length) say(await takeover(tdb.db, inFlightAtRetire, verdicts, workers[workers.length - 1]!.name, workerPlans));
    for (const p of problems.slice(0, 40)) say(`  ${p}`);
    if (problems.length > 40) say(`  ... and ${problems.length - 40} more`);
    say(`lost=${lost} doubled=${doubled} stuck_unflagged=${stuckUnflaggedAll}`);
    say(`run took ${((Date.now() - runStarted) / 1000).toFixed(0)} s; loadavg ${loadavg()}`);
    const ok = lost === 0 && doubled === 0 && stuckUnflaggedAll === 0 && ledgerOk && othersOk && unknownIds === 0;
    process.exitCode = ok ? 0 : 1;
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }
}

const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const usdcOf = (chain: PublicClient, usdc: Address, who: Address) =>
  chain.readContract({ address: usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] }) as Promise<bigint>;

async function splBalance(conn: SolanaConnection, owner: PublicKey): Promise<bigint> {
  const ata = getAssociatedTokenAddressSync(SOLANA_USDC, owner, true);
  return BigInt((await conn.getTokenAccountBalance(ata)).value.amount);
}

/**
 * What became of the payments in flight when a worker was killed for good: for each, the key its
 * settlement transaction was recorded with (the retired worker's lanes, the survivor's, or none yet)
 * and its verdict. The survivor re-sends the retired lanes' recorded bytes (any process can) but never
 * re-signs them (`Relayer.repair`: only the recording key may), so a retired lane's transaction that
 * needed a replacement or a new nonce would stay unmined and be flagged stuck.
 */
async function takeover(
  db: Awaited<ReturnType<typeof openTestDatabase>>['db'],
  inFlight: Payment[],
  verdicts: Map<Payment, string>,
  retired: string,
  plans: { name: string; lanes: Hex[] }[],
): Promise<string> {
  const laneOwner = new Map(plans.flatMap((w) => w.lanes.map((k) => [privateKeyToAccount(k).address.toLowerCase(), w.name] as const)));
  // The lanes sign the same-chain settlements (Solana has its own fee payer, a cross-chain burn the role key).
  inFlight = inFlight.filter((p) => p.kind === 'eip3009' || p.kind === 'permit2');
  const ids = inFlight.filter((p) => p.workflowId).map((p) => relayerTxId(p.workflowId!, 'settle'));
  const rows = await db.em.fork().find(RelayerTransaction, { id: { $in: ids } });
  const byId = new Map(rows.map((r) => [r.id, r]));
  const tally = new Map<string, number>();
  for (const p of inFlight) {
    const row = p.workflowId ? byId.get(relayerTxId(p.workflowId, 'settle')) : undefined;
    const owner = row ? (laneOwner.get(row.signer.toLowerCase()) ?? row.signer) : 'no settle record';
    const key = `${owner === retired ? `${retired}'s lane` : owner}: ${verdicts.get(p) ?? '?'}`;
    tally.set(key, (tally.get(key) ?? 0) + 1);
  }
  const parts = [...tally].sort().map(([k, n]) => `${k} ${n}`);
  if (!parts.length) return `same-chain settlements in flight when ${retired} was killed for good: none`;
  return `same-chain settlements in flight when ${retired} was killed for good: ${inFlight.length} (by the key their transaction was recorded with: ${parts.join('; ')})`;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
