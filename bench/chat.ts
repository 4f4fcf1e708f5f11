/**
 * Paid chat benchmark: time to first byte (TTFB) and total time of one streamed chat, sequentially,
 * in the same run:
 *
 *   - direct:      POST {double}/v1/chat/completions with stream true (the provider double, no payment);
 *   - paid:        POST /v1/inference/chat with a pre-signed X-PAYMENT (settlement workflow on anvil,
 *                  then the relayed stream);
 *   - x402-fetch:  the real v1 client: the 402 quote, signing, the paid request (what a buyer sees);
 *   - settle only: POST /v1/settle of the same kind of payment, the settlement share of the paid TTFB.
 *
 * It starts the same real stack as the tests (Temporal dev server, anvil with our contracts, the
 * provider doubles, a worker process, SQLite) and the API as a process of its own, as deployed: the
 * doubles run in this process, and an API sharing their event loop would hold up the provider's
 * side of every request while it waits on its own synchronous SQLite commits. Every paid reply is checked
 * (content equals the direct reply, [DONE] last) and the buyer's balance delta is checked at the end.
 *
 *   npm run bench:chat -- [--n 100] [--first-byte-delay 20] [--token-delay 2]
 *
 * The latency directives go to the double in the message, so direct and paid calls get the same.
 */
import { performance } from 'node:perf_hooks';
import { createWalletClient, defineChain, http } from 'viem';
import { wrapFetchWithPayment } from 'x402-fetch';
import globalSetup from '../test/support/global-setup';
import globalTeardown from '../test/support/global-teardown';
import { TEST_ACCOUNTS } from '../test/support/accounts';
import { startSettleHarness } from '../test/support/settle-harness';
import { readStackInfo } from '../test/support/stack-info';
import { exactPayment } from '../test/support/payments';
import { doubleReply, DEFAULT_TEMPLATES } from '../devnet/inference-provider';
import { request } from '../test/support/http';
import { spawnApi, stopTree } from './processes';

interface Options {
  n: number;
  firstByteDelay: number;
  tokenDelay: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { n: 100, firstByteDelay: 20, tokenDelay: 2 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split('=', 2);
    const value = () => Number(inline ?? argv[++i]);
    if (flag === '--n') o.n = value();
    else if (flag === '--first-byte-delay') o.firstByteDelay = value();
    else if (flag === '--token-delay') o.tokenDelay = value();
    else if (flag === '-h' || flag === '--help') {
      console.log('usage: npm run bench:chat -- [--n 100] [--first-byte-delay 20] [--token-delay 2]');
      process.exit(0);
    } else throw new Error(`unknown argument ${argv[i]} (try --help)`);
  }
  for (const [k, v] of Object.entries(o)) if (!Number.isInteger(v) || v < 0) throw new Error(`--${k} must be a whole number`);
  if (o.n < 1) throw new Error('--n must be at least 1');
  return o;
}

