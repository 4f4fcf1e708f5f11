/**
 * A deterministic simulation of the EVM relayer, in the manner of FoundationDB's and TigerBeetle's
 * simulators: the real `Relayer` (src/chains/evm/relayer.ts), on a real SQLite database, against an
 * in-memory model of a chain (test/support/model-chain.ts) that injects the faults a schedule names.
 * fast-check generates the schedules (sends, waits, blocks, fee moves, HTTP errors, lost answers,
 * lagging replicas, dropped and foreign transactions, reorgs, worker restarts), and after each run,
 * once every fault is healed and the chain has mined until quiet, checks:
 *   1. no effect moved money twice;
 *   2. every effect that was sent ends mined, or is still pending in its record (parked): never lost;
 *   3. the record of each mined effect names the transaction that moved the money.
 *
 * Replaying a failure: the failure message shows fast-check's `seed` and `path`. Run
 *   SIM_SEED=<seed> SIM_PATH=<path> npx jest --selectProjects unit --runTestsByPath test/unit/relayer-simulation.test.ts
 * (which passes `fc.assert(property, { seed, path })`) to replay the shrunk counterexample alone, or
 * add the printed counterexample to EXAMPLES below, with a line saying what it exposed.
 * SIM_RUNS=<n> runs more schedules (default 100); SIM_VERBOSE=1 prints each run's model log.
 *
 * What replays exactly is the schedule and every decision of the model (no randomness outside the
 * schedule: the signer's key and so every hash come from the schedule's seed). The relayer's own
 * timers (its poll pauses, `replaceAfterMs`) run on the real clock, kept at milliseconds, so how many
 * polls fit in a wait can vary from one replay to the next: a counterexample is kept when it fails on
 * replay.
 */
import fc from 'fast-check';
import { keccak256, pad, toHex, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { buildNetworkTable } from '../../src/chains/networks';
import { Relayer } from '../../src/chains/evm/relayer';
import { RelayerTransaction } from '../../src/db/entities';
import { openTestDatabase, type TestDatabase } from '../support/db';
import { EFFECT_MARKER, ModelChain, ModelServer, effectKey } from '../support/model-chain';

const GWEI = 1_000_000_000n;
const CHAIN_ID = 84532; // base-sepolia, whose network-table entry the relayer is given
const TOKEN = '0x00000000000000000000000000000000000070c3' as Address;
const RUNS = Number(process.env.SIM_RUNS ?? 100);
const VERBOSE = process.env.SIM_VERBOSE === '1';

type Step =
  | { kind: 'send'; effect: number; background: boolean }
  | { kind: 'wait'; effect: number; ms: number }
  | { kind: 'mine'; blocks: number }
  | { kind: 'auto-mine'; every: number }
  | { kind: 'fee'; move: 'spike' | 'up' | 'down' }
  | { kind: 'http-errors'; n: number; status: 429 | 503 }
  | { kind: 'lose-sends'; n: number }
  | { kind: 'lag'; blocks: number; reads: number }
  | { kind: 'drop'; index: number }
  | { kind: 'foreign'; how: 'outbid' | 'outbid-reorged' | 'next' }
  | { kind: 'reorg'; depth: number }
  | { kind: 'restart'; recover: boolean }
  | { kind: 'nudge'; effect: number; how: 'rebroadcast' | 'replace' };

interface Schedule {
  seed: number;
  effects: number;
  replaceAfterMs: number;
  rejectBelowBaseFee: boolean;
  syncSends: boolean;
  steps: Step[];
  /** The network's CONFIRMATION_DEPTH (default 0, the devnet's). */
  confirmationDepth?: number;
}

const effectArb = fc.nat({ max: 3 });
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('send' as const), effect: effectArb, background: fc.boolean() }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('wait' as const), effect: effectArb, ms: fc.integer({ min: 3, max: 25 }) }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('mine' as const), blocks: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('auto-mine' as const), every: fc.constantFrom(0, 2, 5, 11) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('fee' as const), move: fc.constantFrom('spike' as const, 'up' as const, 'down' as const) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('http-errors' as const),
      n: fc.integer({ min: 1, max: 6 }),
      status: fc.constantFrom(429 as const, 503 as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('lose-sends' as const), n: fc.integer({ min: 1, max: 4 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('lag' as const),
      blocks: fc.integer({ min: 1, max: 4 }),
      reads: fc.integer({ min: 1, max: 60 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('drop' as const), index: fc.nat({ max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('foreign' as const), how: fc.constantFrom('outbid' as const, 'next' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reorg' as const), depth: fc.integer({ min: 1, max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), recover: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('nudge' as const),
      effect: effectArb,
      how: fc.constantFrom('rebroadcast' as const, 'replace' as const),
    }),
  },
);

const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  seed: fc.nat(),
  effects: fc.integer({ min: 1, max: 4 }),
  replaceAfterMs: fc.constantFrom(5, 10, 20),
  rejectBelowBaseFee: fc.boolean(),
  syncSends: fc.boolean(),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 20 }),
});

