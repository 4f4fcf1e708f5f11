/**
 * Top-ups in the chaos run: the `base` devnet chain (8453) with the merchant contract, and the top-up
 * gateway as a process the monkey SIGKILLs like the API. Each job is one fresh payer sending three
 * top-ups at once while its credit limit fits one: one deposits, and each other is either refused at
 * the gateway (409 credit_limit_reached) or, when it was accepted alongside, refunded after its
 * deposit reverts. The verdict reads, per top-up, its settlement, deposit and refund on chain.
 */
import { createPublicClient, createWalletClient, http, parseEventLogs, type Address, type LocalAccount, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startAnvil } from '../devnet/anvil';
import { deployDevnet } from '../devnet/deploy';
import { deployTopupDevnet } from '../devnet/deploy-topup';
import { mainnetDevnetEnv } from '../devnet/start-topup';
import { findFreePort, type LogFn, type ManagedProcess } from '../devnet/process';
import { startRpcProviderDouble, type RpcProviderDouble } from '../devnet/rpc-provider-double';
import { DEVNET_MERCHANT_ADDRESS } from '../src/chains/devnet-addresses';
import { TopUp } from '../src/db/entities';
import { topupWorkflowId } from '../src/temporal/workflow-ids';
import { exactPayment } from '../test/support/payments';
import { TEST_ACCOUNTS } from '../test/support/accounts';
import { waitForReceipt } from '../test/support/evm';
import { spawnTopup, stopTree } from './processes';
import { PROVIDER_RULES } from './chaos-faults';
import {
  emptyTally,
  lose,
  parkedView,
  settleDown,
  untilFinal,
  workflowOf,
  type AuditContext,
  type ChaosKind,
  type KindContext,
} from './chaos-kinds';
import { merchantAbi, tokenAbi } from '../src/chains/evm/abi';

/** Each payer's credit: one top-up of about 5 USDC fits, two do not. */
const CREDIT_LIMIT = 6_000_000n;
const PER_PAYER = 3;
const MERCHANT = 'demo-merchant';

export interface TopupSetup {
  env: Record<string, string>;
  /** Starts the gateway process with the service's environment (database included). */
  start(svcEnv: Record<string, string>): Promise<void>;
  /** SIGKILLs the gateway and starts it again on its port. */
  kill(pause: number): Promise<void>;
  kind(ctx: KindContext): ChaosKind;
  provider?: RpcProviderDouble;
  chain: PublicClient;
  /** The `base` chain's own endpoint (anvil, never through the provider double). */
  rpcUrl: string;
  stop(): Promise<void>;
}

