/**
 * Settlement benchmark: POST /v1/settle over real HTTP against the real stack (Temporal dev server,
 * anvil, our contracts, a real worker process, SQLite or PostgreSQL), at concurrency 1 and 16,
 * next to the floor: the same payments settled directly with the token's `transferWithAuthorization`
 * from one relayer account with local nonce management, on the same anvil, in the same run.
 *
 *   npm run bench:settle -- [--n 200] [--db sqlite|postgres] [--concurrency 16] [--value 1000000] [--logs] [--trace]
 *
 * Every settlement is checked on chain (events and balance deltas); failures = N - confirmed.
 * See bench/README.md.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { waitForReceipt } from '../test/support/evm';
import os from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import {
  createPublicClient,
  encodeFunctionData,
  http,
  keccak256,
  parseEventLogs,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTemporalDevServer, type DevServer } from '../temporal/dev-server';
import { startAnvil, type Anvil } from '../devnet/anvil';
import { deployDevnet } from '../devnet/deploy';
import { prefixedStderr, type ManagedProcess } from '../devnet/process';
import { facilitatorAbi, tokenAbi } from '../src/chains/evm/abi';
import { transferWithAuthorizationTypedData } from '../src/chains/evm/eip3009';
import { TEST_ACCOUNTS } from '../test/support/accounts';
import { openTestDatabase, type DbKind, type TestDatabase } from '../test/support/db';
import { request, signIn, startApi, type RunningApi } from '../test/support/http';
import { exactPayment } from '../test/support/payments';
import { dbEnv, startWorker } from '../test/support/services';
import { settleWorkflowId } from '../src/temporal/workflow-ids';
import { createLogger } from '../src/logger';
import { RelayerTransaction } from '../src/db/entities';

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  n: number;
  db: DbKind;
  concurrency: number;
  value: bigint;
  logs: boolean;
  trace: boolean;
  /** --dynamic-config KEY=JSON (repeatable): Temporal dev-server settings over temporal/dynamic-config.ts. */
  dynamicConfig: Record<string, unknown>;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { n: 200, db: 'sqlite', concurrency: 16, value: 1_000_000n, logs: false, trace: false, dynamicConfig: {} };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const next = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--n':
        o.n = Number(next());
        break;
      case '--db': {
        const v = next();
        if (v !== 'sqlite' && v !== 'postgres') throw new Error(`--db must be sqlite or postgres, not ${v}`);
        o.db = v;
        break;
      }
      case '--concurrency':
      case '--c':
        o.concurrency = Number(next());
        break;
      case '--value':
        o.value = BigInt(next());
        break;
      case '--logs':
        o.logs = true;
        process.env.TEST_WORKER_LOGS = '1'; // startWorker forwards the worker's lines to stderr
        break;
      case '--trace':
        o.trace = true;
        break;
      case '--dynamic-config': {
        const [key, json] = next().split(/=(.*)/s, 2);
        if (!key || json === undefined) throw new Error('--dynamic-config needs KEY=JSON');
        o.dynamicConfig[key] = JSON.parse(json);
        break;
      }
      case '-h':
      case '--help':
        console.log(
          'usage: npm run bench:settle -- [--n 200] [--db sqlite|postgres] [--concurrency 16] [--value 1000000] [--logs] [--trace] [--dynamic-config KEY=JSON ...]',
        );
        process.exit(0);
      // falls through (never reached)
      default:
        throw new Error(`unknown argument ${argv[i]} (try --help)`);
    }
  }
  if (!Number.isInteger(o.n) || o.n < 1) throw new Error('--n must be a positive integer');
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw new Error('--concurrency must be a positive integer');
  return o;
}

// ---------------------------------------------------------------------------------------------
// Measurement helpers

