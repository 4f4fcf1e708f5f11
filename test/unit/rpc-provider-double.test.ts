import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  BlockNotFoundError,
  createPublicClient,
  HttpRequestError,
  http,
  InvalidInputRpcError,
  keccak256,
  LimitExceededRpcError,
  MethodNotFoundRpcError,
  numberToHex,
  pad,
  RpcRequestError,
  TimeoutError,
  TransactionReceiptNotFoundError,
  type Hex,
} from 'viem';
import { waitUntil } from '../../devnet/process';
import { startRpcProviderDouble, type FaultRule, type RpcProviderDouble } from '../../devnet/rpc-provider-double';

/**
 * The hosted-provider double (devnet/rpc-provider-double.ts) in front of a fake node, driven with viem
 * as our service drives its RPC: each fault must look to viem as the real provider's does.
 */

interface Call {
  id?: unknown;
  method: string;
  params?: unknown[];
}

// The fake node: head block 100, one transaction mined at 90 and one at 99. Block hashes are the block
// number padded to 32 bytes, so eth_getBlockByHash can answer any of them.
const HEAD = 100;
const OLD_TX = keccak256('0x01');
const NEW_TX = keccak256('0x02');
const minedAt: Record<Hex, number> = { [OLD_TX]: 90, [NEW_TX]: 99 };
const blockHash = (n: number) => pad(numberToHex(n), { size: 32 });
const ADDRESS = '0x00000000000000000000000000000000000000aa';
const RAW_TX: Hex = '0x02f86b0180843b9aca00';
const RAW_TX_HASH = keccak256(RAW_TX);

let node: Server;
let nodeUrl: string;
/** Every HTTP body the node received (parsed), and every call in them. */
const bodies: unknown[] = [];
const received: Call[] = [];

function nodeAnswer({ id, method, params = [] }: Call): unknown {
  const block = (n: number) => ({
    number: numberToHex(n),
    hash: blockHash(n),
    parentHash: blockHash(n - 1),
    timestamp: '0x0',
    transactions: [],
  });
  const result = (r: unknown) => ({ jsonrpc: '2.0', id, result: r });
  switch (method) {
    case 'eth_blockNumber':
      return result(numberToHex(HEAD));
    case 'eth_chainId':
      return result('0x7a69');
    case 'eth_getBalance':
      return result('0x64');
    case 'eth_estimateGas':
      return result('0x5208');
    case 'eth_sendRawTransaction':
      return result(keccak256(params[0] as Hex));
    case 'eth_getBlockByNumber':
      return result(block(params[0] === 'latest' ? HEAD : Number(params[0])));
    case 'eth_getBlockByHash':
      return result(block(Number(params[0])));
    case 'eth_getTransactionReceipt': {
      const at = minedAt[params[0] as Hex];
      if (at === undefined) return result(null);
      return result({ transactionHash: params[0], blockNumber: numberToHex(at), blockHash: blockHash(at), status: '0x1', logs: [] });
    }
    default:
      return { jsonrpc: '2.0', id, error: { code: -32601, message: `the method ${method} does not exist/is not available` } };
  }
}

beforeAll(async () => {
  node = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text);
      bodies.push(body);
      const calls: Call[] = Array.isArray(body) ? body : [body];
      received.push(...calls);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(Array.isArray(body) ? calls.map(nodeAnswer) : nodeAnswer(body)));
    });
  });
  await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
  nodeUrl = `http://127.0.0.1:${(node.address() as AddressInfo).port}`;
});
afterAll(async () => {
  node.closeAllConnections();
  await new Promise((resolve) => node.close(resolve));
});

const doubles: RpcProviderDouble[] = [];
async function start(rules: FaultRule[], opts: { seed?: number; noSyncSend?: boolean } = {}): Promise<RpcProviderDouble> {
  const double = await startRpcProviderDouble({ upstream: nodeUrl, rules, ...opts });
  doubles.push(double);
  return double;
}
beforeEach(() => {
  bodies.length = 0;
  received.length = 0;
});
afterEach(async () => {
  await Promise.all(doubles.splice(0).map((d) => d.stop()));
});