export async function setupTopup(o: {
  payers: number;
  relayer: Address;
  seed?: number;
  logs: boolean;
  log: LogFn;
  deadlineMs: number;
}): Promise<TopupSetup> {
  const stops: (() => Promise<unknown>)[] = [];
  const anvil = await startAnvil({ chainId: 8453, log: o.log });
  stops.push(() => anvil.stop());
  const buyers = TEST_ACCOUNTS.buyers.map((b) => ({ address: b.address, amount: 1_000_000_000_000n }));
  const relayers = TEST_ACCOUNTS.relayers.map((a) => a.address);
  const deployed = await deployDevnet({ rpcUrl: anvil.rpcUrl, chainId: 8453, relayers, buyers });
  await deployTopupDevnet({ rpcUrl: anvil.rpcUrl, chainId: 8453, relayers, defaultCreditLimit: CREDIT_LIMIT });
  const chain = createPublicClient({ transport: http(anvil.rpcUrl) }) as PublicClient;
  const funder = createWalletClient({ account: TEST_ACCOUNTS.buyers[0], transport: http(anvil.rpcUrl) });
  const payers: LocalAccount[] = Array.from({ length: o.payers }, () => privateKeyToAccount(generatePrivateKey()));
  for (const p of payers) {
    const hash = await funder.writeContract({
      chain: null,
      address: deployed.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [p.address, 20_000_000n],
    });
    await waitForReceipt(chain, hash);
  }
  let provider: RpcProviderDouble | undefined;
  if (o.seed !== undefined) {
    provider = await startRpcProviderDouble({ upstream: anvil.rpcUrl, seed: o.seed, rules: PROVIDER_RULES, noSyncSend: true });
    stops.push(() => provider!.stop());
  }
  const port = await findFreePort();
  const env: Record<string, string> = {
    ...mainnetDevnetEnv(provider?.url ?? anvil.rpcUrl, 'none'),
    RPC_URLS_OPTIMISM: 'none',
    TOPUP_MERCHANT_ID: MERCHANT,
    TOPUP_MERCHANT_CONTRACT: DEVNET_MERCHANT_ADDRESS,
    TOPUP_RELAYER_ADDRESS: o.relayer,
    TOPUP_FEE_FIXED: '10000',
    TOPUP_FEE_BPS: '30',
    TOPUP_FEE_RECIPIENT: TEST_ACCOUNTS.feeRecipient.address,
    TOPUP_URL: `http://127.0.0.1:${port}`,
  };
  let gateway: { proc: ManagedProcess; url: string } | undefined;
  let svc: Record<string, string> = {};
  const startGateway = async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await spawnTopup(svc, o.logs, port);
      } catch (err) {
        if (attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 1000 * attempt));
      }
    }
  };
  stops.push(async () => gateway && stopTree(gateway.proc));
  return {
    env,
    provider,
    chain,
    rpcUrl: anvil.rpcUrl,
    async start(svcEnv) {
      svc = { ...svcEnv, ...env };
      gateway = await startGateway();
    },
    async kill(pause) {
      gateway!.proc.child.kill('SIGKILL');
      await gateway!.proc.exited;
      await new Promise((r) => setTimeout(r, pause));
      gateway = await startGateway();
    },
    kind: (ctx) =>
      topupKind(
        { chain, usdc: deployed.usdc, facilitator: deployed.facilitator, relayer: o.relayer, url: env.TOPUP_URL, deadlineMs: o.deadlineMs },
        payers,
        ctx,
      ),
    async stop() {
      for (const s of stops.reverse()) await s().catch(() => undefined);
    },
  };
}

interface Sent {
  payer: LocalAccount;
  id: string;
  gross: bigint;
  status?: number;
  reason?: string;
}