interface PhaseResult {
  mode: 'api' | 'floor';
  concurrency: number;
  n: number;
  wallMs: number;
  latencies: number[];
  /** Settlements on chain when the row ended (throughput counts these). */
  confirmed: number;
  /** Settlements on chain after every workflow of the row finished (failures = n − this). */
  finalConfirmed: number;
  recount?: () => Promise<{ confirmed: number; issues: string[] }>;
  /** On-chain inconsistencies (duplicate events, balance != count) at the last count. */
  chainIssues: string[];
  /** Things worth printing under the table (non-200 answers, balance mismatches, errors). */
  notes: string[];
  /** api rows: workflow id of payment i (for --trace). */
  workflowIds?: string[];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Nearest-rank percentile of an ascending array. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` in flight (closed loop). */
async function runClosedLoop(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      for (let i = next++; i < n; i = next++) await task(i);
    }),
  );
  return performance.now() - t0;
}

/** A FIFO mutex: callers run one at a time, in call order. */
function mutex() {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

/** `pid` and all its descendants (Linux /proc; just `pid` elsewhere). */
function processTree(pid: number): number[] {
  const out = [pid];
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // gone already, or no /proc
  }
  for (const tid of tids) {
    let kids: string;
    try {
      kids = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
    } catch {
      continue; // that thread ended meanwhile
    }
    for (const kid of kids ? kids.split(/\s+/).map(Number) : []) if (!out.includes(kid)) out.push(...processTree(kid));
  }
  return out;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// ---------------------------------------------------------------------------------------------
// Stack (the same modules and steps as test/support/global-setup.ts, but private to this run:
// nothing is written to .data/, so a concurrent `npm test` keeps its own stack)

interface Stack {
  temporal: DevServer;
  base: Anvil;
  optimism: Anvil;
  usdc: Address;
  facilitator: Address;
  workflowBundlePath: string;
  tmpDir: string;
}

async function startStack(opts: Options, cleanups: (() => Promise<unknown>)[]): Promise<Stack> {
  const log = (name: string) => (opts.logs ? prefixedStderr(name) : () => undefined);
  const tmpDir = mkdtempSync(join(os.tmpdir(), 'x402-bench-'));
  cleanups.push(async () => rmSync(tmpDir, { recursive: true, force: true }));

  const started = await Promise.allSettled([
    startTemporalDevServer({ uiPort: false, log: log('temporal'), dynamicConfig: opts.dynamicConfig }),
    startAnvil({ chainId: 84532, log: log('anvil:84532') }),
    startAnvil({ chainId: 11155420, log: log('anvil:11155420') }),
  ]);
  for (const s of started) if (s.status === 'fulfilled') cleanups.push(() => s.value.stop());
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  const [temporal, base, optimism] = started.map((s) => (s as PromiseFulfilledResult<unknown>).value) as [DevServer, Anvil, Anvil];

  const buyers = TEST_ACCOUNTS.buyers.map((a) => ({ address: a.address, amount: 1_000_000_000_000n }));
  const relayers = TEST_ACCOUNTS.relayers.map((a) => a.address);
  const [deployed] = await Promise.all([
    deployDevnet({ rpcUrl: base.rpcUrl, chainId: base.chainId, relayers, buyers }),
    deployDevnet({ rpcUrl: optimism.rpcUrl, chainId: optimism.chainId, relayers, buyers }),
  ]);

  const workflowBundlePath = join(tmpDir, 'workflow-bundle.js');
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: new DefaultLogger('WARN') });
  writeFileSync(workflowBundlePath, code);

  return { temporal, base, optimism, usdc: deployed.usdc, facilitator: deployed.facilitator, workflowBundlePath, tmpDir };
}

/** The facilitator service (as test/support/settle-harness.ts builds it): DB, API in-process, worker process. */
interface Service {
  tdb: TestDatabase;
  api: RunningApi;
  temporal: Client;
  worker: ManagedProcess;
  apiKey: string;
  cookie: string;
  relayer: Address;
}

async function startService(stack: Stack, opts: Options, cleanups: (() => Promise<unknown>)[]): Promise<Service> {
  const relayerKey = TEST_ACCOUNTS.relayerKeys[0];
  // Same variables as test/support/services.ts stackEnv(), from our own stack instead of .data/test-stack.json.
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', // the worker's 'worker ready' line is info
    TEMPORAL_ADDRESS: stack.temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-settle-${opts.db}-${randomBytes(4).toString('hex')}`,
    RELAYER_PRIVATE_KEY: relayerKey,
    RPC_URLS_BASE_SEPOLIA: stack.base.rpcUrl,
    RPC_URLS_OPTIMISM_SEPOLIA: stack.optimism.rpcUrl,
    WORKFLOW_BUNDLE_PATH: stack.workflowBundlePath,
    PLATFORM_FEE_RECIPIENT: TEST_ACCOUNTS.feeRecipient.address,
  };
  const tdb = await openTestDatabase(opts.db, env);
  cleanups.push(() => tdb.close());
  const connection = await Connection.connect({ address: stack.temporal.address });
  cleanups.push(() => connection.close());
  const temporal = new Client({ connection });
  // --logs: the API's warnings and errors (a 500's cause) on stderr; silent otherwise.
  const logger = createLogger(opts.logs ? 'warn' : 'silent', 'bench-api');
  const api = await startApi({ db: tdb.db, config: tdb.config, temporal, logger });
  cleanups.push(() => api.close());
  const worker = await startWorker({ ...env, ...dbEnv(tdb.config) });
  // Stop the worker as a process tree: if it runs under a launcher (the tsx CLI), SIGKILLing only
  // the launcher when shutdown is slow (activities still in flight) would orphan the real worker.
  // So: SIGINT, wait, then SIGKILL whatever of its tree is left, by pid.
  const workerTree = processTree(worker.child.pid!);
  cleanups.push(async () => {
    await worker.stop({ signal: 'SIGINT', timeoutMs: 20_000 });
    const deadline = Date.now() + 5_000;
    while (workerTree.some(isAlive) && Date.now() < deadline) await sleep(100);
    for (const pid of workerTree.filter(isAlive).reverse()) process.kill(pid, 'SIGKILL');
    const killed = Date.now() + 5_000;
    while (workerTree.some(isAlive) && Date.now() < killed) await sleep(50);
  });

  const owner = privateKeyToAccount(generatePrivateKey());
  const cookie = await signIn(api.baseUrl, owner);
  const key = await request('POST', `${api.baseUrl}/v1/api_keys`, { cookie, json: { name: 'bench seller', test_net: true } });
  if (key.status !== 201) throw new Error(`POST /v1/api_keys: ${key.status} ${JSON.stringify(key.body)}`);
  return { tdb, api, temporal, worker, apiKey: key.body.api_key, cookie, relayer: privateKeyToAccount(relayerKey).address };
}

