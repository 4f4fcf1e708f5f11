import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '../../src/config';
import { inferenceConfig, type InferenceConfig } from '../../src/inference/config';
import { InferenceRegistry } from '../../src/inference/providers';
import { decodePaymentHeader } from '../../src/inference/chat-payment';
import { PassThrough } from 'node:stream';
import { publicChunk, relay } from '../../src/inference/chat-stream';
import { MAX_EVENT_BYTES, openChatStream, ProviderFailure } from '../../src/inference/upstream';

/** Paid inference pieces without the stack: config, the registry's caches, SSE parsing, X-PAYMENT decoding. */

const RELAYER_ADDRESS = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** A tiny HTTP server answering with `handler`; counts requests per path. */
async function serve(handler: (path: string, res: import('node:http').ServerResponse) => void) {
  const hits: Record<string, number> = {};
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits[path] = (hits[path] ?? 0) + 1;
    handler(path, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('inference config', () => {
  test('devnet defaults: two providers, default model modelserver:24B, revenue wallet = relayer address', () => {
    const c = inferenceConfig({ env: {}, RELAYER_ADDRESS: RELAYER_ADDRESS });
    expect(c.providers.map((p) => p.id)).toEqual(['modelserver', 'modelserver2']);
    expect(c).toMatchObject({
      defaultModel: 'modelserver:24B',
      defaultTemplate: 'logical',
      price: '10000',
      network: 'base-sepolia',
      templatesTtlMs: 300_000,
      templatesUrl: 'http://127.0.0.1:8600/v1/templates',
      revenueWallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      maxStreamMs: 600_000,
    });
    // The guard looks only after every bound of a request has passed.
    expect(inferenceConfig({ env: {}, RELAYER_ADDRESS: RELAYER_ADDRESS, SETTLE_WAIT_MS: 20_000 }).guardDelayMs).toBe(
      20_000 + 30_000 + 600_000 + 30_000 + 60_000,
    );
  });

  test('bad values name the variable', () => {
    const bad = (env: Record<string, string>) => () => inferenceConfig({ env, RELAYER_ADDRESS: RELAYER_ADDRESS });
    expect(bad({ INFERENCE_PROVIDERS: 'not json' })).toThrow(/INFERENCE_PROVIDERS: must be a JSON array/);
    expect(bad({ INFERENCE_PROVIDERS: '[{"id":"Up","label":"x","baseUrl":"http://a/v1"}]' })).toThrow(ConfigError);
    expect(
      bad({ INFERENCE_PROVIDERS: '[{"id":"a","label":"x","baseUrl":"http://a/v1"},{"id":"a","label":"y","baseUrl":"http://b/v1"}]' }),
    ).toThrow(/unique/);
    expect(bad({ INFERENCE_CHAT_PRICE: '0' })).toThrow(/INFERENCE_CHAT_PRICE/);
    expect(bad({ INFERENCE_CHAT_NETWORK: 'mars' })).toThrow(/INFERENCE_CHAT_NETWORK/);
  });
});

describe('InferenceRegistry', () => {
  test('templates are cached for the TTL; a provider that stops answering is no longer listed', async () => {
    let up = true;
    const s = await serve((path, res) => {
      if (!up) return res.destroy();
      res.setHeader('content-type', 'application/json');
      if (path === '/v1/models') res.end(JSON.stringify({ object: 'list', data: [{ id: '24B', object: 'model' }] }));
      else
        res.end(JSON.stringify({ data: [{ name: 'logical', label: 'Logical', prompt: 'p' }, { name: 'nameless' }, { label: 'no name' }] }));
    });
    try {
      let now = 1_000_000;
      const c: InferenceConfig = {
        ...inferenceConfig({ env: {}, RELAYER_ADDRESS: RELAYER_ADDRESS }),
        providers: [{ id: 'ms', label: 'MS', baseUrl: `${s.url}/v1` }],
        templatesUrl: `${s.url}/v1/templates`,
        modelsTtlMs: 1000,
      };
      const r = new InferenceRegistry(c, () => now);
      expect(await r.templateList()).toEqual([
        { name: 'logical', label: 'Logical', prompt: 'p' },
        { name: 'nameless', label: 'nameless' },
      ]);
      now += 299_000;
      await r.templateList();
      expect(s.hits['/v1/templates']).toBe(1); // still cached just before 5 minutes
      now += 2_000;
      await r.templateList();
      expect(s.hits['/v1/templates']).toBe(2);

      expect((await r.models()).models).toEqual([{ id: 'ms:24B', provider: 'ms', upstreamModel: '24B' }]);
      expect((await r.providers())[0]!.status).toBe('available');
      up = false;
      now += 1_001;
      expect(await r.models()).toEqual({ models: [], down: ['ms'] });
      expect(await r.providers()).toEqual([]); // down and not fundable: not listed (the spec has no third status)
      now += 300_000;
      await expect(r.templateList()).rejects.toThrow(/templates source unavailable/);
    } finally {
      await s.close();
    }
  });
});

describe('upstream SSE', () => {
  const provider = (url: string) => ({ id: 'p', label: 'P', baseUrl: `${url}/v1` });
  const chunk = (content: string) =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}`;

  test('events split across reads and CRLF line ends are parsed; [DONE] ends the stream', async () => {
    const body = `${chunk('Hel')}\r\n\r\n${chunk('lo')}\n\n: comment\n\ndata: [DONE]\n\n`;
    const s = await serve(async (_path, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < body.length; i += 7) {
        res.write(body.slice(i, i + 7));
        await new Promise((r) => setTimeout(r, 1));
      }
      res.end();
    });
    try {
      const stream = await openChatStream(provider(s.url), 'm', [{ role: 'user', content: 'x' }], {
        signal: new AbortController().signal,
        firstByteTimeoutMs: 5000,
      });
      const all = [stream.first];
      for await (const c of stream.rest()) all.push(c);
      expect(all.map((c: any) => c.choices[0].delta.content).join('')).toBe('Hello');
    } finally {
      await s.close();
    }
  });

  test('a stream that ends without [DONE] fails mid-stream; an HTTP error or silence fails before the first byte', async () => {
    let mode = 'truncated';
    const s = await serve((_path, res) => {
      if (mode === 'truncated') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`${chunk('a')}\n\n${chunk('b')}\n\n`);
      } else if (mode === 'error') {
        res.writeHead(500);
        res.end('boom https://leak.example/v2/provider-key');
      } else if (mode === 'endless') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${'x'.repeat(MAX_EVENT_BYTES + 1)}`); // an event that never ends
      } // silent: never answers
    });
    try {
      const opts = { signal: new AbortController().signal, firstByteTimeoutMs: 300 };
      const stream = await openChatStream(provider(s.url), 'm', [], opts);
      const rest = async () => {
        for await (const _ of stream.rest()) void _;
      };
      await expect(rest()).rejects.toMatchObject({ beforeFirstByte: false, message: expect.stringContaining('ended before [DONE]') });

      mode = 'error';
      // The buyer sees no upstream text; our logs get it (redacted) as the detail.
      await expect(openChatStream(provider(s.url), 'm', [], opts)).rejects.toMatchObject({
        beforeFirstByte: true,
        message: 'provider p answered HTTP 500',
        detail: 'boom https://leak.example/…',
      });
      mode = 'silent';
      const err = await openChatStream(provider(s.url), 'm', [], opts).catch((e) => e);
      expect(err).toBeInstanceOf(ProviderFailure);
      expect(err.message).toMatch(/no reply within 300 ms/);
      mode = 'endless';
      await expect(openChatStream(provider(s.url), 'm', [], { ...opts, firstByteTimeoutMs: 5000 })).rejects.toMatchObject({
        beforeFirstByte: true,
        message: `provider p failed before the reply: an event longer than ${MAX_EVENT_BYTES} bytes`,
      });
    } finally {
      await s.close();
    }
  });
});