const clientOf = (url: string, timeout = 5_000) => createPublicClient({ transport: http(url, { retryCount: 0, timeout }) });
const failure = (p: Promise<unknown>) =>
  p.then(
    (value) => {
      throw new Error(`expected a failure, got ${String(value)}`);
    },
    (err) => err,
  );
const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const methodsReceived = () => received.map((c) => c.method);

it('forwards calls and their JSON-RPC errors unchanged when no rule hits', async () => {
  const double = await start([{ methods: ['eth_getBalance'], fault: 'limit-32005', probability: 0 }]);
  expect(double.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const client = clientOf(double.url);
  expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(100n);
  expect(await client.getBalance({ address: ADDRESS })).toBe(100n);
  const unknown = await failure(client.request({ method: 'eth_nope' } as any));
  expect(unknown).toBeInstanceOf(MethodNotFoundRpcError);
  expect(unknown.details).toBe('the method eth_nope does not exist/is not available');
  expect(methodsReceived()).toEqual(['eth_blockNumber', 'eth_getBalance', 'eth_nope']);
  expect(double.calls).toEqual([
    { method: 'eth_blockNumber', fault: 'none' },
    { method: 'eth_getBalance', fault: 'none' },
    { method: 'eth_nope', fault: 'none' },
  ]);
});

it('rate-limit-429: HTTP 429 with Retry-After and a JSON-RPC error body, nothing forwarded', async () => {
  const double = await start([{ methods: '*', fault: 'rate-limit-429', probability: 1, retryAfterSeconds: 7 }]);
  const res = await post(double.url, { jsonrpc: '2.0', id: 42, method: 'eth_blockNumber', params: [] });
  expect(res.status).toBe(429);
  expect(res.headers.get('retry-after')).toBe('7');
  expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 42, error: { code: 429, message: 'Too Many Requests' } });
  // viem keeps the JSON-RPC error with the HTTP status and headers (it retries by them when allowed to).
  const err = await failure(clientOf(double.url).getBlockNumber({ cacheTime: 0 }));
  expect(err).toBeInstanceOf(RpcRequestError);
  expect([err.code, err.status, err.headers.get('retry-after')]).toEqual([429, 429, '7']);
  expect(received).toEqual([]);
  expect(double.calls.map((c) => c.fault)).toEqual(['rate-limit-429', 'rate-limit-429']);
});

it('limit-32005: HTTP 200 with JSON-RPC error -32005 on the matching method only, until the rules change', async () => {
  const double = await start([{ methods: ['eth_getBalance'], fault: 'limit-32005', probability: 1 }]);
  const client = clientOf(double.url);
  const err = await failure(client.getBalance({ address: ADDRESS }));
  expect(err).toBeInstanceOf(LimitExceededRpcError);
  expect([err.code, err.details]).toEqual([-32005, 'limit exceeded']);
  expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(100n);
  double.setRules([]);
  expect(await client.getBalance({ address: ADDRESS })).toBe(100n);
  expect(methodsReceived()).toEqual(['eth_blockNumber', 'eth_getBalance']);
  expect(double.calls.map((c) => [c.method, c.fault])).toEqual([
    ['eth_getBalance', 'limit-32005'],
    ['eth_blockNumber', 'none'],
    ['eth_getBalance', 'none'],
  ]);
});

