/**
 * Gateway-wallet withdrawals in the chaos run: our GatewayWallet on the settlement chain (a short
 * block delay), funded for the relayer before the run; an operator's client asks for withdrawals of
 * distinct amounts, one at a time as the service allows (409 while one is in progress: asked again),
 * and follows each until it is withdrawn or failed. The verdict counts each amount's payouts from the
 * wallet to the relayer on chain.
 */
import { createWalletClient, erc20Abi, http, parseEventLogs, type Address, type LocalAccount, type PublicClient } from 'viem';
import { deployGatewayWallet } from '../devnet/deploy-gateway-wallet';
import { Settlement } from '../src/db/entities';
import { waitForReceipt } from '../test/support/evm';
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
import { gatewayWalletAbi, tokenAbi } from '../src/chains/evm/abi';

const DELAY_BLOCKS = 2;
export const WITHDRAWAL_ENV = { WITHDRAWAL_POLL_MS: '200' };

export interface WithdrawalSetup {
  kind(ctx: KindContext): ChaosKind;
}

/** Deploys the wallet on `rpcUrl` (anvil itself) and deposits the withdrawals' total for `depositor`. */
export async function setupWithdrawals(o: {
  count: number;
  rpcUrl: string;
  chain: PublicClient;
  usdc: Address;
  depositor: Address;
  funder: LocalAccount;
  seed: number;
  deadlineMs: number;
}): Promise<WithdrawalSetup> {
  const wallet = await deployGatewayWallet({ rpcUrl: o.rpcUrl, chainId: 84532, usdc: o.usdc, withdrawalDelayBlocks: DELAY_BLOCKS });
  const amounts = Array.from({ length: o.count }, (_, i) => 100_000n + BigInt(i));
  const total = amounts.reduce((s, a) => s + a, 0n);
  const w = createWalletClient({ account: o.funder, transport: http(o.rpcUrl) });
  await waitForReceipt(
    o.chain,
    await w.writeContract({ chain: null, address: o.usdc, abi: erc20Abi, functionName: 'approve', args: [wallet, total] }),
  );
  await waitForReceipt(
    o.chain,
    await w.writeContract({
      chain: null,
      address: wallet,
      abi: gatewayWalletAbi,
      functionName: 'depositFor',
      args: [o.usdc, o.depositor, total],
    }),
  );
  const totalBefore = (await o.chain.readContract({
    address: wallet,
    abi: gatewayWalletAbi,
    functionName: 'totalBalance',
    args: [o.usdc, o.depositor],
  })) as bigint;
  return { kind: (ctx) => withdrawalKind({ ...o, wallet, amounts, totalBefore }, ctx) };
}

