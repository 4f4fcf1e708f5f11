/**
 * Devnet double of a hosted EVM JSON-RPC provider (Alchemy, Infura, QuickNode...): an HTTP proxy in
 * front of a real node (anvil) that misbehaves the way those providers do, per JSON-RPC method, on a
 * seeded schedule, so integration tests and chaos runs can replay the same bad day.
 *
 * The schedule: for each call, the rules are tried in order; every rule that applies to the call draws
 * one number from the seeded PRNG, and the first draw below its rule's probability picks the fault.
 * Draws happen synchronously as each request's body arrives, so one seed and one call sequence give one
 * fault sequence (a 'server-5xx' draws once more, for 502 or 503). setRules keeps the PRNG's position.
 *
 * Call-level faults ('limit-32005', 'lag', 'drop') shape one call's answer, inside a batch too.
 * Transport-level faults ('rate-limit-429', 'server-5xx', 'hang', 'reset', 'lose-answer') are about the
 * HTTP exchange: the first one drawn in a request applies to the whole request (every call of it is
 * recorded with it), and the other calls' draws are void.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isHex, keccak256, numberToHex } from 'viem';

export type RpcFault =
  | 'rate-limit-429' // HTTP 429 with a Retry-After header (seconds, integer) and a JSON-RPC error body
  | 'limit-32005' // HTTP 200 with JSON-RPC error { code: -32005, message: 'limit exceeded' } (as Infura does)
  | 'server-5xx' // HTTP 502 or 503 with a short text body
  | 'hang' // never answer (hold the socket open until the client gives up; release on stop())
  | 'reset' // destroy the socket without answering (ECONNRESET at the client)
  | 'lag' // answer as a replica N blocks behind
  | 'drop' // for eth_sendRawTransaction(Sync): answer as if broadcast, but never forward it
  | 'lose-answer'; // forward to the upstream, then reset the socket: the call took effect, the client does not know

export interface FaultRule {
  /** JSON-RPC methods this rule applies to; '*' for all. */
  methods: string[] | '*';
  fault: RpcFault;
  /** Probability per matching call, decided by the seeded PRNG (1 = always). */
  probability: number;
  /** For 'lag': how many blocks behind the replica is (default 1). */
  lagBlocks?: number;
  /** For 'rate-limit-429': the Retry-After seconds (default 1). */
  retryAfterSeconds?: number;
}

export interface RpcProviderDouble {
  url: string; // http://127.0.0.1:<port>
  /** Replace the rules from now on (tests switch faults on and off). */
  setRules(rules: FaultRule[]): void;
  /** Every call seen, in order: method, the fault applied (or 'none'), and for sends the tx hash. */
  readonly calls: ReadonlyArray<{ method: string; fault: RpcFault | 'none'; hash?: string }>;
  /** Hashes of broadcasts accepted but silently dropped. */
  readonly dropped: ReadonlyArray<string>;
  /** Closes the server and every connection (hung ones too); resolves when closed. Safe to call twice. */
  stop(): Promise<void>;
}