/**
 * Counterexamples the simulation found, kept as regression cases (each runs first, every time).
 * Each entry: a one-line comment of what it exposed, then the schedule fast-check printed.
 */
const EXAMPLES: [Schedule][] = [
  // A send killed by a restart, signed again at heal: a re-nonce that skipped the block's proof (a mutant whose
  // nonceHolder named a foreign transaction) moved the money twice. Kept: the smallest schedule through that path.
  [
    {
      seed: 494685191,
      effects: 3,
      replaceAfterMs: 10,
      rejectBelowBaseFee: true,
      syncSends: true,
      steps: [
        { kind: 'send', effect: 2, background: false },
        { kind: 'send', effect: 3, background: false },
        { kind: 'send', effect: 1, background: true },
      ],
    },
  ],
];

const idOf = (k: number) => `sim:${k}`;
const callOf = (k: number) => ({ to: TOKEN, data: `${EFFECT_MARKER}${pad(toHex(k), { size: 28 }).slice(2)}` as Hex });

let tdb: TestDatabase;
let server: ModelServer;
let runNo = 0;

beforeAll(async () => {
  [tdb, server] = await Promise.all([openTestDatabase('sqlite'), ModelServer.start()]);
  // One run before the property's, so that its first schedule does not also pay for warming up (JIT, the first writes).
  await simulate({
    seed: 0,
    effects: 1,
    replaceAfterMs: 10,
    rejectBelowBaseFee: false,
    syncSends: false,
    steps: [{ kind: 'send', effect: 0, background: false }],
  });
});
afterAll(async () => {
  await server?.stop();
  await tdb?.close();
});

/** What a run ended with: the violations of the invariants (empty when it held), and the model's log. */
interface Outcome {
  violations: string[];
  log: string[];
  stats: Record<string, number>;
}

