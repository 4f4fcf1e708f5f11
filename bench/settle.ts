/**
 * Settlement benchmark: POST /v1/settle over real HTTP against the real stack (Temporal dev server,
 * anvil, our contracts, real API and worker processes, SQLite or PostgreSQL), at concurrency 1 and
 * 16, next to two baselines on the same anvil in the same run (bench/floor.ts): the floor (the
 * token's `transferWithAuthorization` sent directly from one relayer account) and the orchestration
 * floor (the same call as the one local activity of a tiny workflow), and a bare workflow (no
 * activity: Temporal alone). Also: repeats of settled payments, CPU per settlement of each process
 * and the API's and worker's memory.
 *
 *   npm run bench:settle -- [--n 200] [--db sqlite|postgres] [--concurrency 16] [--value 1000000]
 *                           [--block-time S] [--rounds R] [--logs] [--trace] [--dynamic-config KEY=JSON ...]
 *
 * `--cluster`: on the topology of `npm run cluster` (devnet/cluster-plan.ts: the Temporal server on
 * PostgreSQL with its history shards, our database on PostgreSQL), the api row at the high concurrency
 * with one worker and with two (each with its own --lanes keys, default 2), their ratios, and CPU per
 * settlement of every process.
 *
 * Every settlement is checked on chain (events and balance deltas); failures = N - confirmed.
 * See bench/README.md.
 */
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { createPublicClient, http, parseEventLogs, type Address, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type LocalAccount } from 'viem/accounts';
import { startTemporalDevServer, type DevServer } from '../temporal/dev-server';
import { clusterHistoryShards, clusterWorkers, freeClusterPort, startClusterTemporal, type ClusterWorker } from '../devnet/cluster-plan';
import { dropClusterDatabases } from '../test/support/cluster';
import { rpc, startAnvil, type Anvil } from '../devnet/anvil';
import { deployDevnet } from '../devnet/deploy';
import { prefixedStderr, repoRoot, spawnManaged, type ManagedProcess } from '../devnet/process';
import { TEST_ACCOUNTS } from '../test/support/accounts';
import { openTestDatabase, type DbKind, type TestDatabase } from '../test/support/db';
import { request, signIn } from '../test/support/http';
import { exactPayment } from '../test/support/payments';
import { dbEnv, startWorker, testDataConverter } from '../test/support/services';
import { settleWorkflowId } from '../src/temporal/workflow-ids';
import { RelayerTransaction } from '../src/db/entities';
import { benchBareWorkflow, benchFloor, benchOrchestrationFloor, type FloorChain } from './floor';
import { mergeRounds, percentile, runClosedLoop, sleep, type Mode, type PhaseResult } from './measure';
import { cpuDelta, cpuSnapshot, isAlive, oldestProcessNamed, processTree, rssBytes } from './proc';
import { spawnApi, spawnFloorWorker, stopTree } from './processes';
import { WORKFLOWS_PATH, workflowBundleOptions } from '../src/temporal/workflow-bundle';
import { facilitatorAbi, tokenAbi } from '../src/chains/evm/abi';

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
  /** --block-time S: anvil interval mining (a block every S seconds) once the contracts are deployed. */
  blockTime?: number;
  /** --lanes K: the worker gets K relayer keys (RELAYER_PRIVATE_KEYS), fresh and allowed at deploy. */
  lanes: number;
  /** --no-c1: skip the concurrency-1 rows (long with --block-time); repeats then replay the high row. */
  c1: boolean;
  /** --runtime dist|tsx: the service processes run compiled JavaScript (as the Docker image does) or through tsx. */
  runtime: 'dist' | 'tsx';
  /** --rounds R: every row runs R times (N/R each), the rows taking turns. */
  rounds: number;
  /** --warmup W: W payments through every row's path on the second chain before the rows, not counted. */
  warmup: number;
  /** --cluster: the Temporal server on PostgreSQL; one worker against two (see the file comment). */
  cluster: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    n: 200,
    db: 'sqlite',
    concurrency: 16,
    value: 1_000_000n,
    logs: false,
    trace: false,
    dynamicConfig: {},
    lanes: 1,
    c1: true,
    runtime: 'dist',
    rounds: 1,
    warmup: 0,
    cluster: false,
  };
  let lanesGiven = false;
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
      case '--no-c1':
        o.c1 = false;
        break;
      case '--lanes':
        o.lanes = Number(next());
        lanesGiven = true;
        break;
      case '--cluster':
        o.cluster = true;
        o.db = 'postgres';
        break;
      case '--block-time':
        o.blockTime = Number(next());
        break;
      case '--rounds':
        o.rounds = Number(next());
        break;
      case '--warmup':
        o.warmup = Number(next());
        break;
      case '--runtime': {
        const v = next();
        if (v !== 'dist' && v !== 'tsx') throw new Error(`--runtime must be dist or tsx, not ${v}`);
        o.runtime = v;
        break;
      }
      case '--dynamic-config': {
        const [key, json] = next().split(/=(.*)/s, 2);
        if (!key || json === undefined) throw new Error('--dynamic-config needs KEY=JSON');
        o.dynamicConfig[key] = JSON.parse(json);
        break;
      }
      case '-h':
      case '--help':
        console.log(
          'usage: npm run bench:settle -- [--n 200] [--db sqlite|postgres] [--concurrency 16] [--value 1000000] [--logs] [--trace] [--block-time S] [--lanes K] [--no-c1] [--rounds R] [--warmup W] [--runtime dist|tsx] [--dynamic-config KEY=JSON ...] [--cluster]',
        );
        process.exit(0);
      // falls through (never reached)
      default:
        throw new Error(`unknown argument ${argv[i]} (try --help)`);
    }
  }
  if (o.cluster && !lanesGiven) o.lanes = 2;
  if (o.cluster && o.db !== 'postgres') throw new Error('--cluster runs on PostgreSQL (--db postgres)');
  if (!Number.isInteger(o.n) || o.n < 1) throw new Error('--n must be a positive integer');
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw new Error('--concurrency must be a positive integer');
  if (!Number.isInteger(o.lanes) || o.lanes < 1) throw new Error('--lanes must be a positive integer');
  if (!Number.isInteger(o.rounds) || o.rounds < 1 || o.n % o.rounds !== 0)
    throw new Error('--rounds must be a positive integer that divides --n');
  if (!Number.isInteger(o.warmup) || o.warmup < 0) throw new Error('--warmup must be a non-negative integer');
  if (o.blockTime !== undefined && !(o.blockTime > 0)) throw new Error('--block-time must be a positive number of seconds');
  return o;
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
  /** The contracts on the second chain (optimism-sepolia), where --warmup runs. */
  optimismContracts: { usdc: Address; facilitator: Address };
  workflowBundlePath: string;
  floorBundlePath: string;
  /** The worker's relayer keys: test relayer #1 alone, or --lanes fresh keys. */
  laneKeys: Hex[];
  /** --cluster: the two workers, each with --lanes fresh keys of its own and the role keys of test relayer #1. */
  clusterWorkers?: ClusterWorker[];
  tmpDir: string;
}