function withdrawalKind(
  o: {
    chain: PublicClient;
    usdc: Address;
    depositor: Address;
    wallet: Address;
    amounts: bigint[];
    totalBefore: bigint;
    seed: number;
    deadlineMs: number;
  },
  ctx: KindContext,
): ChaosKind {
  const ids: string[] = [];
  const answers: (string | undefined)[] = [];
  let tries = 0;
  const auth = { authorization: `Bearer ${ctx.apiKey}` };
  return {
    name: 'withdrawal',
    count: o.amounts.length,
    async run(i) {
      const idempotencyKey = `chaos-${o.seed}-${i}`;
      ids[i] = `withdrawal:base-sepolia:${o.depositor.toLowerCase()}:${idempotencyKey}`;
      const json = JSON.stringify({ network: 'base-sepolia', amount: o.amounts[i].toString(), idempotencyKey });
      // Asked again on a dropped connection, a 5xx or a 409 (another withdrawal still in progress).
      const asked = await untilFinal(
        async () => {
          const res = await fetch(`${ctx.apiUrl()}/v1/gateway/withdrawals`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...auth },
            body: json,
            signal: AbortSignal.timeout(30_000),
          });
          return { status: res.status, body: (await res.json().catch(() => ({}))) as { message?: string } };
        },
        (a) => a.status < 500 && a.status !== 429 && a.status !== 409,
        { deadlineMs: o.deadlineMs, random: ctx.random },
      );
      tries += asked.tries;
      if (!asked.answer || asked.answer.status >= 300) {
        answers[i] = asked.answer ? `${asked.answer.status} ${asked.answer.body.message ?? ''}` : undefined;
        return;
      }
      // Followed until it ends, so the next one may start.
      const followed = await untilFinal(
        async () => {
          const res = await fetch(`${ctx.apiUrl()}/v1/gateway/withdrawals/${encodeURIComponent(ids[i])}`, {
            headers: auth,
            signal: AbortSignal.timeout(10_000),
          });
          return ((await res.json().catch(() => ({}))) as { state?: string }).state;
        },
        (state) => state === 'withdrawn' || state === 'failed' || state === 'needs_review',
        { deadlineMs: o.deadlineMs, random: ctx.random },
      );
      answers[i] = followed.answer;
    },
    async audit(a: AuditContext) {
      const t = emptyTally('withdrawal', o.amounts.length);
      t.tries = tries;
      t.answers = answers;
      const sent = ids.filter(Boolean);
      const rowsNow = async () => new Map((await a.db.em.fork().find(Settlement, { id: { $in: sent } })).map((r) => [r.id, r]));
      await settleDown(
        async () => [...(await rowsNow()).values()].every((r) => ['withdrawn', 'failed', 'needs_review'].includes(r.state)),
        30_000,
      );
      const rows = await rowsNow();
      const out = parseEventLogs({
        abi: tokenAbi,
        eventName: 'Transfer',
        logs: await o.chain.getLogs({ address: o.usdc, fromBlock: 0n, toBlock: 'latest' }),
      }).filter((l) => l.args.from.toLowerCase() === o.wallet.toLowerCase() && l.args.to.toLowerCase() === o.depositor.toLowerCase());
      let recorded = 0n;
      let moved = 0n;
      for (const [i, amount] of o.amounts.entries()) {
        const paid = out.filter((l) => l.args.value === amount).length;
        moved += amount * BigInt(paid);
        const row = ids[i] ? rows.get(ids[i]) : undefined;
        const state = row?.state ?? 'none';
        const label = `withdrawal #${i} ${ids[i] ?? '(not asked)'} (answer ${answers[i] ?? 'none'}, state ${state})`;
        if (paid > 1) {
          t.doubled++;
          t.problems.push(`${label}: paid out ${paid} times`);
        } else if (state === 'withdrawn') {
          recorded += amount;
          if (paid === 1) t.settled++;
          else lose(t, `${label}: nothing left the wallet`);
        } else if (state === 'none' || state === 'failed') {
          if (paid === 0) t.refused++;
          else lose(t, `${label}: paid out, but recorded ${state}`);
          if (state === 'none') t.problems.push(`${label}: never started`);
        } else {
          const view = await workflowOf(a.temporal, ids[i]);
          if (state === 'needs_review' || parkedView(view)) {
            t.parked++;
            if (paid === 1) recorded += amount;
            t.problems.push(`${label}: parked (workflow ${view.status}), paid out ${paid}`);
          } else if (view.status === 'RUNNING') {
            t.stuckUnflagged++;
            t.problems.push(`${label}: workflow running in ${view.state ?? '?'}, not flagged`);
          } else {
            t.lost++;
            t.problems.push(`${label}: workflow ${view.status}, paid out ${paid}`);
          }
        }
      }
      const totalAfter = (await o.chain.readContract({
        address: o.wallet,
        abi: gatewayWalletAbi,
        functionName: 'totalBalance',
        args: [o.usdc, o.depositor],
      })) as bigint;
      t.ledgerOk = recorded === moved && o.totalBefore - totalAfter === moved;
      if (!t.ledgerOk)
        t.problems.push(`withdrawals: recorded ${recorded}, paid out ${moved}, wallet balance down ${o.totalBefore - totalAfter}`);
      return t;
    },
  };
}