async function simulate(s: Schedule): Promise<Outcome> {
  const run = runNo++;
  const effects = Math.min(s.effects, 4);
  const db = tdb.db;
  await db.em.fork().nativeDelete(RelayerTransaction, {});
  const chain = new ModelChain({
    chainId: CHAIN_ID,
    baseFeePerGas: GWEI,
    rejectBelowBaseFee: s.rejectBelowBaseFee,
    syncSends: s.syncSends,
  });
  const account = privateKeyToAccount(keccak256(toHex(`relayer-simulation:${s.seed}`)));
  const attempted = new Set<number>();
  const notes: string[] = [];
  let inflight: Promise<unknown>[] = [];
  let incarnation = 0;
  let url = '';
  let relayer!: Relayer;

  /** A worker (re)start: a new Relayer on the same database and key, on its own endpoint. */
  const boot = async (recover: boolean) => {
    if (url) {
      chain.log.push(`kill #${incarnation - 1}`);
      server.kill(url); // the old process is gone: whatever it still had in flight fails
      await Promise.allSettled(inflight);
      inflight = [];
      server.forget(url);
    }
    url = server.endpoint(`run${run}-${incarnation++}`, chain);
    const depth = { CONFIRMATION_DEPTH_BASE_SEPOLIA: String(s.confirmationDepth ?? 0) };
    const network = buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: url, ...depth }).get('base-sepolia')!;
    relayer = new Relayer(network, account, db, { replaceAfterMs: s.replaceAfterMs });
    chain.log.push(`boot #${incarnation - 1}${recover ? ' (recoverPending)' : ''}`);
    if (recover) await relayer.recoverPending().catch((err: unknown) => notes.push(`recoverPending: ${short(err)}`));
  };
  const send = (k: number) => {
    attempted.add(k);
    return relayer.send(idOf(k), callOf(k)).then(
      ({ hash, reused }) => chain.log.push(`send ${k} -> ${hash.slice(0, 10)}${reused ? ' (reused)' : ''}`),
      (err: unknown) => chain.log.push(`send ${k} failed: ${short(err)}`),
    );
  };
  const wait = async (k: number, ms: number) => {
    const record = await relayer.find(idOf(k)).catch(() => null);
    if (!record) {
      await new Promise((r) => setTimeout(r, ms)); // nothing to wait for yet: time passes all the same
      return false;
    }
    const receipt = await relayer.waitForReceipt(record, ms).catch((err: unknown) => {
      chain.log.push(`wait ${k} failed: ${short(err)}`);
      return null;
    });
    chain.log.push(`wait ${k} (${ms} ms) -> ${receipt ? `${receipt.transactionHash.slice(0, 10)} #${receipt.blockNumber}` : 'none'}`);
    return receipt !== null;
  };

  await boot(false);
  for (const step of s.steps) {
    switch (step.kind) {
      case 'send': {
        const sent = send(step.effect % effects);
        if (step.background) inflight.push(sent);
        else await sent;
        break;
      }
      case 'wait':
        await wait(step.effect % effects, step.ms);
        break;
      case 'mine':
        for (let i = 0; i < step.blocks; i++) chain.mine();
        break;
      case 'auto-mine':
        chain.mineEvery = step.every;
        break;
      case 'fee': {
        const fee = chain.nextBaseFee;
        chain.nextBaseFee = step.move === 'spike' ? fee * 3n : step.move === 'up' ? (fee * 9n) / 8n : max((fee * 7n) / 8n, GWEI / 10n);
        chain.log.push(`fee ${step.move} -> ${chain.nextBaseFee}`);
        break;
      }
      case 'http-errors':
        chain.faults.httpErrors = step.n;
        chain.faults.httpStatus = step.status;
        break;
      case 'lose-sends':
        chain.faults.lostSends = step.n;
        break;
      case 'lag':
        chain.faults.laggedReads = step.reads;
        chain.faults.lagBlocks = step.blocks;
        break;
      case 'drop':
        chain.drop(account.address, step.index);
        break;
      case 'foreign':
        await chain.foreign(account, step.how);
        break;
      case 'reorg':
        chain.reorg(step.depth);
        break;
      case 'restart':
        await boot(step.recover);
        break;
      case 'nudge': {
        const k = step.effect % effects;
        if (!attempted.has(k)) break;
        const nudged = await relayer.nudge(idOf(k), step.how).catch((err: unknown) => short(err));
        chain.log.push(`nudge ${k} ${step.how} -> ${typeof nudged === 'string' ? nudged : nudged.hash.slice(0, 10)}`);
        break;
      }
    }
  }

  // Heal: every fault ends, the base fee falls back, the worker restarts (as after an outage) and
  // each effect's activity is retried until it has its receipt, as Temporal would.
  chain.heal(GWEI);
  chain.mineEvery = 3;
  await boot(true);
  const done = new Set<number>();
  for (let round = 0; round < 12 && done.size < attempted.size; round++) {
    for (const k of [...attempted].sort()) {
      if (done.has(k)) continue;
      const sent = await relayer.send(idOf(k), callOf(k)).then(
        () => true,
        (err: unknown) => notes.push(`heal send ${k}: ${short(err)}`) < 0,
      );
      if (sent && (await wait(k, 30))) done.add(k);
    }
    chain.mine();
  }
  chain.mineEvery = 0;
  for (let i = 0; i < 5 && chain.pooled(account.address).length > 0; i++) chain.mine();
  await Promise.allSettled(inflight);
  server.forget(url);

  // The invariants, from the chain's blocks and the database's records alone.
  const violations: string[] = [...chain.modelErrors.map((e) => `model error: ${e}`)];
  const executed = chain.executions();
  const records = await db.em.fork().find(RelayerTransaction, {});
  for (let k = 0; k < effects; k++) {
    const hashes = executed.get(effectKey(callOf(k).to, callOf(k).data)) ?? [];
    const record = records.find((r) => r.id === idOf(k));
    if (hashes.length > 1) violations.push(`effect ${k} moved money ${hashes.length} times: ${hashes.join(', ')}`);
    if (!attempted.has(k)) {
      if (hashes.length > 0 || record) violations.push(`effect ${k} was never sent, yet ${record ? 'is recorded' : 'moved money'}`);
      continue;
    }
    if (!record) {
      if (hashes.length > 0) violations.push(`effect ${k} moved money (${hashes[0]}) without any record`);
      else {
        notes.push(`effect ${k}: never recorded (parked before signing)`);
        chain.stats.unrecorded = (chain.stats.unrecorded ?? 0) + 1;
      }
      continue;
    }
    if (record.status === 'mined') {
      if (hashes.length === 0) violations.push(`effect ${k} is recorded mined as ${record.hash} but never moved money (lost)`);
      else if (record.hash !== hashes[0]) violations.push(`effect ${k}'s record names ${record.hash}, but ${hashes[0]} moved the money`);
    } else if (record.status === 'signed') {
      if (hashes.length > 0) violations.push(`effect ${k} moved money (${hashes[0]}) but its record still says pending (${record.hash})`);
      else {
        notes.push(`effect ${k}: parked, pending as ${record.hash}`);
        chain.stats.parked = (chain.stats.parked ?? 0) + 1;
      }
    } else {
      violations.push(`effect ${k}'s record has status ${record.status}`);
    }
  }
  if (notes.length > 0) chain.log.push(...notes.map((n) => `note: ${n}`));
  return { violations, log: chain.log, stats: chain.stats };
}