/**
 * The service compiled with `tsc` into `outDir`, as the Docker image builds it; the API and workers
 * are then started from there (devnet/process.ts entryArgs), without tsx's loader in their CPU and memory.
 */
async function compileService(outDir: string): Promise<void> {
  const tsc = spawnManaged('tsc', process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json', '--outDir', outDir], {
    cwd: repoRoot(),
    log: () => undefined,
  });
  const { code } = await tsc.exited;
  if (code !== 0) throw new Error(`tsc failed (exit ${code}): ${tsc.recentOutput()}`);
  symlinkSync(join(repoRoot(), 'node_modules'), join(outDir, 'node_modules')); // its imports resolve as from the repo
  process.env.SERVICE_DIST_DIR = outDir;
}

async function startStack(opts: Options, cleanups: (() => Promise<unknown>)[]): Promise<Stack> {
  const log = (name: string) => (opts.logs ? prefixedStderr(name) : () => undefined);
  const tmpDir = mkdtempSync(join(os.tmpdir(), 'x402-bench-'));
  cleanups.push(async () => rmSync(tmpDir, { recursive: true, force: true }));

  // Compiled while the chains and Temporal start (about 40 s of one core).
  const compiled = opts.runtime === 'dist' ? compileService(join(tmpDir, 'dist')) : Promise.resolve();
  compiled.catch(() => undefined); // awaited below, once the stack is up
  const clusterDb = `x402_bench_${randomBytes(4).toString('hex')}`;
  if (opts.cluster) cleanups.push(() => dropClusterDatabases(clusterDb)); // after the server has stopped
  const started = await Promise.allSettled([
    opts.cluster
      ? freeClusterPort().then((port) =>
          startClusterTemporal({ database: clusterDb, dir: join(tmpDir, 'temporal'), port, log: log('temporal') }),
        )
      : startTemporalDevServer({ uiPort: false, log: log('temporal'), dynamicConfig: opts.dynamicConfig }),
    startAnvil({ chainId: 84532, log: log('anvil:84532') }),
    startAnvil({ chainId: 11155420, log: log('anvil:11155420') }),
  ]);
  for (const s of started) if (s.status === 'fulfilled') cleanups.push(() => s.value.stop());
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  const [temporal, base, optimism] = started.map((s) => (s as PromiseFulfilledResult<unknown>).value) as [DevServer, Anvil, Anvil];

  const buyers = TEST_ACCOUNTS.buyers.map((a) => ({ address: a.address, amount: 1_000_000_000_000n }));
  const fresh = () => Array.from({ length: opts.lanes }, () => generatePrivateKey());
  const workers = opts.cluster ? clusterWorkers(TEST_ACCOUNTS.relayerKeys[0] as Hex, [fresh(), fresh()]) : undefined;
  const laneKeys = workers ? workers.flatMap((w) => w.lanes) : opts.lanes > 1 ? fresh() : [TEST_ACCOUNTS.relayerKeys[0] as Hex];
  const relayers = [...TEST_ACCOUNTS.relayers.map((a) => a.address), ...laneKeys.map((k) => privateKeyToAccount(k).address)];
  const [deployed, deployedOptimism] = await Promise.all([
    deployDevnet({ rpcUrl: base.rpcUrl, chainId: base.chainId, relayers, buyers }),
    deployDevnet({ rpcUrl: optimism.rpcUrl, chainId: optimism.chainId, relayers, buyers }),
  ]);

  // Deployed in automine (one block per transaction, fast); interval mining only for the rows.
  if (opts.blockTime) await rpc(base.rpcUrl, 'evm_setIntervalMining', [opts.blockTime]);

  const bundle = async (workflowsPath: string, file: string) => {
    const { code } = await bundleWorkflowCode({ ...workflowBundleOptions(workflowsPath), logger: new DefaultLogger('WARN') });
    writeFileSync(join(tmpDir, file), code);
    return join(tmpDir, file);
  };
  const workflowBundlePath = await bundle(WORKFLOWS_PATH, 'workflow-bundle.js');
  const floorBundlePath = await bundle(require.resolve('./orchestration-floor/workflow'), 'floor-bundle.js');
  await compiled;

  return {
    temporal,
    base,
    optimism,
    usdc: deployed.usdc,
    facilitator: deployed.facilitator,
    optimismContracts: { usdc: deployedOptimism.usdc, facilitator: deployedOptimism.facilitator },
    workflowBundlePath,
    floorBundlePath,
    laneKeys,
    clusterWorkers: workers,
    tmpDir,
  };
}