describe('chat wire pieces', () => {
  test('publicChunk keeps the spec chunk fields and names the public model', () => {
    expect(
      publicChunk(
        {
          id: 'x',
          object: 'chat.completion.chunk',
          created: 1,
          model: '24B',
          system_fingerprint: 'f',
          choices: [{ index: 0, delta: { role: 'assistant', content: 'hi', tool_calls: [] }, finish_reason: null, logprobs: null }],
        },
        'ms:24B',
      ),
    ).toEqual({
      id: 'x',
      object: 'chat.completion.chunk',
      model: 'ms:24B',
      choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }],
    });
  });

  test('X-PAYMENT decoding says what is wrong', () => {
    expect(decodePaymentHeader('***')).toEqual({ error: 'X-PAYMENT is not base64' });
    expect(decodePaymentHeader(Buffer.from('{nope').toString('base64'))).toEqual({ error: 'X-PAYMENT is not base64-encoded JSON' });
    expect(decodePaymentHeader(Buffer.from('{"x402Version":2}').toString('base64')).error).toMatch(
      /^X-PAYMENT is not an x402 v1 exact EVM payment payload \(x402Version/,
    );
  });
});

describe('SSE relay backpressure', () => {
  test('a reader that does not read pauses the relay at the stream high-water mark; reading lets it finish', async () => {
    const out = new PassThrough({ highWaterMark: 16 * 1024 });
    let pulled = 0;
    const chunk = { id: 'c', choices: [{ index: 0, delta: { content: 'x'.repeat(1000) }, finish_reason: null }] };
    const upstream = {
      first: chunk,
      async *rest() {
        for (let i = 0; i < 1000; i++) {
          pulled++;
          yield chunk;
        }
      },
    };
    const ended = relay(
      upstream,
      out,
      'm',
      () => false,
      async () => undefined,
    );
    await new Promise((r) => setTimeout(r, 50));
    // ~1 KB events against a 16 KiB buffer: the relay waits for 'drain' instead of pulling all 1000.
    expect(pulled).toBeLessThan(40);
    expect(out.writableLength).toBeLessThan(32 * 1024);
    let received = '';
    out.on('data', (b: Buffer) => (received += b.toString()));
    await expect(ended).resolves.toEqual({ kind: 'delivered' });
    expect(pulled).toBe(1000);
    expect(received.split('\n\n').filter(Boolean)).toHaveLength(1002); // first + 1000 + [DONE]
  });
});

