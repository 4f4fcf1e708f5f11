import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, http, HttpRequestError, TimeoutError } from 'viem';
import { MAX_RPC_REPLY_BYTES, rpcFetch } from '../../src/chains/evm/rpc-fetch';

/**
 * Our JSON-RPC fetch (rpc-fetch.ts) under viem's http transport, over real HTTP: what viem makes of
 * its replies must be what it makes of Node's fetch's, for answers, JSON-RPC errors, HTTP errors,
 * timeouts, closed ports and oversized replies.
 */

let server: Server;
let url: string;
const seen: { method?: string; contentType?: string; body?: string }[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method, contentType: req.headers['content-type'], body });
      const { id, method } = JSON.parse(body);
      if (req.url === '/busy') return res.writeHead(503, 'Busy').end('busy');
      if (req.url === '/slow') return setTimeout(() => res.end(JSON.stringify({ jsonrpc: '2.0', id, result: '0x1' })), 500).unref();
      if (req.url === '/huge') return res.end(`{"jsonrpc":"2.0","id":${id},"result":"0x${'0'.repeat(MAX_RPC_REPLY_BYTES)}"}`);
      res.setHeader('content-type', 'application/json');
      if (method === 'eth_call')
        return res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: 3, message: 'execution reverted', data: '0x' } }));
      res.end(JSON.stringify({ jsonrpc: '2.0', id, result: '0x2a' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => (seen.length = 0));

const clientOf = (to: string, fetchFn: typeof fetch | undefined, timeout = 10_000) =>
  createPublicClient({ transport: http(to, { fetchFn, retryCount: 0, timeout }) });
const outcome = (p: Promise<unknown>) =>
  p.then(
    (value) => ({ value }),
    (err) => ({ error: err.constructor.name, status: err.status, details: err.details, short: err.shortMessage }),
  );

it('answers as fetch does: a result, a JSON-RPC error, an HTTP error status', async () => {
  for (const fetchFn of [rpcFetch, undefined]) {
    expect(await outcome(clientOf(url, fetchFn).getBlockNumber({ cacheTime: 0 }))).toEqual({ value: 42n });
    expect(await outcome(clientOf(url, fetchFn).call({ to: '0x0000000000000000000000000000000000000001', data: '0x' }))).toMatchObject({
      error: 'CallExecutionError',
      short: 'Execution reverted for an unknown reason.',
    });
    expect(await outcome(clientOf(`${url}/busy`, fetchFn).getBlockNumber({ cacheTime: 0 }))).toMatchObject({
      error: 'HttpRequestError',
      status: 503,
      details: '"busy"',
    });
  }
  expect(seen.map((s) => [s.method, s.contentType])).toEqual(Array(6).fill(['POST', 'application/json']));
  expect(JSON.parse(seen[0].body!)).toMatchObject({ jsonrpc: '2.0', method: 'eth_blockNumber' });
});

it('gives up at the timeout, on a closed port, and on a reply over the size cap', async () => {
  const slow = await clientOf(`${url}/slow`, rpcFetch, 100)
    .getBlockNumber({ cacheTime: 0 })
    .catch((e) => e);
  expect(slow).toBeInstanceOf(TimeoutError);
  const closed = await clientOf('http://127.0.0.1:1', rpcFetch)
    .getBlockNumber({ cacheTime: 0 })
    .catch((e) => e);
  expect(closed).toBeInstanceOf(HttpRequestError);
  const huge = await clientOf(`${url}/huge`, rpcFetch)
    .getBlockNumber({ cacheTime: 0 })
    .catch((e) => e);
  expect(huge).toBeInstanceOf(HttpRequestError);
  expect(huge.details).toBe(`RPC reply over ${MAX_RPC_REPLY_BYTES} bytes`);
});

it('refuses a URL that is not http(s), and a signal already aborted', async () => {
  await expect(rpcFetch('ftp://127.0.0.1/', { method: 'POST' })).rejects.toThrow('unsupported RPC URL scheme ftp:');
  const aborted = AbortSignal.abort(new Error('stop'));
  await expect(rpcFetch(url, { method: 'POST', body: '{}', signal: aborted })).rejects.toThrow('stop');
  expect(seen).toEqual([]);
});