it('server-5xx: HTTP 502 or 503 with a short text body, nothing forwarded', async () => {
  const double = await start([{ methods: '*', fault: 'server-5xx', probability: 1 }]);
  const answers: [number, string][] = [];
  for (let i = 0; i < 8; i++) {
    const res = await post(double.url, { jsonrpc: '2.0', id: i, method: 'eth_chainId', params: [] });
    answers.push([res.status, await res.text()]);
  }
  expect(new Set(answers.map(([status]) => status))).toEqual(new Set([502, 503]));
  for (const [status, text] of answers) expect(text).toBe(status === 502 ? 'Bad Gateway' : 'Service Unavailable');
  const err = await failure(clientOf(double.url).getChainId());
  expect(err).toBeInstanceOf(HttpRequestError);
  expect([502, 503]).toContain(err.status);
  expect(received).toEqual([]);
});

it('reset: the socket is destroyed unanswered, a network error at the client', async () => {
  const double = await start([{ methods: ['eth_chainId'], fault: 'reset', probability: 1 }]);
  const err = await failure(clientOf(double.url).getChainId());
  expect(err).toBeInstanceOf(HttpRequestError);
  expect([err.status, err.cause.cause.code]).toEqual([undefined, 'ECONNRESET']); // undici's "fetch failed", caused by the reset
  expect(received).toEqual([]);
  expect(double.calls).toEqual([{ method: 'eth_chainId', fault: 'reset' }]);
});

it('hang: no answer until the client gives up; stop() releases the held sockets', async () => {
  const double = await start([{ methods: '*', fault: 'hang', probability: 1 }]);
  expect(await failure(clientOf(double.url, 200).getChainId())).toBeInstanceOf(TimeoutError);
  // A client that never gives up is let go when the double stops.
  const held = failure(post(double.url, { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }));
  await waitUntil('the held call to reach the double', async () => double.calls.length === 2, { timeoutMs: 5_000, intervalMs: 5 });
  await expect(double.stop()).resolves.toBeUndefined();
  // undici's "fetch failed" (a TypeError from Node's realm, not Jest's): the socket closed unanswered.
  expect([(await held).name, (await held).message]).toEqual(['TypeError', 'fetch failed']);
  expect(received).toEqual([]);
  expect(double.calls.map((c) => c.fault)).toEqual(['hang', 'hang']);
});

describe('lag: a replica 3 blocks behind (head 100, so 97)', () => {
  let client: ReturnType<typeof clientOf>;
  let double: RpcProviderDouble;
  beforeEach(async () => {
    double = await start([{ methods: '*', fault: 'lag', probability: 1, lagBlocks: 3 }]);
    client = clientOf(double.url);
  });
  /** What the node received, without the double's own head lookups (their count depends on its cache). */
  const forwarded = () => received.filter((c) => c.method !== 'eth_blockNumber');

  it('answers the lagged head and reads state at it', async () => {
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(97n);
    expect(await client.getBalance({ address: ADDRESS })).toBe(100n);
    expect(await client.request({ method: 'eth_estimateGas', params: [{ to: ADDRESS }] } as any)).toBe('0x5208');
    expect((await client.getBlock()).number).toBe(97n);
    expect(await client.getChainId()).toBe(31337);
    expect(forwarded()).toEqual([
      { jsonrpc: '2.0', id: expect.any(Number), method: 'eth_getBalance', params: [ADDRESS, '0x61'] },
      { jsonrpc: '2.0', id: expect.any(Number), method: 'eth_estimateGas', params: [{ to: ADDRESS }, '0x61'] },
      { jsonrpc: '2.0', id: expect.any(Number), method: 'eth_getBlockByNumber', params: ['0x61', false] },
      { jsonrpc: '2.0', id: expect.any(Number), method: 'eth_chainId' },
    ]);
    // The node's eth_blockNumber calls are all the double's own head lookups.
    expect(new Set(received.filter((c) => c.method === 'eth_blockNumber').map((c) => c.id))).toEqual(new Set(['rpc-provider-double:head']));
    expect(double.calls.map((c) => c.fault)).toEqual(Array(5).fill('lag'));
  });

  it('has not seen the blocks after its head: receipts, blocks and state there are missing', async () => {
    expect((await client.getTransactionReceipt({ hash: OLD_TX })).blockNumber).toBe(90n);
    expect(await failure(client.getTransactionReceipt({ hash: NEW_TX }))).toBeInstanceOf(TransactionReceiptNotFoundError);
    expect(await failure(client.getBlock({ blockHash: blockHash(99) }))).toBeInstanceOf(BlockNotFoundError);
    expect((await client.getBlock({ blockHash: blockHash(97) })).number).toBe(97n);
    // Blocks above the lagged head by number are answered without asking the node, as a lagging node does.
    expect(await failure(client.getBlock({ blockNumber: 98n }))).toBeInstanceOf(BlockNotFoundError);
    const future = await failure(client.getBalance({ address: ADDRESS, blockNumber: 99n }));
    expect(future).toBeInstanceOf(InvalidInputRpcError);
    expect([future.code, future.details]).toEqual([-32000, 'header not found']);
    expect(await client.getBalance({ address: ADDRESS, blockNumber: 97n })).toBe(100n);
    expect(forwarded().map((c) => [c.method, c.params![0]])).toEqual([
      ['eth_getTransactionReceipt', OLD_TX],
      ['eth_getTransactionReceipt', NEW_TX],
      ['eth_getBlockByHash', blockHash(99)],
      ['eth_getBlockByHash', blockHash(97)],
      ['eth_getBalance', ADDRESS],
    ]);
    expect(forwarded()[4].params).toEqual([ADDRESS, '0x61']);
  });
});