// ---------------------------------------------------------------------------------------------
// (a)/(b): POST /v1/settle

async function benchApi(stack: Stack, svc: Service, chain: PublicClient, opts: Options, concurrency: number): Promise<PhaseResult> {
  const { n, value } = opts;
  // A fresh payout wallet per phase: its balance delta is exactly this phase's settlements.
  const payout = privateKeyToAccount(generatePrivateKey()).address;
  const patched = await request('PATCH', `${svc.api.baseUrl}/v1/organization`, {
    cookie: svc.cookie,
    json: { payoutWalletTest: payout, platformFeeBps: 0 },
  });
  if (patched.status !== 200) throw new Error(`PATCH /v1/organization: ${patched.status} ${JSON.stringify(patched.body)}`);

  // Pre-signed (untimed): distinct random nonces, round-robin over the funded buyers.
  const now = BigInt(Math.floor(Date.now() / 1000));
  const buyers = TEST_ACCOUNTS.buyers;
  const bodies = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      exactPayment({
        buyer: buyers[i % buyers.length],
        network: 'base-sepolia',
        chainId: stack.base.chainId,
        usdc: stack.usdc,
        facilitator: stack.facilitator,
        value,
        validBefore: now + 3600n,
      }),
    ),
  );
  const fromBlock = await chain.getBlockNumber();

  const latencies: number[] = new Array(n);
  const answers = new Map<string, number>();
  const url = `${svc.api.baseUrl}/v1/settle`;
  const headers = { authorization: `Bearer ${svc.apiKey}` };
  const wallMs = await runClosedLoop(n, concurrency, async (i) => {
    const t = performance.now();
    let label: string;
    try {
      const res = await request('POST', url, { json: bodies[i], headers });
      label =
        res.status === 200 && res.body?.success === true ? 'ok' : `${res.status} ${res.body?.errorReason ?? JSON.stringify(res.body)}`;
    } catch (err) {
      label = `error ${(err as Error).message}`;
    }
    latencies[i] = performance.now() - t;
    answers.set(label, (answers.get(label) ?? 0) + 1);
  });

  // On-chain check: Settled events of these (payer, nonce) pairs paying this payout, and the balance.
  const wanted = new Set(
    bodies.map((b) => `${b.paymentPayload.payload.authorization.from.toLowerCase()}:${b.paymentPayload.payload.authorization.nonce}`),
  );
  const notes: string[] = [];
  for (const [label, count] of answers) if (label !== 'ok') notes.push(`${count} × HTTP ${label}`);
  const count = async (): Promise<{ confirmed: number; issues: string[] }> => {
    const logs = await chain.getLogs({ address: stack.facilitator, fromBlock, toBlock: 'latest' });
    const seen = new Set<string>();
    let duplicates = 0;
    for (const l of parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'Settled' })) {
      if (l.args.payout.toLowerCase() !== payout.toLowerCase() || l.args.value !== value) continue;
      const k = `${l.args.from.toLowerCase()}:${l.args.nonce}`;
      if (!wanted.has(k)) continue;
      if (seen.has(k)) duplicates++;
      seen.add(k);
    }
    const balance = await chain.readContract({ address: stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [payout] });
    const issues: string[] = [];
    if (duplicates) issues.push(`${duplicates} duplicate Settled events`);
    if (balance !== BigInt(seen.size) * value) issues.push(`payout balance ${balance} != ${seen.size} × ${value}`);
    return { confirmed: Math.min(seen.size, Number(balance / value)), issues };
  };
  const { confirmed, issues } = await count();
  const workflowIds = bodies.map((b) =>
    settleWorkflowId('base-sepolia', b.paymentPayload.payload.authorization.from, b.paymentPayload.payload.authorization.nonce),
  );
  return {
    mode: 'api',
    concurrency,
    n,
    wallMs,
    latencies,
    confirmed,
    finalConfirmed: confirmed,
    recount: count,
    notes,
    chainIssues: issues,
    workflowIds,
  };
}

