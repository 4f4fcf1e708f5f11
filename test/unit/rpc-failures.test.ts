import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient } from 'viem';
import { countRpcFailures, tracedHttp } from '../../src/chains/evm/rpc-spans';

/**
 * The worker's x402_rpc_errors_total counts calls its node did not answer (rpc-spans.ts), over real
 * HTTP: a closed port, an HTTP 503 and a timeout count once per call (after viem's retries); a
 * JSON-RPC error reply (a revert) is an answer and counts nothing.
 */

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const { id } = JSON.parse(body);
      if (req.url === '/busy') return res.writeHead(503).end('busy');
      if (req.url === '/slow') return setTimeout(() => res.end(JSON.stringify({ jsonrpc: '2.0', id, result: '0x1' })), 500).unref();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: 3, message: 'execution reverted', data: '0x' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  countRpcFailures(undefined);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const counted: string[] = [];
beforeEach(() => {
  counted.length = 0;
  countRpcFailures((network) => counted.push(network));
});

const call = (rpcUrl: string, network: string) =>
  createPublicClient({ transport: tracedHttp(rpcUrl, network, { retryCount: 1, retryDelay: 1, timeout: 200 }) }).getBlockNumber({
    cacheTime: 0,
  });

test('no answer counts once per call by network: closed port, HTTP 503, timeout', async () => {
  await expect(call('http://127.0.0.1:9', 'base-sepolia')).rejects.toThrow();
  await expect(call(`${url}/busy`, 'base')).rejects.toThrow();
  await expect(call(`${url}/slow`, 'base')).rejects.toThrow();
  expect(counted).toEqual(['base-sepolia', 'base', 'base']);
});

test('a JSON-RPC error reply is an answer: not counted', async () => {
  await expect(call(`${url}/revert`, 'base-sepolia')).rejects.toThrow('execution reverted');
  expect(counted).toEqual([]);
});

test('no counter installed (the API): nothing is called', async () => {
  countRpcFailures(undefined);
  await expect(call('http://127.0.0.1:9', 'base-sepolia')).rejects.toThrow();
  expect(counted).toEqual([]);
});