describe('sends', () => {
  it('drop: answers the hash of the raw bytes, never forwards it, and lists it', async () => {
    const double = await start([{ methods: '*', fault: 'drop', probability: 1 }]);
    const client = clientOf(double.url);
    expect(await client.sendRawTransaction({ serializedTransaction: RAW_TX })).toBe(RAW_TX_HASH);
    // A drop rule does not apply to other methods (and draws nothing for them).
    expect(await client.getChainId()).toBe(31337);
    expect(methodsReceived()).toEqual(['eth_chainId']);
    expect(double.dropped).toEqual([RAW_TX_HASH]);
    expect(double.calls).toEqual([
      { method: 'eth_sendRawTransaction', fault: 'drop', hash: RAW_TX_HASH },
      { method: 'eth_chainId', fault: 'none' },
    ]);
  });

  it('lose-answer: the node gets the transaction, the client gets a network error', async () => {
    const double = await start([{ methods: ['eth_sendRawTransaction'], fault: 'lose-answer', probability: 1 }]);
    const err = await failure(clientOf(double.url).sendRawTransaction({ serializedTransaction: RAW_TX }));
    expect(err).toBeInstanceOf(HttpRequestError);
    expect([err.status, err.cause.cause.code]).toEqual([undefined, 'ECONNRESET']);
    expect(received).toEqual([{ jsonrpc: '2.0', id: expect.any(Number), method: 'eth_sendRawTransaction', params: [RAW_TX] }]);
    expect(double.dropped).toEqual([]);
    expect(double.calls).toEqual([{ method: 'eth_sendRawTransaction', fault: 'lose-answer', hash: RAW_TX_HASH }]);
  });

  it('eth_sendRawTransactionSync answers -32601 by default, before any drop rule', async () => {
    const double = await start([{ methods: '*', fault: 'drop', probability: 1 }]);
    const err = await failure(clientOf(double.url).request({ method: 'eth_sendRawTransactionSync', params: [RAW_TX] }));
    expect(err).toBeInstanceOf(MethodNotFoundRpcError);
    expect(err.code).toBe(-32601);
    expect(received).toEqual([]);
    expect(double.dropped).toEqual([]);
    expect(double.calls).toEqual([{ method: 'eth_sendRawTransactionSync', fault: 'none', hash: RAW_TX_HASH }]);
  });

  it('a dropped eth_sendRawTransactionSync (when served) answers the EIP-7966 timeout with the hash', async () => {
    const double = await start([{ methods: '*', fault: 'drop', probability: 1 }], { noSyncSend: false });
    const err = await failure(clientOf(double.url).request({ method: 'eth_sendRawTransactionSync', params: [RAW_TX] }));
    expect(err).toBeInstanceOf(RpcRequestError);
    expect([err.code, err.data]).toEqual([4, RAW_TX_HASH]);
    expect(received).toEqual([]);
    expect(double.dropped).toEqual([RAW_TX_HASH]);
  });
});