/**
 * After all rows: lets every workflow an api row started finish (bounded), then counts that row's
 * settlements on chain again. A payment answered 202/500 while its workflow kept going is late,
 * not lost; one whose workflow never started (or failed) is lost.
 */
async function settleLateApiRows(client: Client, results: PhaseResult[], timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const r of results) {
    if (r.mode !== 'api' || !r.recount || r.confirmed === r.n) continue;
    let running = 0;
    for (const id of r.workflowIds!) {
      for (;;) {
        const status = await client.workflow
          .getHandle(id)
          .describe()
          .then(
            (d) => d.status.name,
            () => 'NOT_FOUND',
          );
        if (status !== 'RUNNING') break;
        if (Date.now() > deadline) {
          running++;
          break;
        }
        await sleep(250);
      }
    }
    const notFound = (
      await Promise.all(
        r.workflowIds!.map((id) =>
          client.workflow
            .getHandle(id)
            .describe()
            .then(
              () => 0,
              () => 1,
            ),
        ),
      )
    ).reduce<number>((a, b) => a + b, 0);
    const again = await r.recount();
    r.finalConfirmed = again.confirmed;
    r.chainIssues = again.issues;
    if (r.finalConfirmed > r.confirmed)
      r.notes.push(`${r.finalConfirmed - r.confirmed} settled on chain only after the row ended (late, not lost)`);
    if (notFound) r.notes.push(`${notFound} payments never got a workflow (rejected before start: lost unless the seller retries)`);
    if (running) r.notes.push(`${running} workflows still running ${timeoutMs / 1000} s after the last row`);
  }
}

