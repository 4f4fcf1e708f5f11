/**
 * Paid inference in the chaos run: chats and media (image, video and music) jobs, each paid with a
 * fresh buyer's EIP-3009 authorization (X-PAYMENT). The provider doubles fail a seeded share of them
 * (a chat before its first byte or mid-stream, an image generation, a video or music job while
 * rendering), so that the service refunds them; the API's
 * kills leave chat charges that only the charge guard refunds. The verdict reads each buyer's
 * transfers on chain against its charge row (one buyer per request, so the row is the buyer's).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseEventLogs, type Address, type LocalAccount, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startDevnetInferenceProviders } from '../devnet/inference-provider';
import { startMediaProvider } from '../devnet/media-provider';
import { InferenceCharge } from '../src/db/entities';
import { MediaJob } from '../src/db/media';
import { refundWorkflowId } from '../src/inference/types';
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
import { tokenAbi } from '../src/chains/evm/abi';

const CHAT_PRICE = 10_000n;
/** The media prices (MEDIA_*_PRICE defaults): one image per request. */
const MEDIA = {
  images: { kind: 'image', price: 20_000n },
  video: { kind: 'video', price: 500_000n },
  music: { kind: 'music', price: 200_000n },
} as const;
type MediaRoute = keyof typeof MEDIA;
/**
 * The run's stream bounds and the guard's delay past them (production derives the delay with a
 * minute to spare); payments valid long enough to be sent again across kills.
 */
const INFERENCE_ENV = {
  INFERENCE_FIRST_BYTE_TIMEOUT_MS: '5000',
  INFERENCE_MAX_STREAM_MS: '10000',
  INFERENCE_GUARD_DELAY_MS: '30000',
  INFERENCE_PAYMENT_TIMEOUT_SECONDS: '600',
  MEDIA_POLL_INTERVAL_MS: '200',
};
/** Charge rows that end a request: kept (served, or walked away from), paid back, or never charged. */
const KEPT = ['delivered', 'client_closed'];
const OPEN = ['verifying', 'settling', 'charged', 'provider_failed', 'unserved', 'refund_pending'];

interface Parties {
  chain: PublicClient;
  usdc: Address;
  facilitator: Address;
  revenue: Address;
  deadlineMs: number;
}

export interface InferenceSetup {
  env: Record<string, string>;
  kinds(ctx: KindContext): ChaosKind[];
  stop(): Promise<void>;
}

/**
 * The provider doubles, and a fresh buyer per chat and per media job (`media` of each kind) funded
 * with its price from `fund` (before the run, on the chain itself).
 */