/**
 * The facilitator service (as test/support/settle-harness.ts builds it, but with the API as its own
 * process so its CPU and memory can be read apart from the load generator's): DB, API process,
 * worker process; and the orchestration floor's worker on its own task queue and relayer key.
 */
interface Service {
  tdb: TestDatabase;
  api: { baseUrl: string; proc: ManagedProcess };
  temporal: Client;
  worker: ManagedProcess;
  /** --cluster: the second worker, stopped for the one-worker rows and started again for the two-worker rows. */
  worker2?: { proc(): ManagedProcess | undefined; start(): Promise<void>; stop(): Promise<void> };
  floorWorker: ManagedProcess;
  floorTaskQueue: string;
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
    ...(opts.lanes > 1 && !stack.clusterWorkers ? { RELAYER_PRIVATE_KEYS: stack.laneKeys.join(',') } : {}),
    RPC_URLS_BASE_SEPOLIA: stack.base.rpcUrl,
    RPC_URLS_OPTIMISM_SEPOLIA: stack.optimism.rpcUrl,
    WORKFLOW_BUNDLE_PATH: stack.workflowBundlePath,
    PLATFORM_FEE_RECIPIENT: TEST_ACCOUNTS.feeRecipient.address,
  };
  const tdb = await openTestDatabase(opts.db, env);
  cleanups.push(() => tdb.close());
  const connection = await Connection.connect({ address: stack.temporal.address });
  cleanups.push(() => connection.close());
  const temporal = new Client({ connection, dataConverter: testDataConverter({ ...process.env, ...env }) }); // the worker's payload codec, if any
  // --logs: the API's warnings and errors (a 500's cause) on stderr.
  const api = await spawnApi({ ...env, ...dbEnv(tdb.config), LOG_LEVEL: 'warn' }, opts.logs);
  cleanups.push(() => stopTree(api.proc));
  const [first, second] = stack.clusterWorkers ?? [];
  const worker = await startWorker({ ...env, ...dbEnv(tdb.config), ...first?.env });
  cleanups.push(() => stopTree(worker));
  let worker2: ManagedProcess | undefined;
  if (second) cleanups.push(async () => worker2 && stopTree(worker2));
  const secondWorker = second && {
    proc: () => worker2,
    start: async () => {
      worker2 ??= await startWorker({ ...env, ...dbEnv(tdb.config), ...second.env });
    },
    stop: async () => {
      if (worker2) await stopTree(worker2);
      worker2 = undefined;
    },
  };
  const floorTaskQueue = `${env.TEMPORAL_TASK_QUEUE}-floor`;
  const floorWorker = await spawnFloorWorker(
    {
      ...env,
      ...dbEnv(tdb.config),
      TEMPORAL_TASK_QUEUE: floorTaskQueue,
      RELAYER_PRIVATE_KEY: TEST_ACCOUNTS.relayerKeys[2],
      FLOOR_WORKFLOW_BUNDLE_PATH: stack.floorBundlePath,
    },
    opts.logs,
  );
  cleanups.push(() => stopTree(floorWorker));

  const owner = privateKeyToAccount(generatePrivateKey());
  const cookie = await signIn(api.baseUrl, owner);
  const key = await request('POST', `${api.baseUrl}/v1/api_keys`, { cookie, json: { name: 'bench seller', test_net: true } });
  if (key.status !== 201) throw new Error(`POST /v1/api_keys: ${key.status} ${JSON.stringify(key.body)}`);
  return {
    tdb,
    api,
    temporal,
    worker,
    worker2: secondWorker,
    floorWorker,
    floorTaskQueue,
    apiKey: key.body.api_key,
    cookie,
    relayer: privateKeyToAccount(relayerKey).address,
  };
}