/** 1, 2, 3, 7 -> "1–3, 7" */
function ranges(sorted: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    out.push(i === j ? `${sorted[i]}` : `${sorted[i]}–${sorted[j]}`);
    i = j + 1;
  }
  return out.join(', ');
}

/**
 * The worker relayer's nonce state, printed when an api row lost payments: the chain's next nonce
 * (latest and pending), the nonces the relayer recorded (write-ahead records), nonces missing from
 * the records (allocated but never recorded, so never broadcast: a gap anvil waits on forever) and
 * anvil's queued pool.
 */
async function relayerDiagnosis(svc: Service, chain: PublicClient, chainId: number): Promise<string[]> {
  const [latest, pending, pool] = await Promise.all([
    chain.getTransactionCount({ address: svc.relayer, blockTag: 'latest' }),
    chain.getTransactionCount({ address: svc.relayer, blockTag: 'pending' }),
    (chain.request as (a: { method: string; params: unknown[] }) => Promise<{ pending: Hex; queued: Hex }>)({
      method: 'txpool_status',
      params: [],
    }).catch(() => undefined),
  ]);
  const rows = await svc.tdb.db.em
    .fork()
    .find(RelayerTransaction, { chainId, signer: svc.relayer.toLowerCase() }, { orderBy: { nonce: 'asc' } });
  const recorded = new Set(rows.map((r) => r.nonce));
  const max = rows.length ? rows[rows.length - 1].nonce : -1;
  const missing: number[] = [];
  for (let k = 0; k <= max; k++) if (!recorded.has(k)) missing.push(k);
  const byStatus = new Map<string, number>();
  for (const r of rows) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
  return [
    `worker relayer ${svc.relayer}: chain nonce latest=${latest} pending=${pending}; ` +
      `anvil txpool pending=${pool ? Number(pool.pending) : '?'} queued=${pool ? Number(pool.queued) : '?'}`,
    `recorded relayer transactions: ${rows.length} (nonces 0..${max}; ${[...byStatus].map(([k, v]) => `${k} ${v}`).join(', ')}); ` +
      `nonces never recorded: ${missing.length ? `${missing.length} (${ranges(missing)})` : 'none'}`,
  ];
}

// ---------------------------------------------------------------------------------------------
// (c): the floor — transferWithAuthorization straight to the token from one relayer account