const short = (err: unknown) => (err instanceof Error ? err.message.split('\n')[0] : String(err)).slice(0, 160);
const max = (a: bigint, b: bigint) => (a > b ? a : b);

test(
  'the relayer moves each effect at most once and its record names the transaction that did, whatever the schedule',
  async () => {
    const totals: Record<string, number> = {};
    const started = Date.now();
    const property = fc.asyncProperty(scheduleArb, async (schedule) => {
      const outcome = await simulate(schedule);
      for (const [k, v] of Object.entries(outcome.stats)) totals[k] = (totals[k] ?? 0) + v;
      if (VERBOSE || (process.env.SIM_SHOW_PARKED === '1' && (outcome.stats.parked || outcome.stats.unrecorded)))
        console.log(JSON.stringify(schedule), '\n  ' + outcome.log.join('\n  '));
      if (outcome.violations.length > 0) {
        throw new Error(
          `${outcome.violations.join('\n')}\nschedule: ${JSON.stringify(schedule)}\nmodel log:\n  ${outcome.log.join('\n  ')}`,
        );
      }
    });
    const replay = process.env.SIM_SEED ? { seed: Number(process.env.SIM_SEED), path: process.env.SIM_PATH } : {};
    await fc.assert(property, { numRuns: RUNS, examples: EXAMPLES, ...replay });
    if (VERBOSE || process.env.SIM_SHOW_PARKED === '1') console.log(totals, `${Date.now() - started} ms`);
  },
  Math.max(120_000, RUNS * 500),
);

/**
 * Found by the simulation (SIM_RUNS=2000; shrunk here by hand to a schedule without timing in it): a
 * recorded transaction the node refuses (its maxFeePerGas is now below the base fee, on a node that
 * refuses those, as anvil does) made every retry of `send` throw the refusal, so the activity that
 * sends never completed and the wait that would replace it (`repair`) never ran. `send` now leaves a
 * refused re-broadcast of a recorded transaction to the wait's repair.
 */
test('an effect whose recorded bytes the node refuses is still mined once its activity is retried (liveness)', async () => {
  const parked = await simulate({
    seed: 7,
    effects: 1,
    replaceAfterMs: 10,
    rejectBelowBaseFee: true,
    syncSends: false,
    steps: [
      { kind: 'fee', move: 'down' },
      { kind: 'mine', blocks: 1 }, // block 1 at 0.875 gwei
      { kind: 'fee', move: 'down' },
      { kind: 'mine', blocks: 1 }, // block 2 at 0.766 gwei: the send is priced at 1.2 x 0.766 + tip = 0.920 gwei
      { kind: 'send', effect: 0, background: false },
      { kind: 'drop', index: 0 }, // the node forgets it (as when the worker died between the record and the broadcast)
    ],
    // At heal the base fee is back at 1 gwei, above the recorded bytes' 0.920: every re-send is refused.
  });
  expect(parked.violations).toEqual([]);
  expect(parked.stats.parked ?? 0).toBe(0);
});

/**
 * Found by the simulation (SIM_RUNS=2000, seed -1822426657, path
 * "219:0:0:0:0:3:1:7:7:9:8:8:8:10:10:10:12:10:10:10"; the shrunk schedule below): the receipt of the
 * effect's transaction is seen; a one-block reorg returns that transaction to the pool, where a foreign
 * transaction of our key outbids it at its nonce and is mined. At a confirmation depth of 0 (the
 * devnet's) the receipt counted at first sight, the record said mined with a hash that moved nothing,
 * and the effect was lost. With CONFIRMATION_DEPTH 2 (at least the model's reorgs) the receipt counts
 * only when final, the nonce is proven foreign, and the call is signed again. The property's schedules
 * run at depth 0 and do not outbid a reorged transaction ('outbid' skips them), so that they check the rest.
 */
test('a mined record whose block is reorged away while another transaction takes its nonce is not lost (reorg)', async () => {
  const outcome = await simulate({
    seed: 0,
    confirmationDepth: 2,
    effects: 1,
    replaceAfterMs: 5,
    rejectBelowBaseFee: false,
    syncSends: false,
    steps: [
      { kind: 'send', effect: 0, background: false },
      { kind: 'mine', blocks: 1 },
      { kind: 'wait', effect: 0, ms: 3 },
      { kind: 'reorg', depth: 1 },
      { kind: 'foreign', how: 'outbid-reorged' },
      { kind: 'http-errors', n: 1, status: 429 },
    ],
  });
  expect(outcome.violations).toEqual([]);
});
