/**
 * Paid chat in the chaos run: each chat pays the price with a fresh buyer's EIP-3009 authorization
 * (X-PAYMENT) and asks the devnet provider double, which fails a seeded share of them (before the
 * first byte, or mid-stream) so that the service refunds them. The API's kills leave charges that
 * only the charge guard refunds. The verdict reads each buyer's transfers on chain and its charge row.
 */
import { parseEventLogs, type Address, type LocalAccount, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startDevnetInferenceProviders } from '../devnet/inference-provider';
import { tokenAbi } from '../src/chains/evm/abi';
import { InferenceCharge } from '../src/db/entities';
import { chatChargeId, refundWorkflowId } from '../src/inference/types';
import { exactPayment } from '../test/support/payments';
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

const PRICE = 10_000n;
/** The run's stream bounds and the guard's delay past them (production derives it with a minute to spare). */
export const CHAT_ENV = {
  INFERENCE_FIRST_BYTE_TIMEOUT_MS: '5000',
  INFERENCE_MAX_STREAM_MS: '10000',
  INFERENCE_GUARD_DELAY_MS: '30000',
  INFERENCE_PAYMENT_TIMEOUT_SECONDS: '600',
};
/** Charge rows that end a chat: kept (served or walked away from), paid back, or never charged. */
const KEPT = ['delivered', 'client_closed'];

export interface ChatSetup {
  env: Record<string, string>;
  kind(ctx: KindContext): ChaosKind;
  stop(): Promise<void>;
}

/**
 * The provider doubles, and `count` fresh buyers funded with the price from `funder` (before the
 * run, on the chain itself). `chain` reads anvil directly.
 */
export async function setupChat(o: {
  count: number;
  chain: PublicClient;
  usdc: Address;
  facilitator: Address;
  revenue: Address;
  fund: (to: Address, amount: bigint) => Promise<void>;
  deadlineMs: number;
}): Promise<ChatSetup> {
  const providers = await startDevnetInferenceProviders();
  const buyers: LocalAccount[] = Array.from({ length: o.count }, () => privateKeyToAccount(generatePrivateKey()));
  for (const b of buyers) await o.fund(b.address, PRICE);
  return {
    env: { INFERENCE_PROVIDERS: providers.providersJson, INFERENCE_TEMPLATES_URL: providers.templatesUrl, ...CHAT_ENV },
    stop: () => providers.stop(),
    kind: (ctx) => chatKind(o, buyers, ctx),
  };
}