// ---------------------------------------------------------------------------------------------
// (a)/(b): POST /v1/settle

/** What an api row keeps for the duplicates row: the bodies sent and the transaction each was answered with. */
interface ApiExtras {
  replay: { bodies: Awaited<ReturnType<typeof exactPayment>>[]; transactions: (string | undefined)[] };
}

/** A chain the payments settle on: base-sepolia for the rows, optimism-sepolia for --warmup. */
type ChainTarget = FloorChain & { facilitator: Address };

function chainTarget(stack: Stack, network: FloorChain['network'], value: bigint): ChainTarget {
  const [anvil, contracts] = network === 'base-sepolia' ? [stack.base, stack] : [stack.optimism, stack.optimismContracts];
  const chain = createPublicClient({ transport: http(anvil.rpcUrl) }) as PublicClient;
  return { network, chain, chainId: anvil.chainId, usdc: contracts.usdc, facilitator: contracts.facilitator, value };
}

async function benchApi(target: ChainTarget, svc: Service, opts: Options, concurrency: number): Promise<PhaseResult & ApiExtras> {
  const { n, value } = opts;
  const { chain } = target;
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
        network: target.network,
        chainId: target.chainId,
        usdc: target.usdc,
        facilitator: target.facilitator,
        value,
        validBefore: now + 300n, // within maxTimeoutSeconds (300): longer windows are refused
      }),
    ),
  );
  const fromBlock = await chain.getBlockNumber();

  const latencies: number[] = new Array(n);
  const transactions: (string | undefined)[] = new Array(n);
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
      if (label === 'ok') transactions[i] = res.body.transaction;
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
    const logs = await chain.getLogs({ address: target.facilitator, fromBlock, toBlock: 'latest' });
    const seen = new Set<string>();
    let duplicates = 0;
    for (const l of parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'Settled' })) {
      if (l.args.payout.toLowerCase() !== payout.toLowerCase() || l.args.value !== value) continue;
      const k = `${l.args.from.toLowerCase()}:${l.args.nonce}`;
      if (!wanted.has(k)) continue;
      if (seen.has(k)) duplicates++;
      seen.add(k);
    }
    const balance = await chain.readContract({ address: target.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [payout] });
    const issues: string[] = [];
    if (duplicates) issues.push(`${duplicates} duplicate Settled events`);
    if (balance !== BigInt(seen.size) * value) issues.push(`payout balance ${balance} != ${seen.size} × ${value}`);
    return { confirmed: Math.min(seen.size, Number(balance / value)), issues };
  };
  const { confirmed, issues } = await count();
  const workflowIds = bodies.map((b) =>
    settleWorkflowId(target.network, b.paymentPayload.payload.authorization.from, b.paymentPayload.payload.authorization.nonce),
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
    replay: { bodies, transactions },
  };
}

/**
 * Duplicates: every payment of an api row that was answered `success`, sent again one at a time.
 * Each must be answered 200 with the same transaction, and the chain must show no second
 * settlement (the api row's count is taken again: no duplicate event, balance unchanged).
 */
