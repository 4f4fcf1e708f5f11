/**
 * Chaos run (issue 12, "Proof"): concurrent settlements across EIP-3009, Permit2 and Solana on the
 * real local stack while the worker and the API are SIGKILLed at random moments and the EVM chain is
 * stopped and restarted once. Clients behave like sellers: on a dropped connection, a 5xx or a 202
 * they send the same payment again. At the end every payment must have settled exactly once or been
 * answered with a 4xx (and moved nothing), and the database ledger must equal the chain.
 *
 *   npm run chaos -- [--n 200] [--concurrency 24] [--seed 1] [--db sqlite|postgres] [--logs]
 *
 * Loopback only and bounded (a deadline per payment); prints `lost=0 doubled=0` or exits 1.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { Connection as SolanaConnection, Keypair, PublicKey, type VersionedTransaction } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import {
  createPublicClient,
  createWalletClient,
  http,
  maxUint256,
  parseEventLogs,
  type Address,
  type LocalAccount,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTemporalDevServer } from '../temporal/dev-server';
import { startAnvil, type Anvil } from '../devnet/anvil';
import { deployDevnet } from '../devnet/deploy';
import { startSolanaDevnet } from '../devnet/solana-rpc';
import { prefixedStderr, type ManagedProcess } from '../devnet/process';
import { tokenAbi } from '../src/chains/evm/abi';
import {
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
} from '../src/chains/devnet-addresses';
import { buildSolanaNetworkTable } from '../src/chains/networks';
import { DEVNET_SOLANA_FEE_PAYER } from '../src/chains/solana/fee-payer';
import { Settlement } from '../src/db/entities';
import { TEST_ACCOUNTS } from '../test/support/accounts';
import { openTestDatabase, type DbKind } from '../test/support/db';
import { request, signIn } from '../test/support/http';
import { exactPayment } from '../test/support/payments';
import { permit2Payment } from '../test/support/permit2-payments';
import { dbEnv, startWorker } from '../test/support/services';
import { solanaRpcCall, svmPaymentTransaction, toBase64 } from '../test/support/solana';
import { sleep } from './measure';
import { spawnApi, stopTree } from './processes';
import { workflowBundleOptions } from '../src/temporal/workflow-bundle';

interface Options {
  n: number;
  concurrency: number;
  seed: number;
  db: DbKind;
  logs: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { n: 200, concurrency: 24, seed: Date.now() % 100_000, db: 'sqlite', logs: false };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--logs') o.logs = true;
    else if (flag === '--n') o.n = Math.min(1000, Number(value)) || o.n;
    else if (flag === '--concurrency') o.concurrency = Math.min(64, Number(value)) || o.concurrency;
    else if (flag === '--seed') o.seed = Number(value);
    else if (flag === '--db') o.db = value === 'postgres' ? 'postgres' : 'sqlite';
    else continue;
    if (flag !== '--logs') i++;
  }
  return o;
}

/** mulberry32: a small seeded generator, so a run can be repeated with --seed. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Kind = 'eip3009' | 'permit2' | 'solana';
interface Payment {
  i: number;
  kind: Kind;
  amount: bigint;
  body?: unknown;
  /** The final answer: settled (with its transaction), refused with a 4xx, or none within the deadline. */
  outcome?: { settled: true; transaction: string } | { settled: false; status: number; reason: string };
  tries: number;
}

