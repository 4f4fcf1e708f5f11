import { ApplicationFailure } from '@temporalio/common';
import { HttpRequestError } from 'viem';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BodyTooLarge, readBounded, readPrefix } from '../../src/upstream/bounded-body';
import { createLogger } from '../../src/logger';
import { redactError, redactUrls } from '../../src/observability/redact';
import { RedactingActivityInbound } from '../../src/temporal/redacting-interceptor';

const KEY = 'sk-provider-9f8e7d6c5b4a';

describe('redactUrls', () => {
  test.each([
    [
      `HTTP request failed. URL: https://base-mainnet.g.alchemy.com/v2/${KEY}`,
      'HTTP request failed. URL: https://base-mainnet.g.alchemy.com/…',
    ],
    [`{"url":"https://mainnet.infura.io/v3/${KEY}","x":1}`, '{"url":"https://mainnet.infura.io/…","x":1}'],
    [`wss://rpc.example.com/ws?api-key=${KEY} closed`, 'wss://rpc.example.com/… closed'],
    [`https://user:${KEY}@rpc.example.com`, 'https://rpc.example.com'],
    ['http://127.0.0.1:8545 refused', 'http://127.0.0.1:8545 refused'],
    ['http://127.0.0.1:8545/ refused', 'http://127.0.0.1:8545/ refused'],
    ['no url here: settle:base:0xabc', 'no url here: settle:base:0xabc'],
  ])('%s', (text, expected) => {
    expect(redactUrls(text)).toBe(expected);
  });

  test('redactError cuts message and stack down the cause chain', () => {
    const err = new Error(`outer https://rpc.example.com/${KEY}`, { cause: new Error(`inner https://rpc.example.com/?key=${KEY}`) });
    redactError(err);
    expect(err.message).toBe('outer https://rpc.example.com/…');
    expect(err.stack).not.toContain(KEY);
    expect((err.cause as Error).message).toBe('inner https://rpc.example.com/…');
  });
});

describe('where redaction applies', () => {
  test('every log line, whatever field or error carries the URL', () => {
    const lines: string[] = [];
    const log = createLogger('info', 'test', { write: (line) => lines.push(line) });
    log.warn(
      { rpcUrl: `https://rpc.example.com/v2/${KEY}`, err: new Error(`fetch https://rpc.example.com/${KEY} failed`) },
      `at https://x.example/${KEY}`,
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(KEY);
    expect(JSON.parse(lines[0])).toMatchObject({ rpcUrl: 'https://rpc.example.com/…', msg: 'at https://x.example/…' });
  });

  test('activity failures (what workflow history records)', async () => {
    const inbound = new RedactingActivityInbound();
    const failing = async () => {
      throw new Error(`HTTP request failed. URL: https://rpc.example.com/v2/${KEY}`);
    };
    const err = await inbound.execute({} as never, failing).catch((e: Error) => e);
    expect((err as Error).message).toBe('HTTP request failed. URL: https://rpc.example.com/…');
    await expect(inbound.execute({} as never, async () => 'ok')).resolves.toBe('ok');
  });

  test('a viem error leaves as a small ApplicationFailure of its own name: no URL property, no request body, no cause chain', async () => {
    const inbound = new RedactingActivityInbound();
    const viem = new HttpRequestError({
      url: `https://rpc.example.com/v2/${KEY}?key=${KEY}`,
      body: { raw: 'ab'.repeat(50_000) },
      status: 429,
    });
    const err = (await inbound.execute({} as never, () => Promise.reject(viem)).catch((e: unknown) => e)) as ApplicationFailure;

    expect(err).toBeInstanceOf(ApplicationFailure);
    expect({ type: err.type, nonRetryable: err.nonRetryable, cause: err.cause }).toEqual({
      type: 'HttpRequestError',
      nonRetryable: false,
      cause: undefined,
    });
    expect(JSON.stringify({ ...err, message: err.message, stack: err.stack })).not.toContain(KEY);
    expect(err.message).toMatch(/^HTTP request failed\.[\s\S]*URL: https:\/\/rpc\.example\.com\/…[\s\S]*more characters\)$/);
    expect(err.message.length).toBeLessThan(4_100);
    expect(Object.keys(err)).not.toContain('url');
    // An ApplicationFailure of ours over a viem error (ApplicationFailure.fromError) keeps its own fields, over a plain cause.
    // (fromError takes the error's own cause as the failure's: viem's estimate error over its HTTP error.)
    const wrapped = ApplicationFailure.fromError(new Error('estimate failed', { cause: viem }), { nonRetryable: true });
    const out = (await inbound.execute({} as never, () => Promise.reject(wrapped)).catch((e: unknown) => e)) as ApplicationFailure;
    expect({ type: out.type, nonRetryable: out.nonRetryable }).toEqual({ type: 'Error', nonRetryable: true });
    expect(out.cause).toBeInstanceOf(ApplicationFailure);
    expect(Object.keys(out.cause!)).not.toContain('url');
    expect(JSON.stringify({ ...out.cause, message: out.cause!.message, stack: out.cause!.stack })).not.toContain(KEY);
    // Temporal's own failures pass as they are, redacted.
    const own = ApplicationFailure.nonRetryable(`see https://rpc.example.com/${KEY}`, 'RefundNotOwed');
    expect(await inbound.execute({} as never, () => Promise.reject(own)).catch((e: unknown) => e)).toBe(own);
    expect(own.message).toBe('see https://rpc.example.com/…');
  });
});

describe('bounded upstream bodies', () => {
  let url: string;
  const server = createServer((req, res) => {
    const size = Number(new URL(req.url!, 'http://x').searchParams.get('size'));
    const declared = req.url!.includes('declared');
    res.writeHead(200, declared ? { 'content-length': String(size) } : {});
    // Chunked answers (no content-length) are cut while reading.
    for (let sent = 0; sent < size; sent += 1024) res.write('a'.repeat(Math.min(1024, size - sent)));
    res.end();
  });
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  test('a body within the bound is read whole', async () => {
    expect((await readBounded(await fetch(`${url}/?size=4096`), 4096)).length).toBe(4096);
  });

  test.each(['declared', 'chunked'])('a %s body over the bound is refused', async (how) => {
    await expect(readBounded(await fetch(`${url}/${how}?size=100000`), 4096)).rejects.toBeInstanceOf(BodyTooLarge);
  });

  test('readPrefix keeps only the first bytes', async () => {
    expect(await readPrefix(await fetch(`${url}/?size=100000`), 300)).toBe('a'.repeat(300));
  });
});