async function benchDuplicates(svc: Service, row: PhaseResult & ApiExtras): Promise<PhaseResult> {
  const settled = row.replay.bodies.flatMap((body, i) => (row.replay.transactions[i] ? [{ body, tx: row.replay.transactions[i]! }] : []));
  const latencies: number[] = new Array(settled.length);
  const answers = new Map<string, number>();
  const url = `${svc.api.baseUrl}/v1/settle`;
  const headers = { authorization: `Bearer ${svc.apiKey}` };
  let same = 0;
  const wallMs = await runClosedLoop(settled.length, 1, async (i) => {
    const t = performance.now();
    let label: string;
    try {
      const res = await request('POST', url, { json: settled[i].body, headers });
      const ok = res.status === 200 && res.body?.success === true;
      label = !ok
        ? `${res.status} ${res.body?.errorReason ?? JSON.stringify(res.body)}`
        : res.body.transaction === settled[i].tx
          ? 'ok'
          : 'another transaction';
    } catch (err) {
      label = `error ${(err as Error).message}`;
    }
    latencies[i] = performance.now() - t;
    if (label === 'ok') same++;
    answers.set(label, (answers.get(label) ?? 0) + 1);
  });
  const notes: string[] = [];
  for (const [label, count] of answers) if (label !== 'ok') notes.push(`${count} × HTTP ${label}`);
  const again = await row.recount!();
  if (again.confirmed !== row.confirmed) notes.push(`the api row's on-chain count moved from ${row.confirmed} to ${again.confirmed}`);
  return {
    mode: 'duplicate',
    concurrency: 1,
    n: settled.length,
    wallMs,
    latencies,
    confirmed: same,
    finalConfirmed: same,
    notes,
    chainIssues: again.issues,
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

/** How many settle transactions each worker relayer key recorded (with --lanes; --cluster: by worker too). */
async function laneUse(svc: Service, chainId: number, workers?: ClusterWorker[]): Promise<string> {
  const rows = await svc.tdb.db.em.fork().find(RelayerTransaction, { chainId, id: { $like: 'settle:%' } }, { fields: ['signer'] });
  const owner = new Map(workers?.flatMap((w) => w.lanes.map((k) => [privateKeyToAccount(k).address.toLowerCase(), w.name] as const)));
  const by = new Map<string, number>();
  for (const r of rows) {
    const key = owner.has(r.signer) ? `${owner.get(r.signer)} ${r.signer.slice(0, 10)}…` : `${r.signer.slice(0, 10)}…`;
    by.set(key, (by.get(key) ?? 0) + 1);
  }
  return [...by]
    .sort()
    .map(([signer, count]) => `${signer} ${count}`)
    .join(', ');
}

/**
 * --cluster: the two-worker api row against the one-worker row (throughput, latency, and each
 * process's CPU per settlement) as ratios, and the load average the figures were taken under.
 */
function printClusterRatios(results: PhaseResult[]): void {
  const one = results.find((r) => r.label === 'api, 1 worker');
  const two = results.find((r) => r.label === 'api, 2 workers');
  if (!one || !two) return;
  const stats = (r: PhaseResult) => {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    return { tput: r.confirmed / (r.wallMs / 1000), p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
  };
  const [a, b] = [stats(one), stats(two)];
  const cpu = (r: PhaseResult, k: string) => (r.cpu?.[k] ?? 0) / r.n;
  const workers = (r: PhaseResult) => cpu(r, 'worker-1') + cpu(r, 'worker-2');
  const all = (r: PhaseResult) => Object.keys(r.cpu ?? {}).reduce((t, k) => t + cpu(r, k), 0);
  console.log(
    `\n2 workers ÷ 1 worker (api c=${two.concurrency}, ${clusterHistoryShards()} history shards): ` +
      `settle/s ×${(b.tput / a.tput).toFixed(2)} (${a.tput.toFixed(1)} → ${b.tput.toFixed(1)}), ` +
      `p50 ×${(b.p50 / a.p50).toFixed(2)}, p95 ×${(b.p95 / a.p95).toFixed(2)}; CPU ms per settlement: ` +
      `workers ${workers(one).toFixed(1)} → ${workers(two).toFixed(1)} (worker-1 ${cpu(two, 'worker-1').toFixed(1)} + worker-2 ${cpu(two, 'worker-2').toFixed(1)}), ` +
      `temporal ${cpu(one, 'temporal').toFixed(1)} → ${cpu(two, 'temporal').toFixed(1)}, ` +
      `postgres ${cpu(one, 'postgres').toFixed(1)} → ${cpu(two, 'postgres').toFixed(1)}, all ${all(one).toFixed(1)} → ${all(two).toFixed(1)}; ` +
      `loadavg ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
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

/**
 * --warmup W: W payments through the api, the orchestration floor, the bare workflow and the floor at
 * the high concurrency, on the second chain (optimism-sepolia), before the rows and not counted. The
 * API and workers are then processes that V8 has compiled (a deployed service runs for hours), while
 * the rows' chain holds no more transactions than without it (anvil slows down as its chain grows).
 * Temporal's and our database still grow by the warm-up's workflows and rows, for every row alike.
 */
async function warmUp(stack: Stack, svc: Service, opts: Options, floorRelayer: LocalAccount): Promise<void> {
  const target = chainTarget(stack, 'optimism-sepolia', opts.value);
  const c = opts.concurrency;
  const w = opts.warmup;
  const t = performance.now();
  const runs: [string, () => Promise<PhaseResult>][] = [
    ['api', () => benchApi(target, svc, { ...opts, n: w }, c)],
    ['orchestration floor', () => benchOrchestrationFloor(target, svc.temporal, svc.floorTaskQueue, w, c)],
    ['bare workflow', () => benchBareWorkflow(svc.temporal, svc.floorTaskQueue, w, c)],
    ['floor', () => benchFloor(target, floorRelayer, w, c)],
  ];
  const outcomes: string[] = [];
  for (const [name, run] of runs) {
    process.stderr.write(`warming up: ${name} c=${c}, ${w} on ${target.network}...\n`);
    const r = await run();
    outcomes.push(`${name} ${r.confirmed}/${w}${r.notes.length ? ` (${r.notes.join('; ')})` : ''}`);
  }
  console.log(
    `warm-up on ${target.network}, c=${c}, not counted: ${outcomes.join(', ')}; ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
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

const MODE_LABEL: Record<Mode, string> = {
  api: 'api POST /v1/settle',
  duplicate: 'api repeat (settled)',
  orchestration: 'orchestration floor',
  workflow: 'bare workflow',
  floor: 'floor transferWithAuth',
};

function printRows(rows: string[][]): void {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row: string[]) => row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows.slice(1)) console.log(line(row));
}

/**
 * The main table: each row's throughput and latency, its throughput as a ratio of the floor's and of
 * the orchestration floor's at the same concurrency, and its p50/p95 minus the orchestration floor's.
 */
function printTable(results: PhaseResult[]): void {
  const stats = (r: PhaseResult) => {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    return { tput: r.confirmed / (r.wallMs / 1000), p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
  };
  const at = (mode: Mode, c: number) => results.find((r) => r.mode === mode && r.concurrency === c);
  const rows: string[][] = [
    ['mode', 'conc', 'N', 'settle/s', 'p50 ms', 'p95 ms', 'failures', 'tput/floor', 'tput/orch', 'p50−orch', 'p95−orch'],
  ];
  for (const r of results) {
    const s = stats(r);
    const floor = r.mode === 'duplicate' ? undefined : at('floor', r.concurrency);
    const orch = r.mode === 'duplicate' ? undefined : at('orchestration', r.concurrency);
    const f = floor && stats(floor);
    const o = orch && stats(orch);
    rows.push([
      r.label ?? MODE_LABEL[r.mode],
      String(r.concurrency),
      String(r.n),
      s.tput.toFixed(1),
      s.p50.toFixed(1),
      s.p95.toFixed(1),
      String(r.n - r.finalConfirmed),
      f ? (s.tput / f.tput).toFixed(3) : '-',
      o ? (s.tput / o.tput).toFixed(3) : '-',
      o ? (s.p50 - o.p50).toFixed(1) : '-',
      o ? (s.p95 - o.p95).toFixed(1) : '-',
    ]);
  }
  printRows(rows);
  for (const r of results)
    for (const note of [...r.notes, ...r.chainIssues]) console.log(`  note (${r.mode}, c=${r.concurrency}): ${note}`);
}

/** The cores this machine gives the stack (the header and the CPU table both state it). */
const coreCount = () => os.availableParallelism?.() ?? os.cpus().length;

/** The bench process's own CPU in the table (the HTTP or Temporal client of each row, and its chain checks). */
const LOAD_GENERATOR = 'load gen';

/**
 * CPU ms per settlement of each process group during each row (from /proc), their total, and the
 * throughput that total allows on this machine's cores: a row near that bound is limited by CPU,
 * so it gains only from CPU that some process stops spending.
 */
function printCpu(results: PhaseResult[], groups: string[]): void {
  console.log('\nCPU ms per settlement (user + system, from /proc, during the row; ÷ N)');
  const cores = coreCount();
  const workers = groups.filter((g) => g === 'worker' || g.startsWith('worker-'));
  const rows: string[][] = [
    ['mode', 'conc', ...groups, workers.length > 1 ? 'api+workers' : 'api+worker', 'all', `${cores} cores allow /s`],
  ];
  for (const r of results) {
    if (!r.cpu) continue;
    const per = (k: string) => (r.cpu![k] ?? 0) / r.n;
    const all = groups.reduce((t, g) => t + per(g), 0);
    rows.push([
      r.label ?? MODE_LABEL[r.mode],
      String(r.concurrency),
      ...groups.map((g) => per(g).toFixed(1)),
      (per('api') + workers.reduce((t, g) => t + per(g), 0)).toFixed(1),
      all.toFixed(1),
      all > 0 ? ((cores * 1000) / all).toFixed(0) : '-',
    ]);
  }
  printRows(rows);
}

function printHeader(opts: Options): void {
  const args = process.argv.slice(2).join(' ');
  const viaNpm = process.env.npm_lifecycle_event === 'bench:settle';
  console.log(`command: ${viaNpm ? `npm run bench:settle${args ? ` -- ${args}` : ''}` : `tsx bench/settle.ts ${args}`.trim()}`);
  const cpus = os.cpus();
  console.log(
    `machine: ${coreCount()} cores (${cpus[0]?.model.trim() ?? 'unknown cpu'}), ` +
      `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.platform()} ${os.release()} ${os.arch()}, node ${process.version}, ` +
      `loadavg ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  console.log(
    `settings: N=${opts.n} per row${opts.rounds > 1 ? ` in ${opts.rounds} rounds of ${opts.n / opts.rounds}, the rows taking turns` : ''}, db=${opts.db}, concurrency ${opts.cluster ? '' : '1 and '}${opts.concurrency}, value=${opts.value} base units, ` +
      `${TEST_ACCOUNTS.buyers.length} buyers, ${opts.lanes} relayer lane(s), anvil ${opts.blockTime ? `interval mining, a block every ${opts.blockTime} s` : 'automine'}, ` +
      `service ${opts.runtime === 'dist' ? 'compiled (node dist/…)' : 'through tsx'}` +
      (opts.warmup && !opts.cluster ? `, warm-up ${opts.warmup} per path on optimism-sepolia` : '') +
      (opts.cluster
        ? `; cluster: Temporal server on PostgreSQL, ${clusterHistoryShards()} history shards, 1 then 2 workers with ${opts.lanes} lanes each, ` +
          `${opts.warmup || 2 * opts.concurrency} payments on optimism-sepolia before each row (warm-up)`
        : ''),
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
    // --cluster: worker-1 and worker-2 (whose pid changes as it is stopped and started between rows).
    const workerGroups: Record<string, number[]> = svc.worker2
      ? { 'worker-1': [svc.worker.child.pid!], 'worker-2': [] }
      : { worker: [svc.worker.child.pid!] };
    const groups: Record<string, number[]> = {
      api: [svc.api.proc.child.pid!],
      ...workerGroups,
      'floor worker': [svc.floorWorker.child.pid!],
      temporal: [stack.temporal.pid],
      anvil: [stack.base.pid, stack.optimism.pid],
    };
    for (const pid of Object.values(groups).flat()) children.push(...processTree(pid));
    // PostgreSQL is not ours to start or stop, but its backends spend CPU on the same cores for every row.
    const postgres = opts.db === 'postgres' ? oldestProcessNamed('postgres') : undefined;
    if (postgres) groups.postgres = [postgres];
    console.log(`processes: ${children.join(' ')}`);
    const target = chainTarget(stack, 'base-sepolia', opts.value);
    const { chain } = target;
    const floorRelayer = privateKeyToAccount(TEST_ACCOUNTS.relayerKeys[1]);

    const c = opts.concurrency;
    if (opts.warmup && !opts.cluster) await warmUp(stack, svc, opts, floorRelayer);
    const n = opts.n / opts.rounds; // per round
    let apiFirst: (PhaseResult & ApiExtras) | undefined; // this round's first api row: its payments are repeated
    const api = async (conc: number) => {
      const r = await benchApi(target, svc, { ...opts, n }, conc);
      apiFirst ??= r;
      return r;
    };
    // [name, concurrency, run]; the concurrency-1 rows are left out with --no-c1.
    const orch = (conc: number) => () => benchOrchestrationFloor(target, svc.temporal, svc.floorTaskQueue, n, conc);
    const floor = (conc: number) => () => benchFloor(target, floorRelayer, n, conc);
    const bare = (conc: number) => () => benchBareWorkflow(svc.temporal, svc.floorTaskQueue, n, conc);
    // --cluster: the api row with worker-2 stopped, then started again; before each, --warmup payments
    // (default 2 × C) on optimism-sepolia warm the workers of the row (a fresh worker-2 compiles its code
    // as it goes), untimed and outside the CPU reading.
    const clusterWarmup = opts.warmup || 2 * c;
    const withWorkers = async (count: 1 | 2) => {
      if (count === 1) {
        await svc.worker2!.stop();
        groups['worker-2'] = [];
      } else {
        await svc.worker2!.start();
        const pid = svc.worker2!.proc()!.child.pid!;
        groups['worker-2'] = [pid];
        children.push(...processTree(pid));
      }
      await benchApi(chainTarget(stack, 'optimism-sepolia', opts.value), svc, { ...opts, n: clusterWarmup }, c);
    };
    const labelled = (label: string, run: () => Promise<PhaseResult>) => async () => Object.assign(await run(), { label });
    type Phase = readonly [string, number, () => Promise<PhaseResult>, (() => Promise<void>)?];
    const clusterPhases: Phase[] = [
      [`api c=${c}, 1 worker`, c, labelled('api, 1 worker', () => api(c)), () => withWorkers(1)],
      [`api c=${c}, 2 workers`, c, labelled('api, 2 workers', () => api(c)), () => withWorkers(2)],
      [`floor c=${c}`, c, floor(c)],
    ];
    const phases: Phase[] = opts.cluster
      ? clusterPhases
      : (
          [
            ['api c=1', 1, () => api(1)],
            ...(opts.c1 ? [] : ([[`api c=${c}`, c, () => api(c)]] as const)),
            ['api repeats c=1', 0, () => benchDuplicates(svc, apiFirst!)],
            ...(opts.c1 ? ([[`api c=${c}`, c, () => api(c)]] as const) : []),
            ['orchestration floor c=1', 1, orch(1)],
            [`orchestration floor c=${c}`, c, orch(c)],
            ['bare workflow c=1', 1, bare(1)],
            [`bare workflow c=${c}`, c, bare(c)],
            ['floor c=1', 1, floor(1)],
            [`floor c=${c}`, c, floor(c)],
          ] as const
        ).filter(([, conc]) => opts.c1 || conc !== 1);
    // With --rounds R every row runs R times, N/R each, the rows taking turns: a drift of the
    // machine's speed then touches every row alike instead of the rows that happened to run during it.
    const parts = new Map<string, PhaseResult[]>(phases.map(([name]) => [name, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      apiFirst = undefined;
      for (const [name, , run, prepare] of phases) {
        const label = opts.rounds > 1 ? `${name} (round ${round}/${opts.rounds})` : name;
        await prepare?.();
        process.stderr.write(`running ${label}...\n`);
        const before = cpuSnapshot(groups, LOAD_GENERATOR);
        const r = await run();
        r.cpu = cpuDelta(before, cpuSnapshot(groups, LOAD_GENERATOR));
        process.stderr.write(`  ${label}: ${(r.wallMs / 1000).toFixed(2)} s, confirmed ${r.confirmed}/${r.n}\n`);
        parts.get(name)!.push(r);
      }
    }
    const results = [...parts.values()].map(mergeRounds);
    const rss = { api: rssBytes(svc.api.proc.child.pid!), worker: rssBytes(svc.worker.child.pid!) };
    await settleLateApiRows(svc.temporal, results);
    const relayerNotes = results.some((r) => r.mode === 'api' && r.finalConfirmed !== r.n)
      ? await relayerDiagnosis(svc, chain, stack.base.chainId).catch((err) => [`relayer diagnosis failed: ${(err as Error).message}`])
      : [];
    console.log('');
    printTable(results);
    for (const note of relayerNotes) console.log(`  relayer: ${note}`);
    if (opts.lanes > 1) console.log(`  relayer lanes: ${await laneUse(svc, stack.base.chainId, stack.clusterWorkers)}`);
    if (opts.cluster) printClusterRatios(results);
    printCpu(results, [...Object.keys(groups), LOAD_GENERATOR]);
    const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
    console.log(`\nRSS at the end of the rows: api ${mib(rss.api)}, worker ${mib(rss.worker)}`);
    if (opts.trace) for (const r of results) if (r.mode === 'api') await printTrace(svc.temporal, r);
    failed = results.some((r) => r.finalConfirmed !== r.n);
  } finally {
    await cleanup();
    const settle = Date.now() + 3_000; // exited processes may take a moment to be reaped
    while (children.some(isAlive) && Date.now() < settle) await sleep(50);
    const left = children.filter(isAlive);
    console.log(
      left.length === 0
        ? `cleanup: stopped all ${children.length} processes this run started (temporal, anvil ×2, api, worker, floor worker, and their children): none left`
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