function chatKind(
  o: { chain: PublicClient; usdc: Address; facilitator: Address; revenue: Address; deadlineMs: number },
  buyers: LocalAccount[],
  ctx: KindContext,
): ChaosKind {
  const chargeIds: string[] = [];
  const answers: (number | undefined)[] = [];
  let tries = 0;
  return {
    name: 'chat',
    count: buyers.length,
    async run(i) {
      const buyer = buyers[i];
      const draw = ctx.random();
      const directive = draw < 0.3 ? '#fail-before-first-byte ' : draw < 0.45 ? '#fail-mid-stream ' : '';
      const { paymentPayload } = await exactPayment({
        buyer,
        network: 'base-sepolia',
        chainId: 84532,
        usdc: o.usdc,
        facilitator: o.facilitator,
        value: PRICE,
        validBefore: BigInt(Math.floor(Date.now() / 1000) + 600),
      });
      const { from, nonce } = paymentPayload.payload.authorization;
      chargeIds[i] = chatChargeId('base-sepolia', from, nonce);
      const header = Buffer.from(JSON.stringify(paymentPayload)).toString('base64');
      // A chat client: the same X-PAYMENT again on a dropped connection or an unexplained 5xx. A 502
      // (provider failed, refund pending) and a 503 (settlement pending, refunded once it settles) are answers.
      const r = await untilFinal(
        async () => {
          const res = await fetch(`${ctx.apiUrl()}/v1/inference/chat`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-payment': header },
            body: JSON.stringify({ messages: [{ role: 'user', content: `${directive}chat ${i} about durable payments` }] }),
            signal: AbortSignal.timeout(40_000),
          });
          await res.text(); // a stream cut by a killed API throws here: sent again
          return res.status;
        },
        (status) => status < 500 || status === 502 || status === 503,
        { deadlineMs: o.deadlineMs, random: ctx.random },
      );
      answers[i] = r.answer;
      tries += r.tries;
    },
    async audit(a: AuditContext) {
      const t = emptyTally('chat', buyers.length);
      t.tries = tries;
      const rowOf = async () => {
        const rows = await a.db.em.fork().find(InferenceCharge, { id: { $in: chargeIds.filter(Boolean) } });
        return new Map(rows.map((r) => [r.id, r]));
      };
      // Refunds and the guard's run after the answers: wait (bounded) until no charge is still open.
      const open = ['verifying', 'settling', 'charged', 'refund_pending'];
      await settleDown(async () => [...(await rowOf()).values()].every((r) => !open.includes(r.state)), 90_000);
      const rows = await rowOf();
      const logs = parseEventLogs({
        abi: tokenAbi,
        eventName: 'Transfer',
        logs: await o.chain.getLogs({ address: o.usdc, fromBlock: 0n, toBlock: 'latest' }),
      });
      let kept = 0n;
      let chainKept = 0n;
      for (const [i, buyer] of buyers.entries()) {
        const who = buyer.address.toLowerCase();
        const paid = logs.filter((l) => l.args.from.toLowerCase() === who).length;
        const refunds = logs.filter((l) => l.args.to.toLowerCase() === who && l.args.from.toLowerCase() === o.revenue.toLowerCase()).length;
        chainKept += PRICE * BigInt(paid - refunds);
        const row = chargeIds[i] ? rows.get(chargeIds[i]) : undefined;
        const state = row?.state ?? 'none';
        const label = `chat #${i} ${chargeIds[i] ?? '(not sent)'} (answer ${answers[i] ?? 'none'}, charge ${state})`;
        if (paid > 1 || refunds > 1) {
          t.doubled++;
          t.problems.push(`${label}: paid ${paid} times, refunded ${refunds} times`);
          continue;
        }
        if (KEPT.includes(state)) {
          kept += PRICE;
          if (paid === 1 && refunds === 0) t.settled++;
          else lose(t, `${label}: kept, but on chain paid ${paid} refunded ${refunds}`);
        } else if (state === 'refunded') {
          if (paid === 1 && refunds === 1) t.refunded++;
          else lose(t, `${label}: refunded, but on chain paid ${paid} refunded ${refunds}`);
        } else if (state === 'rejected' || state === 'none' || state === 'not_charged') {
          if (paid === 0) t.refused++;
          else lose(t, `${label}: no charge, but on chain paid ${paid} refunded ${refunds}`);
        } else {
          const view = await workflowOf(a.temporal, refundWorkflowId(chargeIds[i]));
          if (parkedView(view)) {
            t.parked++;
            if (paid === 1 && refunds === 0) kept += PRICE; // its refund may still come: the chain has the charge
            t.problems.push(`${label}: parked (refund workflow ${view.status} in ${view.state ?? '?'}), paid ${paid} refunded ${refunds}`);
          } else if (view.status === 'RUNNING') {
            t.stuckUnflagged++;
            t.problems.push(`${label}: refund workflow running in ${view.state ?? '?'}, not flagged; paid ${paid} refunded ${refunds}`);
          } else {
            t.lost++;
            t.problems.push(`${label}: open charge, refund workflow ${view.status}; paid ${paid} refunded ${refunds}`);
          }
        }
      }
      t.ledgerOk = kept === chainKept;
      if (!t.ledgerOk) t.problems.push(`chat ledger: charges kept ${kept} vs chain ${chainKept} (paid minus refunded)`);
      return t;
    },
  };
}