export async function setupInference(
  o: Parties & { chats: number; media: number; fund: (to: Address, amount: bigint) => Promise<void> },
): Promise<InferenceSetup> {
  const providers = await startDevnetInferenceProviders();
  const media = await startMediaProvider();
  const storeDir = mkdtempSync(join(tmpdir(), 'x402-chaos-media-'));
  const fresh = async (n: number, price: bigint) => {
    const out: LocalAccount[] = Array.from({ length: n }, () => privateKeyToAccount(generatePrivateKey()));
    for (const b of out) await o.fund(b.address, price);
    return out;
  };
  const chatBuyers = await fresh(o.chats, CHAT_PRICE);
  const routes = Object.keys(MEDIA) as MediaRoute[];
  const mediaBuyers = new Map<MediaRoute, LocalAccount[]>();
  for (const r of routes) mediaBuyers.set(r, await fresh(o.media, MEDIA[r].price));
  return {
    env: {
      INFERENCE_PROVIDERS: providers.providersJson,
      INFERENCE_TEMPLATES_URL: providers.templatesUrl,
      MEDIA_PROVIDER_URL: media.url,
      MEDIA_STORE_DIR: storeDir,
      ...INFERENCE_ENV,
    },
    kinds: (ctx) => [chatKind(o, chatBuyers, ctx), ...routes.map((r) => mediaKind(o, r, mediaBuyers.get(r)!, ctx))],
    async stop() {
      await Promise.all([providers.stop(), media.stop()]);
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

/** X-PAYMENT of `price` from `buyer`, valid for the run's payment timeout. */
async function xPayment(o: Parties, buyer: LocalAccount, price: bigint): Promise<string> {
  const { paymentPayload } = await exactPayment({
    buyer,
    network: 'base-sepolia',
    chainId: 84532,
    usdc: o.usdc,
    facilitator: o.facilitator,
    value: price,
    validBefore: BigInt(Math.floor(Date.now() / 1000) + Number(INFERENCE_ENV.INFERENCE_PAYMENT_TIMEOUT_SECONDS)),
  });
  return Buffer.from(JSON.stringify(paymentPayload)).toString('base64');
}

function chatKind(o: Parties, buyers: LocalAccount[], ctx: KindContext): ChaosKind {
  const answers: (number | undefined)[] = [];
  let tries = 0;
  return {
    name: 'chat',
    count: buyers.length,
    async run(i) {
      // A third fail before the first byte, a sixth mid-stream: refunds on every run.
      const directive = i % 3 === 0 ? '#fail-before-first-byte ' : i % 6 === 1 ? '#fail-mid-stream ' : '';
      const header = await xPayment(o, buyers[i], CHAT_PRICE);
      // The same X-PAYMENT again on a dropped connection or an unexplained 5xx. A 502 (provider
      // failed, refund pending) and a 503 (settlement pending, refunded once it settles) are answers.
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
    audit: (a) => auditCharges('chat', CHAT_PRICE, buyers, answers, tries, o, a, async (row) => refundWorkflowId(row.id)),
  };
}

function mediaKind(o: Parties, route: MediaRoute, buyers: LocalAccount[], ctx: KindContext): ChaosKind {
  const answers: (number | undefined)[] = [];
  let tries = 0;
  const { kind, price } = MEDIA[route];
  return {
    name: kind,
    count: buyers.length,
    async run(i) {
      // Every other job fails (an image at generation, a video or music job while rendering): refunded.
      const prompt = `${i % 2 === 0 ? '#fail ' : ''}#duration=500 ${kind} ${i}`;
      const headers = {
        'Idempotency-Key': `chaos-${randomBytes(6).toString('hex')}`,
        'X-PAYMENT': await xPayment(o, buyers[i], price),
      };
      // A client: the same request (key and payment) again on a dropped connection or a 5xx.
      const r = await untilFinal(
        async () => {
          const res = await fetch(`${ctx.apiUrl()}/v1/inference/media/${route}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...headers },
            body: JSON.stringify({ prompt }),
            signal: AbortSignal.timeout(30_000),
          });
          await res.text();
          return res.status;
        },
        (status) => status < 500 || status === 502, // 502 generation_failed: an image failed, its refund under way
        { deadlineMs: o.deadlineMs, random: ctx.random },
      );
      answers[i] = r.answer;
      tries += r.tries;
    },
    // An open charge of a job is its job workflow's until the job ends; then its refund's.
    audit: (a) =>
      auditCharges(kind, price, buyers, answers, tries, o, a, async (row) => {
        if (row.state === 'refund_pending') return refundWorkflowId(row.id);
        const job = await a.db.em.fork().findOne(MediaJob, { chargeId: row.id });
        return job?.workflowId ?? refundWorkflowId(row.id);
      }),
  };
}

/**
 * Each buyer's payments and refunds on chain against its charge row, once no charge is open (bounded
 * wait): kept once, refunded once (paid and paid back), or never paid; parked when its refund waits
 * in needs_review. The revenue kept on chain must equal the kept charges.
 */
async function auditCharges(
  kind: string,
  price: bigint,
  buyers: LocalAccount[],
  answers: (number | undefined)[],
  tries: number,
  o: Parties,
  a: AuditContext,
  ownerOf: (row: InferenceCharge) => Promise<string>,
) {
  const t = emptyTally(kind, buyers.length);
  t.tries = tries;
  t.answers = answers;
  const payers = buyers.map((b) => b.address.toLowerCase());
  const rowsNow = async () => new Map((await a.db.em.fork().find(InferenceCharge, { payer: { $in: payers } })).map((r) => [r.payer, r]));
  await settleDown(async () => [...(await rowsNow()).values()].every((r) => !OPEN.includes(r.state)), 90_000);
  const rows = await rowsNow();
  const logs = parseEventLogs({
    abi: tokenAbi,
    eventName: 'Transfer',
    logs: await o.chain.getLogs({ address: o.usdc, fromBlock: 0n, toBlock: 'latest' }),
  });
  let kept = 0n;
  let chainKept = 0n;
  for (const [i, who] of payers.entries()) {
    const paid = logs.filter((l) => l.args.from.toLowerCase() === who).length;
    const refunds = logs.filter((l) => l.args.to.toLowerCase() === who && l.args.from.toLowerCase() === o.revenue.toLowerCase()).length;
    chainKept += price * BigInt(paid - refunds);
    const row = rows.get(who);
    const state = row?.state ?? 'none';
    const label = `${kind} #${i} ${row?.id ?? who} (answer ${answers[i] ?? 'none'}, charge ${state})`;
    if (paid > 1 || refunds > 1) {
      t.doubled++;
      t.problems.push(`${label}: paid ${paid} times, refunded ${refunds} times`);
    } else if (KEPT.includes(state)) {
      kept += price;
      if (paid === 1 && refunds === 0) t.settled++;
      else lose(t, `${label}: kept, but on chain paid ${paid} refunded ${refunds}`);
    } else if (state === 'refunded') {
      if (paid === 1 && refunds === 1) t.refunded++;
      else lose(t, `${label}: refunded, but on chain paid ${paid} refunded ${refunds}`);
    } else if (state === 'rejected' || state === 'none' || state === 'not_charged') {
      if (paid === 0) t.refused++;
      else lose(t, `${label}: no charge, but on chain paid ${paid} refunded ${refunds}`);
    } else {
      const owner = await ownerOf(row!);
      const view = await workflowOf(a.temporal, owner);
      const where = `${owner} ${view.status} in ${view.state ?? '?'}${await pendingOf(a, owner)}, paid ${paid} refunded ${refunds}`;
      if (parkedView(view)) {
        t.parked++;
        if (paid === 1 && refunds === 0) kept += price; // its refund may still come: the chain has the charge
        t.problems.push(`${label}: parked (${where})`);
      } else if (view.status === 'RUNNING') {
        t.stuckUnflagged++;
        t.problems.push(`${label}: not flagged (${where})`);
      } else lose(t, `${label}: open charge (${where})`);
    }
  }
  t.ledgerOk = kept === chainKept;
  if (!t.ledgerOk) t.problems.push(`${kind} ledger: charges kept ${kept} vs chain ${chainKept} (paid minus refunded)`);
  return t;
}

/** What a workflow is waiting on, for the report: its pending activities, their attempts and last failures. */
async function pendingOf(a: AuditContext, workflowId: string): Promise<string> {
  try {
    const d = await a.temporal.workflow.getHandle(workflowId).describe();
    const pending = (d.raw.pendingActivities ?? []).map(
      (p) => `${p.activityType?.name} attempt ${p.attempt}${p.lastFailure?.message ? ` (${p.lastFailure.message.slice(0, 160)})` : ''}`,
    );
    return pending.length ? `; pending: ${pending.join(', ')}` : '';
  } catch {
    return '';
  }
}