async function benchFloor(
  stack: Stack,
  chain: PublicClient,
  relayer: LocalAccount,
  opts: Options,
  concurrency: number,
): Promise<PhaseResult> {
  const { n, value } = opts;
  const seller = privateKeyToAccount(generatePrivateKey()).address;
  const now = BigInt(Math.floor(Date.now() / 1000));
  const buyers = TEST_ACCOUNTS.buyers;

  // Pre-signed (untimed) buyer authorizations to the seller, and their calldata.
  const calls = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const buyer = buyers[i % buyers.length];
      const authorization = {
        from: buyer.address,
        to: seller,
        value: value.toString(),
        validAfter: (now - 600n).toString(),
        validBefore: (now + 3600n).toString(),
        nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
      };
      const typed = transferWithAuthorizationTypedData(
        { name: 'USDC', version: '2', chainId: stack.base.chainId, verifyingContract: stack.usdc },
        authorization,
      );
      const signature = await buyer.signTypedData(typed);
      const data = encodeFunctionData({
        abi: tokenAbi,
        functionName: 'transferWithAuthorization',
        args: [
          buyer.address,
          seller,
          value,
          BigInt(authorization.validAfter),
          BigInt(authorization.validBefore),
          authorization.nonce,
          signature,
        ],
      });
      return { data, from: buyer.address, nonce: authorization.nonce };
    }),
  );

  // One gas limit and fee for the whole phase (estimated on the first call, which also pays the
  // seller's zero-to-non-zero balance write, so it is the most expensive); nonces counted locally.
  const gas = ((await chain.estimateGas({ account: relayer.address, to: stack.usdc, data: calls[0].data })) * 3n) / 2n;
  const fees = await chain.estimateFeesPerGas();
  let nextNonce = await chain.getTransactionCount({ address: relayer.address, blockTag: 'pending' });
  const chainId = stack.base.chainId;
  const serialized = mutex();
  const fromBlock = await chain.getBlockNumber();

  const latencies: number[] = new Array(n);
  const errors = new Map<string, number>();
  let reverted = 0;
  const wallMs = await runClosedLoop(n, concurrency, async (i) => {
    const t = performance.now();
    try {
      // Nonce, signature and broadcast one at a time, so anvil sees this sender's nonces in order.
      const hash = await serialized(async () => {
        const rawTx = await relayer.signTransaction({
          chainId,
          type: 'eip1559',
          to: stack.usdc,
          data: calls[i].data,
          nonce: nextNonce,
          gas,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        });
        await chain.sendRawTransaction({ serializedTransaction: rawTx });
        nextNonce++;
        return keccak256(rawTx);
      });
      const receipt = await waitForReceipt(chain, hash, { timeoutMs: 60_000, maxDelayMs: 250 }); // as the relayer polls
      if (receipt.status !== 'success') reverted++;
    } catch (err) {
      const msg = (err as Error).message.split('\n')[0];
      errors.set(msg, (errors.get(msg) ?? 0) + 1);
    }
    latencies[i] = performance.now() - t;
  });

  const wanted = new Set(calls.map((c) => `${c.from.toLowerCase()}:${c.nonce}`));
  const logs = await chain.getLogs({ address: stack.usdc, fromBlock, toBlock: 'latest' });
  const seen = new Set<string>();
  for (const l of parseEventLogs({ abi: tokenAbi, logs, eventName: 'AuthorizationUsed' })) {
    const k = `${l.args.authorizer.toLowerCase()}:${l.args.nonce}`;
    if (wanted.has(k)) seen.add(k);
  }
  const balance = await chain.readContract({ address: stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [seller] });
  const notes: string[] = [];
  for (const [msg, count] of errors) notes.push(`${count} × ${msg}`);
  if (reverted) notes.push(`${reverted} reverted`);
  if (balance !== BigInt(seen.size) * value) notes.push(`seller balance ${balance} != ${seen.size} × ${value}`);
  const confirmed = Math.min(seen.size, Number(balance / value));
  return { mode: 'floor', concurrency, n, wallMs, latencies, confirmed, finalConfirmed: confirmed, notes, chainIssues: [] };
}

// ---------------------------------------------------------------------------------------------
// --trace: where the time of one POST /v1/settle goes, from the workflows' Temporal histories