function topupKind(
  o: { chain: PublicClient; usdc: Address; facilitator: Address; relayer: Address; url: string; deadlineMs: number },
  payers: LocalAccount[],
  ctx: KindContext,
): ChaosKind {
  const sent: Sent[] = [];
  let tries = 0;
  const one = async (payer: LocalAccount, gross: bigint) => {
    const { paymentPayload } = await exactPayment({
      buyer: payer,
      network: 'base',
      chainId: 8453,
      usdc: o.usdc,
      facilitator: o.facilitator,
      value: gross,
    });
    const s: Sent = { payer, gross, id: topupWorkflowId(MERCHANT, payer.address, paymentPayload.payload.authorization.nonce) };
    sent.push(s);
    const header = Buffer.from(JSON.stringify(paymentPayload)).toString('base64');
    // A buyer's client: the same X-PAYMENT again on a dropped connection, a 5xx or a 202 (still working).
    const r = await untilFinal(
      async () => {
        const res = await fetch(`${o.url}/v1/${MERCHANT}/topups`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-payment': header },
          body: JSON.stringify({ amount: gross.toString() }),
          signal: AbortSignal.timeout(30_000),
        });
        const body = (await res.json().catch(() => ({}))) as { errorReason?: string; error?: string };
        return { status: res.status, reason: body.errorReason ?? body.error };
      },
      (a) => a.status !== 202 && a.status !== 429 && a.status < 500,
      { deadlineMs: o.deadlineMs, random: ctx.random },
    );
    s.status = r.answer?.status;
    s.reason = r.answer?.reason;
    tries += r.tries;
  };
  return {
    name: 'topup',
    count: payers.length,
    async run(i) {
      // Distinct amounts (about 5 USDC each), so each top-up's transfers can be told apart on chain.
      const grosses = Array.from({ length: PER_PAYER }, (_, k) => 5_000_000n + BigInt(i * PER_PAYER + k) * 1000n);
      await Promise.all(grosses.map((g) => one(payers[i], g)));
    },
    async audit(a: AuditContext) {
      const t = emptyTally('topup', payers.length * PER_PAYER);
      t.tries = tries;
      t.answers = sent.map((s) => (s.status === undefined ? undefined : `${s.status}${s.reason ? ` ${s.reason}` : ''}`));
      const rowsNow = async () => new Map((await a.db.em.fork().find(TopUp, { id: { $in: sent.map((s) => s.id) } })).map((r) => [r.id, r]));
      const open = ['settling', 'depositing', 'refunding', 'bridging'];
      await settleDown(async () => [...(await rowsNow()).values()].every((r) => !open.includes(r.state)), 60_000);
      const rows = await rowsNow();
      const logs = await o.chain.getLogs({ fromBlock: 0n, toBlock: 'latest' });
      const transfers = parseEventLogs({
        abi: tokenAbi,
        eventName: 'Transfer',
        logs: logs.filter((l) => l.address.toLowerCase() === o.usdc.toLowerCase()),
      });
      const deposits = parseEventLogs({
        abi: merchantAbi,
        eventName: 'Deposited',
        logs: logs.filter((l) => l.address.toLowerCase() === DEVNET_MERCHANT_ADDRESS.toLowerCase()),
      });
      const credited = new Map<string, bigint>();
      for (const s of sent) {
        const who = s.payer.address.toLowerCase();
        const row = rows.get(s.id);
        const net = row ? BigInt(row.netAmount) : undefined;
        const paid = transfers.filter((l) => l.args.from.toLowerCase() === who && l.args.value === s.gross).length;
        const deposited =
          net === undefined ? 0 : deposits.filter((l) => l.args.buyer.toLowerCase() === who && l.args.amount === net).length;
        const refunds =
          net === undefined
            ? 0
            : transfers.filter(
                (l) => l.args.to.toLowerCase() === who && l.args.from.toLowerCase() === o.relayer.toLowerCase() && l.args.value === net,
              ).length;
        const state = row?.state ?? 'none';
        const label = `topup ${s.id} (answer ${s.status ?? 'none'} ${s.reason ?? ''}, state ${state})`;
        if (paid > 1 || deposited > 1 || refunds > 1 || (deposited && refunds)) {
          t.doubled++;
          t.problems.push(`${label}: paid ${paid}, deposited ${deposited}, refunded ${refunds} times`);
          continue;
        }
        if (state === 'deposited') {
          credited.set(who, (credited.get(who) ?? 0n) + net!);
          if (paid === 1 && deposited === 1) t.settled++;
          else lose(t, `${label}: on chain paid ${paid} deposited ${deposited}`);
        } else if (state === 'refunded') {
          if (paid === 1 && refunds === 1) t.refunded++;
          else lose(t, `${label}: on chain paid ${paid} refunded ${refunds}`);
        } else if (state === 'none' || state === 'failed') {
          if (paid === 0 && s.status !== undefined && s.status >= 400) t.refused++;
          else lose(t, `${label}: on chain paid ${paid} deposited ${deposited} refunded ${refunds}`);
        } else {
          const view = await workflowOf(a.temporal, s.id);
          if (state === 'needs_review' || parkedView(view)) {
            t.parked++;
            t.problems.push(`${label}: parked (workflow ${view.status}), paid ${paid} deposited ${deposited} refunded ${refunds}`);
          } else if (view.status === 'RUNNING') {
            t.stuckUnflagged++;
            t.problems.push(`${label}: workflow running in ${view.state ?? '?'}, not flagged`);
          } else {
            t.lost++;
            t.problems.push(`${label}: workflow ${view.status}, paid ${paid} deposited ${deposited} refunded ${refunds}`);
          }
        }
      }
      // The merchant contract's balance of each payer is the sum of its deposited top-ups.
      for (const p of payers) {
        const onChain = (await o.chain.readContract({
          address: DEVNET_MERCHANT_ADDRESS,
          abi: merchantAbi,
          functionName: 'balanceOf',
          args: [p.address],
        })) as bigint;
        const recorded = credited.get(p.address.toLowerCase()) ?? 0n;
        if (onChain !== recorded) {
          t.ledgerOk = false;
          t.problems.push(`topup payer ${p.address}: merchant balance ${onChain}, deposited top-ups ${recorded}`);
        }
      }
      return t;
    },
  };
}