/**
 * docs/security.md "Chat refunds after reading": a buyer who slows or stalls the stream gets no
 * refund; only a failure on the provider's side is refunded.
 */
describe('who cut the stream', () => {
  const chunk = { id: 'c', choices: [{ index: 0, delta: { content: 'x'.repeat(1000) }, finish_reason: null }] };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** An upstream of `n` chunks `everyMs` apart that fails as an abort does once `cut()` says so. */
  const upstreamOf = (n: number, everyMs: number, cut: () => boolean) => {
    let pulled = 0;
    return {
      pulled: () => pulled,
      stream: {
        first: chunk,
        async *rest() {
          for (let i = 0; i < n; i++) {
            if (everyMs) await sleep(everyMs);
            if (cut()) throw new ProviderFailure('the reply took longer than the bound', false);
            pulled++;
            yield chunk;
          }
        },
      },
    };
  };
  /** A reader taking one event every `everyMs` (none when undefined). */
  const reader = (out: PassThrough, everyMs: number) => {
    const timer = setInterval(() => out.read(1000), everyMs);
    return () => clearInterval(timer);
  };

  test('a slow reader cut by the time bound: client_closed, nothing refunded', async () => {
    const out = new PassThrough({ highWaterMark: 2 * 1024 });
    let cut = false;
    const up = upstreamOf(10_000, 0, () => cut);
    const stop = reader(out, 20);
    const onFailure = jest.fn(async () => undefined);
    const ended = relay(up.stream, out, 'm', () => false, onFailure, { writeTimeoutMs: 5_000, cutByDeadline: () => cut });
    await sleep(400);
    cut = true; // the bound, while the provider had everything ready and the reader held the stream
    await expect(ended).resolves.toEqual({ kind: 'client_closed' });
    stop();
    expect(up.pulled()).toBeGreaterThan(3);
    expect(onFailure).not.toHaveBeenCalled();
  });

  test('a client that reads nothing: the write times out, client_closed, the provider is no longer pulled', async () => {
    const out = new PassThrough({ highWaterMark: 2 * 1024 });
    const up = upstreamOf(10_000, 0, () => false);
    const onFailure = jest.fn(async () => undefined);
    const started = Date.now();
    await expect(relay(up.stream, out, 'm', () => false, onFailure, { writeTimeoutMs: 300 })).resolves.toEqual({ kind: 'client_closed' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(up.pulled()).toBeLessThan(10);
    expect(out.destroyed).toBe(true);
    expect(onFailure).not.toHaveBeenCalled();
  });

  test('a slow provider cut by the time bound while the reader keeps up: provider_failed, refunded', async () => {
    const out = new PassThrough({ highWaterMark: 2 * 1024 });
    let cut = false;
    const up = upstreamOf(10_000, 50, () => cut);
    let received = '';
    out.on('data', (b: Buffer) => (received += b.toString()));
    const onFailure = jest.fn(async (message: string) => ({ error: 'provider_failed', message }));
    const ended = relay(up.stream, out, 'm', () => false, onFailure, { writeTimeoutMs: 5_000, cutByDeadline: () => cut });
    await sleep(300);
    cut = true;
    await expect(ended).resolves.toEqual({ kind: 'provider_failed', message: 'the reply took longer than the bound' });
    expect(onFailure).toHaveBeenCalledTimes(1);
    expect(received).toContain('event: error\n');
  });

  test('a provider failing mid-stream: provider_failed, refunded', async () => {
    const out = new PassThrough();
    out.resume();
    let n = 0;
    const up = upstreamOf(10, 0, () => ++n > 3);
    const onFailure = jest.fn(async () => undefined);
    await expect(
      relay(up.stream, out, 'm', () => false, onFailure, { writeTimeoutMs: 5_000, cutByDeadline: () => false }),
    ).resolves.toEqual({
      kind: 'provider_failed',
      message: 'the reply took longer than the bound',
    });
    expect(onFailure).toHaveBeenCalledTimes(1);
  });
});