interface JsonRpcCall {
  jsonrpc?: string;
  id?: unknown;
  method: string;
  params?: unknown[];
}
interface JsonRpcAnswer {
  jsonrpc: '2.0';
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

const TRANSPORT_FAULTS: ReadonlySet<RpcFault> = new Set(['rate-limit-429', 'server-5xx', 'hang', 'reset', 'lose-answer']);
const SEND_METHODS: ReadonlySet<string> = new Set(['eth_sendRawTransaction', 'eth_sendRawTransactionSync']);
/** The position of the block tag in the params of the methods that read state at a block. */
const BLOCK_TAG_AT: ReadonlyMap<string, number> = new Map([
  ['eth_getTransactionCount', 1],
  ['eth_getBalance', 1],
  ['eth_getCode', 1],
  ['eth_getStorageAt', 2],
  ['eth_call', 1],
  ['eth_estimateGas', 1],
  ['eth_getBlockByNumber', 0],
]);
const HEAD_TAGS: ReadonlySet<unknown> = new Set(['latest', 'pending', 'safe', 'finalized']);
/** Methods whose answer names the block it is in, under this field: a replica has not seen later blocks. */
const BLOCK_FIELD: ReadonlyMap<string, string> = new Map([
  ['eth_getTransactionReceipt', 'blockNumber'],
  ['eth_getTransactionByHash', 'blockNumber'],
  ['eth_getBlockByHash', 'number'],
]);
const HEAD_CACHE_MS = 50;

/** mulberry32: a tiny seeded PRNG, uniform in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An HTTP reply: one we make, or the upstream's passed through as it is (thrown when it is not a JSON-RPC answer). */
class Reply {
  constructor(
    readonly status: number,
    readonly contentType: string,
    readonly body: string,
  ) {}
}

const ok = (call: JsonRpcCall, result: unknown): JsonRpcAnswer => ({ jsonrpc: '2.0', id: call.id ?? null, result });
const fail = (call: JsonRpcCall, code: number, message: string, data?: unknown): JsonRpcAnswer => ({
  jsonrpc: '2.0',
  id: call.id ?? null,
  error: data === undefined ? { code, message } : { code, message, data },
});
const isCall = (x: unknown): x is JsonRpcCall => typeof x === 'object' && x !== null && typeof (x as JsonRpcCall).method === 'string';
const txHashOf = (call: JsonRpcCall): string | undefined => {
  const raw = call.params?.[0];
  return SEND_METHODS.has(call.method) && typeof raw === 'string' && isHex(raw) ? keccak256(raw) : undefined;
};

export async function startRpcProviderDouble(opts: {
  upstream: string; // the real node's URL
  seed?: number; // default 1
  rules?: FaultRule[];
  /** Like most hosted providers today: eth_sendRawTransactionSync answers JSON-RPC -32601 method not found. Default true. */
  noSyncSend?: boolean;
  host?: string; // default 127.0.0.1; port is always 0 (the OS picks; read it from the server)
}): Promise<RpcProviderDouble> {
  const host = opts.host ?? '127.0.0.1';
  if (!/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(host)) throw new Error(`rpc provider double: loopback only, not ${host}`);
  const random = mulberry32(opts.seed ?? 1);
  const noSyncSend = opts.noSyncSend ?? true;
  const calls: { method: string; fault: RpcFault | 'none'; hash?: string }[] = [];
  const dropped: string[] = [];
  let rules: FaultRule[] = [];
  const setRules = (next: FaultRule[]) => {
    for (const r of next) {
      if (!(r.probability >= 0 && r.probability <= 1)) throw new Error(`rpc provider double: probability ${r.probability} not in [0, 1]`);
      if (r.lagBlocks !== undefined && !(Number.isInteger(r.lagBlocks) && r.lagBlocks >= 0)) {
        throw new Error(`rpc provider double: lagBlocks ${r.lagBlocks} is not a whole number of blocks`);
      }
    }
    rules = next.map((r) => ({ ...r }));
  };
  setRules(opts.rules ?? []);

  const unserved = (call: JsonRpcCall) => noSyncSend && call.method === 'eth_sendRawTransactionSync';

  function draw(call: JsonRpcCall): FaultRule | undefined {
    for (const rule of rules) {
      if (rule.methods !== '*' && !rule.methods.includes(call.method)) continue;
      // Only a broadcast can be dropped, and a provider without the Sync method answers -32601 first.
      if (rule.fault === 'drop' && (!SEND_METHODS.has(call.method) || unserved(call))) continue;
      if (random() < rule.probability) return rule;
    }
    return undefined;
  }

  async function post(body: string): Promise<Reply> {
    const res = await fetch(opts.upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return new Reply(res.status, res.headers.get('content-type') ?? 'application/json', await res.text());
  }

  /** One call to the upstream: its JSON-RPC answer, errors included; throws the reply when it is not one. */
  async function forward(call: JsonRpcCall): Promise<JsonRpcAnswer> {
    const reply = await post(JSON.stringify(call));
    if (reply.status !== 200) throw reply;
    try {
      return JSON.parse(reply.body) as JsonRpcAnswer;
    } catch {
      throw reply;
    }
  }

  // The upstream head, shared by concurrent calls for HEAD_CACHE_MS.
  let head: { at: number; value: Promise<bigint> } | undefined;
  function upstreamHead(): Promise<bigint> {
    if (head && Date.now() - head.at < HEAD_CACHE_MS) return head.value;
    const value = forward({ jsonrpc: '2.0', id: 'rpc-provider-double:head', method: 'eth_blockNumber', params: [] }).then((a) => {
      if (typeof a.result !== 'string') throw new Error(`upstream eth_blockNumber: ${JSON.stringify(a.error ?? a.result)}`);
      return BigInt(a.result);
    });
    head = { at: Date.now(), value };
    value.catch(() => {
      if (head?.value === value) head = undefined;
    });
    return value;
  }

  /**
   * The answer of a replica `lagBlocks` behind the upstream's head. Block tags given as strings are
   * rewritten or refused; an EIP-1898 object ({ blockHash } or { blockNumber }) goes through unchanged.
   */
  async function answerLagging(call: JsonRpcCall, lagBlocks: number): Promise<JsonRpcAnswer> {
    const upstream = await upstreamHead();
    const lagged = upstream > BigInt(lagBlocks) ? upstream - BigInt(lagBlocks) : 0n;
    if (call.method === 'eth_blockNumber') return ok(call, numberToHex(lagged));
    const tagAt = BLOCK_TAG_AT.get(call.method);
    if (tagAt !== undefined) {
      const params = [...(call.params ?? [])];
      const tag = params[tagAt];
      if (tag === undefined || HEAD_TAGS.has(tag)) params[tagAt] = numberToHex(lagged);
      else if (typeof tag === 'string' && isHex(tag) && BigInt(tag) > lagged) {
        // What a node answers for a block it has not imported yet (geth's wording).
        return call.method === 'eth_getBlockByNumber' ? ok(call, null) : fail(call, -32000, 'header not found');
      }
      return forward({ ...call, params });
    }
    const field = BLOCK_FIELD.get(call.method);
    if (field === undefined) return forward(call);
    const answer = await forward(call);
    const at = (answer.result as Record<string, unknown> | null | undefined)?.[field];
    return typeof at === 'string' && BigInt(at) > lagged ? { ...answer, result: null } : answer;
  }

  async function answer(call: JsonRpcCall, rule: FaultRule | undefined): Promise<JsonRpcAnswer> {
    if (unserved(call)) return fail(call, -32601, `the method ${call.method} does not exist/is not available`);
    switch (rule?.fault) {
      case 'limit-32005':
        return fail(call, -32005, 'limit exceeded');
      case 'lag':
        return answerLagging(call, rule.lagBlocks ?? 1);
      case 'drop': {
        const hash = txHashOf(call)!;
        dropped.push(hash);
        // The Sync method's success is a receipt, which a never-broadcast transaction cannot have: it
        // answers as a node whose wait ran out does (EIP-7966: code 4, the hash as data), without waiting.
        if (call.method === 'eth_sendRawTransactionSync') {
          return fail(call, 4, "The transaction was added to the mempool but wasn't processed in 2s.", hash);
        }
        return ok(call, hash);
      }
      default:
        return forward(call);
    }
  }

  /** The reply to a request's calls: the upstream's own when nothing is changed, else one answer per call. */
  async function replyTo(raw: string, batch: boolean, items: JsonRpcCall[], rulesHit: (FaultRule | undefined)[]): Promise<Reply> {
    if (rulesHit.every((r) => r === undefined) && !items.some(unserved)) return post(raw);
    const answers = await Promise.all(items.map((call, i) => answer(call, rulesHit[i])));
    return new Reply(200, 'application/json', JSON.stringify(batch ? answers : answers[0]));
  }

  function send(res: ServerResponse, r: Reply, headers: Record<string, string> = {}): void {
    if (res.destroyed) return;
    res.writeHead(r.status, { 'content-type': r.contentType, ...headers }).end(r.body);
  }

  async function handle(raw: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const batch = Array.isArray(body);
    const items: unknown[] = Array.isArray(body) ? body : [body];
    // Not JSON-RPC calls we can schedule (bad JSON, an empty batch): the upstream answers it as it does.
    if (items.length === 0 || !items.every(isCall)) return send(res, await post(raw));

    const drawn = items.map(draw);
    const transport = drawn.find((r) => r !== undefined && TRANSPORT_FAULTS.has(r.fault));
    items.forEach((call, i) => {
      const hash = txHashOf(call);
      calls.push({ method: call.method, fault: (transport ?? drawn[i])?.fault ?? 'none', ...(hash && { hash }) });
    });

    switch (transport?.fault) {
      case 'rate-limit-429': {
        const errors = items.map((call) => fail(call, 429, 'Too Many Requests'));
        const retryAfter = String(Math.round(transport.retryAfterSeconds ?? 1));
        return send(res, new Reply(429, 'application/json', JSON.stringify(batch ? errors : errors[0])), {
          'retry-after': retryAfter,
        });
      }
      case 'server-5xx':
        return send(
          res,
          random() < 0.5 ? new Reply(502, 'text/plain', 'Bad Gateway') : new Reply(503, 'text/plain', 'Service Unavailable'),
        );
      case 'hang':
        return; // the socket stays open until the client gives up or stop() closes every connection
      case 'reset':
        req.socket.resetAndDestroy();
        return;
      case 'lose-answer': {
        // The calls go through as if nothing were wrong (the drawn call-level faults are void too); only
        // their answer is lost.
        const noFaults = items.map(() => undefined);
        await replyTo(raw, batch, items, noFaults).catch(() => undefined);
        req.socket.resetAndDestroy();
        return;
      }
    }
    send(res, await replyTo(raw, batch, items, drawn));
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handle(Buffer.concat(chunks).toString('utf8'), req, res).catch((err: unknown) =>
        send(res, err instanceof Reply ? err : new Reply(502, 'text/plain', `upstream unreachable: ${(err as Error).message}`)),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  let stopped: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    setRules,
    calls,
    dropped,
    stop: () =>
      (stopped ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Hung requests and idle keep-alive connections would otherwise hold close() open.
        server.closeAllConnections();
      })),
  };
}