describe('batches', () => {
  const batch = [
    { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
    { jsonrpc: '2.0', id: 2, method: 'eth_getBalance', params: [ADDRESS, 'latest'] },
    { jsonrpc: '2.0', id: 3, method: 'eth_sendRawTransaction', params: [RAW_TX] },
  ];

  it('with no fault, are forwarded as they are, in one request', async () => {
    const double = await start([]);
    const res = await post(double.url, batch);
    expect(await res.json()).toEqual([
      { jsonrpc: '2.0', id: 1, result: '0x64' },
      { jsonrpc: '2.0', id: 2, result: '0x64' },
      { jsonrpc: '2.0', id: 3, result: RAW_TX_HASH },
    ]);
    expect(bodies).toEqual([batch]);
  });

  it('call-level faults answer their own call; the others are forwarded', async () => {
    const double = await start([
      { methods: ['eth_getBalance'], fault: 'limit-32005', probability: 1 },
      { methods: '*', fault: 'drop', probability: 1 },
    ]);
    const res = await post(double.url, batch);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([
      { jsonrpc: '2.0', id: 1, result: '0x64' },
      { jsonrpc: '2.0', id: 2, error: { code: -32005, message: 'limit exceeded' } },
      { jsonrpc: '2.0', id: 3, result: RAW_TX_HASH },
    ]);
    expect(received).toEqual([batch[0]]);
    expect(double.calls.map((c) => c.fault)).toEqual(['none', 'limit-32005', 'drop']);
    expect(double.dropped).toEqual([RAW_TX_HASH]);
  });

  it('a transport-level fault on any call applies to the whole request', async () => {
    const double = await start([
      { methods: ['eth_sendRawTransaction'], fault: 'drop', probability: 1 },
      { methods: ['eth_getBalance'], fault: 'rate-limit-429', probability: 1 },
    ]);
    const res = await post(double.url, batch);
    expect([res.status, res.headers.get('retry-after')]).toEqual([429, '1']);
    expect(await res.json()).toEqual(batch.map(({ id }) => ({ jsonrpc: '2.0', id, error: { code: 429, message: 'Too Many Requests' } })));
    expect(received).toEqual([]);
    expect(double.calls.map((c) => c.fault)).toEqual(['rate-limit-429', 'rate-limit-429', 'rate-limit-429']);
    expect(double.dropped).toEqual([]);
  });
});

describe('the schedule', () => {
  const faultsOver50Calls = async (seed: number) => {
    const double = await start([{ methods: '*', fault: 'limit-32005', probability: 0.5 }], { seed });
    const client = clientOf(double.url);
    for (let i = 0; i < 50; i++) await client.getBlockNumber({ cacheTime: 0 }).catch(() => undefined);
    return double.calls.map((c) => c.fault);
  };

  it('is the same for the same seed and call sequence, and differs for another seed', async () => {
    const first = await faultsOver50Calls(1);
    const again = await faultsOver50Calls(1);
    const otherSeed = await faultsOver50Calls(2);
    expect(first).toHaveLength(50);
    expect(new Set(first)).toEqual(new Set(['none', 'limit-32005']));
    expect(again).toEqual(first);
    expect(otherSeed).not.toEqual(first);
    // Only the calls answered without a fault reached the node.
    expect(received).toHaveLength([...first, ...again, ...otherSeed].filter((f) => f === 'none').length);
  });
});