async function printTrace(client: Client, r: PhaseResult): Promise<void> {
  // temporal.api.enums.v1.EventType values (stable wire enum; @temporalio/proto is not our direct dependency).
  const E = {
    EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: 2,
    EVENT_TYPE_ACTIVITY_TASK_COMPLETED: 12,
    EVENT_TYPE_ACTIVITY_TASK_FAILED: 13,
    EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: 14,
  } as const;
  const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
  const buckets = new Map<string, number[]>();
  const add = (k: string, v: number) => (buckets.get(k) ?? buckets.set(k, []).get(k)!).push(v);
  let retries = 0;
  for (let i = 0; i < r.workflowIds!.length; i++) {
    const history = await client.workflow.getHandle(r.workflowIds![i]).fetchHistory();
    const events = history.events ?? [];
    const byId = new Map(events.map((e) => [Number(e.eventId), e]));
    const start = ms(events[0]?.eventTime);
    const end = events.find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    if (!end) continue;
    const total = ms(end.eventTime) - start;
    let inActivities = 0;
    const count = new Map<string, number>();
    for (const e of events) {
      if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_FAILED || e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT) retries++;
      if (e.eventType !== E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) continue;
      const a = e.activityTaskCompletedEventAttributes!;
      const sched = byId.get(Number(a.scheduledEventId))!;
      const started = byId.get(Number(a.startedEventId))!;
      const name = sched.activityTaskScheduledEventAttributes!.activityType!.name!;
      const k = (count.get(name) ?? 0) + 1;
      count.set(name, k);
      const label = name === 'recordSettlement' ? `${name} #${k}` : name;
      add(`${label}: queue (scheduled→started)`, ms(started.eventTime) - ms(sched.eventTime));
      add(`${label}: run (started→completed)`, ms(e.eventTime) - ms(started.eventTime));
      inActivities += ms(e.eventTime) - ms(sched.eventTime);
    }
    add('workflow tasks (the rest of the workflow)', total - inActivities);
    add('workflow total (started→completed)', total);
    add('API + HTTP + start/result RPCs (HTTP latency − workflow total)', r.latencies[i] - total);
    add('HTTP latency', r.latencies[i]);
  }
  console.log(`\ntrace of api c=${r.concurrency} (${r.workflowIds!.length} workflows; ms; from Temporal event times)`);
  const width = Math.max(...[...buckets.keys()].map((k) => k.length));
  console.log(`${'segment'.padEnd(width)}  ${'p50'.padStart(7)}  ${'mean'.padStart(7)}`);
  for (const [k, v] of buckets) {
    const sorted = [...v].sort((a, b) => a - b);
    const mean = v.reduce((x, y) => x + y, 0) / v.length;
    console.log(`${k.padEnd(width)}  ${percentile(sorted, 50).toFixed(1).padStart(7)}  ${mean.toFixed(1).padStart(7)}`);
  }
  if (retries) console.log(`activity attempts failed or timed out (retried): ${retries}`);
}

// ---------------------------------------------------------------------------------------------
// Report