const SOLANA_USDC = new PublicKey(buildSolanaNetworkTable({}).get('solana-devnet')!.usdc);
const DEADLINE_MS = 240_000;

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const random = rng(opts.seed);
  const log = (name: string) => (opts.logs ? prefixedStderr(name) : () => undefined);
  const cleanups: (() => Promise<unknown>)[] = [];
  const say = (line: string) => process.stdout.write(`${line}\n`);
  say(`chaos: n=${opts.n} concurrency=${opts.concurrency} seed=${opts.seed} db=${opts.db}`);
  try {
    // --- the stack: Temporal, one anvil chain (state in a file, so it survives a restart), Solana devnet.
    const tmp = mkdtempSync(join(os.tmpdir(), 'x402-chaos-'));
    cleanups.push(async () => rmSync(tmp, { recursive: true, force: true }));
    const stateFile = join(tmp, 'anvil-84532.json');
    const temporal = await startTemporalDevServer({ uiPort: false, log: log('temporal') });
    cleanups.push(() => temporal.stop());
    let anvil: Anvil = await startAnvil({ chainId: 84532, stateFile, stateIntervalSec: 1, log: log('anvil') });
    cleanups.push(() => anvil.stop());
    const solana = await startSolanaDevnet({ usdcMint: SOLANA_USDC.toBase58(), feePayers: [DEVNET_SOLANA_FEE_PAYER.publicKey] });
    cleanups.push(() => solana.stop());
    const buyers = TEST_ACCOUNTS.buyers;
    const relayers = TEST_ACCOUNTS.relayers.map((a) => a.address);
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
      RPC_URLS_BASE_SEPOLIA: anvil.rpcUrl,
      RPC_URLS_OPTIMISM_SEPOLIA: 'none',
      SOLANA_RPC_URL_SOLANA_DEVNET: solana.url,
      WORKFLOW_BUNDLE_PATH: bundlePath,
      SETTLE_WAIT_MS: '3000',
      RECEIPT_WAIT_MS: '5000',
      RELAYER_REPLACE_AFTER_MS: '8000',
    };
    const tdb = await openTestDatabase(opts.db, env);
    cleanups.push(() => tdb.close());
    const svcEnv = { ...env, ...dbEnv(tdb.config), SESSION_SECRET: tdb.config.SESSION_SECRET! };
    let api = await spawnApi({ ...svcEnv, LOG_LEVEL: 'warn' }, opts.logs);
    const port = Number(new URL(api.baseUrl).port);
    let worker: ManagedProcess = await startWorker(svcEnv, { onLine: opts.logs ? log('worker') : undefined });
    cleanups.push(
      async () => stopTree(worker),
      async () => stopTree(api.proc),
    );

    const cookie = await signIn(api.baseUrl, privateKeyToAccount(generatePrivateKey()));
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
    const kinds: Kind[] = ['eip3009', 'permit2', 'solana'];
    const payments: Payment[] = Array.from({ length: opts.n }, (_, i) => ({
      i,
      kind: kinds[i % 3],
      amount: 1_000_000n + BigInt(i),
      tries: 0,
    }));
    const before = {
      payout: await usdcOf(chain, deployed.usdc, payout),
      seller: await splBalance(solConn, sellerSol),
    };
    const bodyOf = async (p: Payment): Promise<unknown> => {
      const buyer = buyers[p.i % buyers.length] as LocalAccount;
      if (p.kind === 'eip3009') {
        return exactPayment({
          buyer,
          network: 'base-sepolia',
          chainId: 84532,
          usdc: deployed.usdc,
          facilitator: deployed.facilitator,
          value: p.amount,
        });
      }
      if (p.kind === 'permit2') {
        const common = { network: 'base-sepolia', chainId: 84532, usdc: deployed.usdc, facilitator: deployed.facilitator };
        const proxies = {
          permit2: PERMIT2_CANONICAL_ADDRESS,
          exactProxy: X402_EXACT_PERMIT2_PROXY_ADDRESS,
          uptoProxy: X402_UPTO_PERMIT2_PROXY_ADDRESS,
        };
        return permit2Payment({ scheme: 'exact', buyer, amount: p.amount, ...common, ...proxies });
      }
      const tx: VersionedTransaction = svmPaymentTransaction({
        buyer: solBuyers[p.i % solBuyers.length],
        payTo: sellerSol,
        mint: SOLANA_USDC,
        feePayer: DEVNET_SOLANA_FEE_PAYER.publicKey,
        amount: p.amount,
        blockhash: (await solConn.getLatestBlockhash()).blockhash,
      });
      return {
        paymentPayload: { x402Version: 1, scheme: 'exact', network: 'solana-devnet', payload: { transaction: toBase64(tx) } },
        paymentRequirements: {
          scheme: 'exact',
          network: 'solana-devnet',
          maxAmountRequired: p.amount.toString(),
          resource: 'https://seller.example/chaos',
          description: 'chaos',
          mimeType: 'application/json',
          payTo: sellerSol.toBase58(),
          maxTimeoutSeconds: 60,
          asset: SOLANA_USDC.toBase58(),
          extra: { feePayer: DEVNET_SOLANA_FEE_PAYER.publicKey.toBase58() },
        },
      };
    };

    /** A seller: the same payment again on a dropped connection, a 5xx or a 202, until a final answer. */
    const settle = async (p: Payment) => {
      p.body = await bodyOf(p);
      const until = Date.now() + DEADLINE_MS;
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
        if (res && res.status === 200 && body?.success) return void (p.outcome = { settled: true, transaction: body.transaction! });
        if (res && res.status >= 400 && res.status < 500 && res.status !== 429) {
          return void (p.outcome = { settled: false, status: res.status, reason: body?.errorReason ?? 'unknown' });
        }
        if (res && res.status === 200) return void (p.outcome = { settled: false, status: 200, reason: body?.errorReason ?? 'failed' });
        await sleep(250 + random() * 500);
      }
    };

    // --- the monkey: SIGKILL worker or API every 0.5-2 s, and the chain once, while payments run.
    let done = false;
    const events: string[] = [];
    const started = Date.now();
    const stamp = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
    const monkey = (async () => {
      let chainRestarted = false;
      while (!done) {
        await sleep(500 + random() * 1500);
        if (done) break;
        const roll = random();
        if (!chainRestarted && roll < 0.2) {
          chainRestarted = true;
          events.push(`${stamp()} anvil stop`);
          await anvil.stop();
          await sleep(1500);
          anvil = await startAnvil({ chainId: 84532, port: anvil.port, stateFile, stateIntervalSec: 1, log: log('anvil') });
          events.push(`${stamp()} anvil back at block ${await chain.getBlockNumber({ cacheTime: 0 })}`);
        } else if (roll < 0.6) {
          events.push(`${stamp()} SIGKILL worker`);
          worker.child.kill('SIGKILL');
          await worker.exited;
          await sleep(random() * 1500);
          worker = await startWorker(svcEnv, { onLine: opts.logs ? log('worker') : undefined });
        } else {
          events.push(`${stamp()} SIGKILL api`);
          api.proc.child.kill('SIGKILL');
          await api.proc.exited;
          await sleep(random() * 1500);
          api = await spawnApi({ ...svcEnv, LOG_LEVEL: 'warn' }, opts.logs, port);
        }
      }
      // The chain restart happens at least once, even in a short run.
      if (!chainRestarted) {
        events.push(`${stamp()} anvil stop (end of run)`);
        await anvil.stop();
        anvil = await startAnvil({ chainId: 84532, port: anvil.port, stateFile, stateIntervalSec: 1, log: log('anvil') });
      }
    })();

    let next = 0;
    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        while (next < payments.length) await settle(payments[next++]);
      }),
    );
    done = true;
    await monkey;
    say(`settled in ${((Date.now() - started) / 1000).toFixed(1)} s; chaos: ${events.length} events`);
    for (const e of events) say(`  ${e}`);

    // --- the verdict: chain first, then the ledger.
    const transfers = parseEventLogs({
      abi: tokenAbi,
      eventName: 'Transfer',
      logs: await chain.getLogs({ address: deployed.usdc, fromBlock: 0n, toBlock: 'latest' }),
    }).filter((l) => l.args.to.toLowerCase() === payout.toLowerCase());
    const evmCount = new Map<bigint, number>();
    for (const t of transfers) evmCount.set(t.args.value, (evmCount.get(t.args.value) ?? 0) + 1);
    const landedSolana = async (p: Payment) =>
      p.outcome?.settled
        ? (await solConn.getSignatureStatus(p.outcome.transaction, { searchTransactionHistory: true })).value?.err === null
        : false;

    let lost = 0;
    let doubled = 0;
    const problems: string[] = [];
    const tally = { settled: 0, refused: 0, unanswered: 0 };
    for (const p of payments) {
      const moved = p.kind === 'solana' ? ((await landedSolana(p)) ? 1 : 0) : (evmCount.get(p.amount) ?? 0);
      if (!p.outcome) tally.unanswered++;
      else if (p.outcome.settled) tally.settled++;
      else tally.refused++;
      if (moved > 1) {
        doubled++;
        problems.push(`#${p.i} ${p.kind}: paid out ${moved} times`);
      } else if (p.outcome?.settled && moved !== 1) {
        lost++;
        problems.push(`#${p.i} ${p.kind}: answered settled (${p.outcome.transaction}) but nothing moved`);
      } else if (!p.outcome?.settled && moved !== 0) {
        lost++;
        problems.push(
          `#${p.i} ${p.kind}: money moved but the seller was told ${p.outcome ? `${p.outcome.status} ${p.outcome.reason}` : 'nothing'}`,
        );
      } else if (!p.outcome) {
        lost++;
        problems.push(`#${p.i} ${p.kind}: no final answer within ${DEADLINE_MS / 1000} s`);
      } else if (!p.outcome.settled && (p.outcome.status < 400 || p.outcome.status >= 500)) {
        lost++;
        problems.push(`#${p.i} ${p.kind}: final answer ${p.outcome.status} ${p.outcome.reason} is not a 4xx`);
      }
    }
    const settledEvm = payments.filter((p) => p.kind !== 'solana' && p.outcome?.settled).reduce((s, p) => s + p.amount, 0n);
    const settledSol = payments.filter((p) => p.kind === 'solana' && p.outcome?.settled).reduce((s, p) => s + p.amount, 0n);
    const chainEvm = (await usdcOf(chain, deployed.usdc, payout)) - before.payout;
    const chainSol = (await splBalance(solConn, sellerSol)) - before.seller;
    const rows = await tdb.db.em.fork().find(Settlement, { state: 'settled' });
    const ledger = (route: (r: string) => boolean) =>
      rows.filter((r) => route(r.route)).reduce((s, r) => s + BigInt(r.amount) - BigInt(r.fee), 0n);
    const ledgerEvm = ledger((r) => r !== 'solana');
    const ledgerSol = ledger((r) => r === 'solana');
    const ledgerOk = ledgerEvm === chainEvm && ledgerSol === chainSol && settledEvm === chainEvm && settledSol === chainSol;
    if (!ledgerOk)
      problems.push(
        `ledger ${ledgerEvm}/${ledgerSol} vs chain ${chainEvm}/${chainSol} vs answers ${settledEvm}/${settledSol} (EVM/Solana)`,
      );

    say('');
    say('| kind | payments | settled | refused (4xx) | unanswered | tries (mean) |');
    say('|---|---|---|---|---|---|');
    for (const k of kinds) {
      const of = payments.filter((p) => p.kind === k);
      const mean = of.reduce((s, p) => s + p.tries, 0) / Math.max(1, of.length);
      say(
        `| ${k} | ${of.length} | ${of.filter((p) => p.outcome?.settled).length} | ${of.filter((p) => p.outcome && !p.outcome.settled).length} | ${of.filter((p) => !p.outcome).length} | ${mean.toFixed(1)} |`,
      );
    }
    const reasons = new Map<string, number>();
    for (const p of payments) if (p.outcome && !p.outcome.settled) reasons.set(p.outcome.reason, (reasons.get(p.outcome.reason) ?? 0) + 1);
    if (reasons.size) say(`refusals: ${[...reasons].map(([r, c]) => `${r}=${c}`).join(' ')}`);
    say(`ledger = chain: ${ledgerOk} (EVM ${chainEvm}, Solana ${chainSol} base units)`);
    for (const p of problems.slice(0, 20)) say(`  ${p}`);
    say(`lost=${lost} doubled=${doubled}`);
    process.exitCode = lost === 0 && doubled === 0 && ledgerOk ? 0 : 1;
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }
}

const usdcOf = (chain: PublicClient, usdc: Address, who: Address) =>
  chain.readContract({ address: usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] }) as Promise<bigint>;

async function splBalance(conn: SolanaConnection, owner: PublicKey): Promise<bigint> {
  const ata = getAssociatedTokenAddressSync(SOLANA_USDC, owner, true);
  return BigInt((await conn.getTokenAccountBalance(ata)).value.amount);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