function percentile(sorted: number[], p: number): number {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** Reads a streamed response: ms to the first body byte and to the end, and the reply text. */
async function timeStream(
  start: number,
  res: Response,
): Promise<{ ttfb: number; total: number; content: string; done: boolean; body?: string }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let ttfb = NaN;
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (Number.isNaN(ttfb)) ttfb = performance.now() - start;
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  const total = performance.now() - start;
  // Not a stream (a refusal): its body says why.
  if (res.status !== 200) return { ttfb, total, content: '', done: false, body: text.slice(0, 200) };
  const data = text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
  const content = data
    .filter((d) => d !== '[DONE]')
    .map((d) => JSON.parse(d).choices[0]?.delta?.content ?? '')
    .join('');
  return { ttfb, total, content, done: data.at(-1) === '[DONE]' };
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  process.stderr.write('[bench] starting the stack (Temporal, anvil, contracts, provider doubles, worker, API) ...\n');
  await globalSetup();
  const stack = readStackInfo();
  const inference = { INFERENCE_PROVIDERS: stack.inference.providers, INFERENCE_TEMPLATES_URL: stack.inference.templatesUrl };
  // The harness gives the worker, the database and a seller's API key; the rows use the API process.
  const h = await startSettleHarness('sqlite', { relayerIndex: 0, env: inference });
  const api = await spawnApi({ ...h.env, ...inference, LOG_LEVEL: 'warn' }, false).catch(async (err) => {
    await h.close();
    throw err;
  });
  try {
    const doubleUrl = JSON.parse(stack.inference.providers)[0].baseUrl as string;
    const chatUrl = `${api.baseUrl}/v1/inference/chat`;
    const buyer = TEST_ACCOUNTS.buyers[0]!;
    const rpcUrl = stack.chains['base-sepolia'].rpcUrl;
    const chain = defineChain({
      id: 84532,
      name: 'base-sepolia (devnet)',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    });
    const payingFetch = wrapFetchWithPayment(fetch, createWalletClient({ account: buyer, chain, transport: http(rpcUrl) }));
    const challenge = await fetch(chatUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'quote' }] }),
    });
    const price = BigInt(((await challenge.json()) as { accepts: { maxAmountRequired: string }[] }).accepts[0]!.maxAmountRequired);

    const question = `#first-byte-delay=${o.firstByteDelay} #token-delay=${o.tokenDelay} Explain in about twenty words why a payment must settle exactly once, even when workers crash.`;
    const messages = [{ role: 'user', content: question }];
    const expected = doubleReply('24B', [{ role: 'system', content: DEFAULT_TEMPLATES[0]!.prompt }, ...messages]);
    const body = JSON.stringify({ messages });
    const rows: Record<string, { ttfb: number[]; total: number[] }> = {
      direct: { ttfb: [], total: [] },
      paid: { ttfb: [], total: [] },
      'x402-fetch': { ttfb: [], total: [] },
      'settle only': { ttfb: [], total: [] },
    };
    const problems: string[] = [];
    const check = (mode: string, r: { content: string; done: boolean; body?: string }, status: number) => {
      if (status !== 200 || !r.done || r.content !== expected)
        problems.push(
          `${mode}: status ${status}, done ${r.done}, content ${JSON.stringify(r.content.slice(0, 60))}${r.body ? `, body ${r.body}` : ''}`,
        );
    };
    const buyerBefore = await h.balanceOf(buyer.address);

    for (let i = -2; i < o.n; i++) {
      // Two warm-up rounds (not counted): connection pools, workflow code caches.
      const record = (mode: string, r: { ttfb: number; total: number }) => {
        if (i >= 0) {
          rows[mode]!.ttfb.push(r.ttfb);
          rows[mode]!.total.push(r.total);
        }
      };
      let t = performance.now();
      const direct = await fetch(`${doubleUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: '24B',
          stream: true,
          messages: [{ role: 'system', content: DEFAULT_TEMPLATES[0]!.prompt }, ...messages],
        }),
      });
      const d = await timeStream(t, direct);
      check('direct', d, direct.status);
      record('direct', d);

      const payment = await exactPayment({
        buyer,
        network: 'base-sepolia',
        chainId: 84532,
        usdc: stack.usdc,
        facilitator: stack.facilitator,
        value: price,
        // Within the chat quote's maxTimeoutSeconds (INFERENCE_PAYMENT_TIMEOUT_SECONDS, default 120):
        // a longer window is refused (src/x402/window.ts).
        validBefore: BigInt(Math.floor(Date.now() / 1000) + 100),
      });
      t = performance.now();
      const paid = await fetch(chatUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'X-PAYMENT': Buffer.from(JSON.stringify(payment.paymentPayload)).toString('base64'),
        },
        body,
      });
      const p = await timeStream(t, paid);
      check('paid', p, paid.status);
      record('paid', p);

      // The settlement alone, as a seller gets it from POST /v1/settle: the share of the paid TTFB.
      const sellerPayment = await h.pay(buyer, { value: price });
      t = performance.now();
      const settled = await request('POST', `${api.baseUrl}/v1/settle`, {
        json: sellerPayment,
        headers: { authorization: `Bearer ${h.apiKey}` },
      });
      const settleMs = performance.now() - t;
      if (settled.status !== 200) problems.push(`settle: status ${settled.status} ${JSON.stringify(settled.body)}`);
      record('settle only', { ttfb: settleMs, total: settleMs });

      t = performance.now();
      const viaClient = await payingFetch(chatUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const x = await timeStream(t, viaClient);
      check('x402-fetch', x, viaClient.status);
      record('x402-fetch', x);
    }
    const spent = buyerBefore - (await h.balanceOf(buyer.address));
    const rounds = o.n + 2; // warm-up rounds pay too
    if (spent !== price * BigInt(3 * rounds))
      problems.push(`buyer paid ${spent}, expected ${price * BigInt(3 * rounds)} (3 payments x ${rounds} rounds)`);

    const stats = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return { p50: percentile(s, 50), p95: percentile(s, 95) };
    };
    const base = { ttfb: stats(rows.direct!.ttfb), total: stats(rows.direct!.total) };
    const lines = [
      `Paid chat vs the provider double, N=${o.n} sequential requests each (after 2 warm-up rounds); double: first byte ${o.firstByteDelay} ms, ${o.tokenDelay} ms per token, ${expected.split(' ').length} tokens.`,
      '',
      '| mode | TTFB p50 ms | TTFB p95 ms | total p50 ms | total p95 ms | TTFB p50 / direct | total p50 / direct |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...Object.entries(rows).map(([mode, r]) => {
        const f = stats(r.ttfb);
        const tt = stats(r.total);
        return `| ${mode} | ${f.p50.toFixed(1)} | ${f.p95.toFixed(1)} | ${tt.p50.toFixed(1)} | ${tt.p95.toFixed(1)} | ${(f.p50 / base.ttfb.p50).toFixed(2)} | ${(tt.p50 / base.total.p50).toFixed(2)} |`;
      }),
      '',
      '`settle only` is POST /v1/settle of the same kind of payment (JSON answer; TTFB = total): the settlement share of the paid TTFB.',
      '',
      problems.length
        ? `PROBLEMS (${problems.length}):\n${problems.map((p) => `  - ${p}`).join('\n')}`
        : `All ${3 * (o.n + 2)} replies complete and equal to the double's, every settle 200; buyer paid exactly ${spent} base units.`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    if (problems.length) process.exitCode = 1;
  } finally {
    await stopTree(api.proc);
    await h.close();
    await globalTeardown();
  }
}

main().catch(async (err) => {
  console.error(err);
  await globalTeardown().catch(() => undefined);
  process.exit(1);
});