function printTable(results: PhaseResult[]): void {
  const floorAt = new Map(results.filter((r) => r.mode === 'floor').map((r) => [r.concurrency, r]));
  const rows: string[][] = [['mode', 'conc', 'N', 'settle/s', 'p50 ms', 'p95 ms', 'failures', 'tput/floor', 'p50/floor']];
  for (const r of results) {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    const tput = r.confirmed / (r.wallMs / 1000);
    const p50 = percentile(sorted, 50);
    const floor = floorAt.get(r.concurrency);
    let tRatio = '-';
    let pRatio = '-';
    if (floor) {
      const fs = [...floor.latencies].sort((a, b) => a - b);
      tRatio = (tput / (floor.confirmed / (floor.wallMs / 1000))).toFixed(3);
      pRatio = (p50 / percentile(fs, 50)).toFixed(2);
    }
    rows.push([
      r.mode === 'api' ? 'api POST /v1/settle' : 'floor transferWithAuth',
      String(r.concurrency),
      String(r.n),
      tput.toFixed(1),
      p50.toFixed(1),
      percentile(sorted, 95).toFixed(1),
      String(r.n - r.finalConfirmed),
      tRatio,
      pRatio,
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row: string[]) => row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows.slice(1)) console.log(line(row));
  for (const r of results)
    for (const note of [...r.notes, ...r.chainIssues]) console.log(`  note (${r.mode}, c=${r.concurrency}): ${note}`);
}

function printHeader(opts: Options): void {
  const args = process.argv.slice(2).join(' ');
  const viaNpm = process.env.npm_lifecycle_event === 'bench:settle';
  console.log(`command: ${viaNpm ? `npm run bench:settle${args ? ` -- ${args}` : ''}` : `tsx bench/settle.ts ${args}`.trim()}`);
  const cpus = os.cpus();
  console.log(
    `machine: ${os.availableParallelism?.() ?? cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown cpu'}), ` +
      `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.platform()} ${os.release()} ${os.arch()}, node ${process.version}, ` +
      `loadavg ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  console.log(
    `settings: N=${opts.n} per row, db=${opts.db}, concurrency 1 and ${opts.concurrency}, value=${opts.value} base units, ` +
      `${TEST_ACCOUNTS.buyers.length} buyers, anvil automine`,
  );
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  printHeader(opts);
  const cleanups: (() => Promise<unknown>)[] = [];
  const children: number[] = [];
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      // Reverse order: worker, api, connections and database before Temporal and anvil.
      for (const fn of cleanups.reverse()) {
        try {
          await fn();
        } catch (err) {
          console.error(`cleanup: ${(err as Error).message}`);
        }
      }
    })());
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`\n${sig}: stopping the stack`);
      void cleanup().then(() => process.exit(130));
    });
  }

  let failed: boolean;
  try {
    const t0 = performance.now();
    const stack = await startStack(opts, cleanups);
    const svc = await startService(stack, opts, cleanups);
    console.log(
      `stack: temporal ${stack.temporal.address}, anvil ${stack.base.rpcUrl} (chain ${stack.base.chainId}), ` +
        `worker relayer ${svc.relayer}, floor relayer ${TEST_ACCOUNTS.relayers[1].address}, ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    // Every process this run started (and their children), checked after cleanup.
    for (const pid of [stack.temporal.pid, stack.base.pid, stack.optimism.pid, svc.worker.child.pid!]) children.push(...processTree(pid));
    console.log(`processes: ${children.join(' ')}`);
    const chain = createPublicClient({ transport: http(stack.base.rpcUrl) }) as PublicClient;
    const floorRelayer = privateKeyToAccount(TEST_ACCOUNTS.relayerKeys[1]);

    const results: PhaseResult[] = [];
    const phases: [string, () => Promise<PhaseResult>][] = [
      ['api c=1', () => benchApi(stack, svc, chain, opts, 1)],
      [`api c=${opts.concurrency}`, () => benchApi(stack, svc, chain, opts, opts.concurrency)],
      ['floor c=1', () => benchFloor(stack, chain, floorRelayer, opts, 1)],
      [`floor c=${opts.concurrency}`, () => benchFloor(stack, chain, floorRelayer, opts, opts.concurrency)],
    ];
    for (const [name, run] of phases) {
      process.stderr.write(`running ${name} (N=${opts.n})...\n`);
      const r = await run();
      process.stderr.write(`  ${name}: ${(r.wallMs / 1000).toFixed(2)} s, confirmed ${r.confirmed}/${r.n}\n`);
      results.push(r);
    }
    await settleLateApiRows(svc.temporal, results);
    const relayerNotes = results.some((r) => r.mode === 'api' && r.finalConfirmed !== r.n)
      ? await relayerDiagnosis(svc, chain, stack.base.chainId).catch((err) => [`relayer diagnosis failed: ${(err as Error).message}`])
      : [];
    console.log('');
    printTable(results);
    for (const note of relayerNotes) console.log(`  relayer: ${note}`);
    if (opts.trace) for (const r of results) if (r.mode === 'api') await printTrace(svc.temporal, r);
    failed = results.some((r) => r.finalConfirmed !== r.n);
  } finally {
    await cleanup();
    const settle = Date.now() + 3_000; // exited processes may take a moment to be reaped
    while (children.some(isAlive) && Date.now() < settle) await sleep(50);
    const left = children.filter(isAlive);
    console.log(
      left.length === 0
        ? `cleanup: stopped all ${children.length} processes this run started (temporal, anvil ×2, worker, and their children): none left`
        : `cleanup: STILL RUNNING: ${left.join(' ')}`,
    );
    if (left.length) failed = true;
  }
  if (failed) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
