import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  getAbiItem,
  keccak256,
  numberToHex,
  parseTransaction,
  recoverTransactionAddress,
  toFunctionSelector,
  toHex,
  type Address,
  type Hex,
} from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * An in-memory model of an EVM chain (one node and its mempool) that speaks JSON-RPC over HTTP, for
 * the relayer's deterministic simulation (test/unit/relayer-simulation.test.ts). Nothing in it moves
 * by itself: blocks are mined, fees moved and faults injected only when the simulation's schedule says
 * (or, with `mineEvery`, after every N-th JSON-RPC call), so one schedule and one sequence of calls
 * give one history.
 *
 * The model: accounts with nonces (counted from the canonical blocks) and no balance checks (gas is
 * always affordable); a mempool keyed by (sender, nonce) with EIP-1559 replacement (both fees +10%),
 * "nonce too low", "already known", and optionally geth's refusal below the base fee; blocks that take
 * each sender's pool transactions in nonce order while maxFeePerGas ≥ the block's base fee; a base
 * fee moved by the schedule; receipts; reorgs that drop the last k blocks and return their
 * transactions to the pool. Transactions are decoded from their raw bytes (`parseTransaction`,
 * `recoverTransactionAddress`).
 *
 * Effects: a transaction whose data starts with EFFECT_MARKER "moves money". Every one mined in the
 * canonical chain counts as one execution of its effect, keyed by (to, data); `executions()` lists them.
 *
 * Faults (each armed by the schedule, consumed call by call): HTTP 429 / 503 answers (with
 * Retry-After: 0, so viem's retries are immediate), lost answers of sends (the send took effect, the
 * answer is a 502), reads answered by a replica N blocks behind (`lag`), transactions dropped from the
 * pool, a foreign transaction signed with the relayer's own key (outbidding ours at its nonce, or
 * taking the next one), reorgs. An endpoint can be `kill`ed: its calls are refused from then on (a
 * dead worker's connections), so a restarted relayer gets its own endpoint.
 */

/** Data prefix of a transaction that moves money (the model's token transfer). */
/**
 * Calldata prefix of a call that "moves money": the selector of a call type the relayer signs
 * (src/chains/evm/gas-ceilings.ts refuses unlisted ones), a refund's `transferWithAuthorization`.
 */
export const EFFECT_MARKER = toFunctionSelector(getAbiItem({ abi: tokenAbi, name: 'transferWithAuthorization' }));

const ZERO_HASH = `0x${'00'.repeat(32)}` as Hex;
const EMPTY_BLOOM = `0x${'00'.repeat(256)}` as Hex;
const GWEI = 1_000_000_000n;

export interface ModelTx {
  hash: Hex;
  raw: Hex;
  from: Address; // lower case
  nonce: number;
  to: Address | null; // lower case
  data: Hex;
  value: bigint;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  r: Hex;
  s: Hex;
  yParity: number;
}

interface Block {
  number: number;
  hash: Hex;
  parentHash: Hex;
  baseFeePerGas: bigint;
  txs: ModelTx[];
}

export interface ModelChainOptions {
  chainId: number;
  /** The base fee of the genesis block and of the next block until the schedule moves it. */
  baseFeePerGas?: bigint;
  /** Refuse a transaction whose maxFeePerGas is below the next block's base fee (as some nodes do). */
  rejectBelowBaseFee?: boolean;
  /** Answer eth_sendRawTransactionSync by mining a block at once (else -32601, as most providers). */
  syncSends?: boolean;
}

export interface Faults {
  /** The next N HTTP requests are answered with HTTP 429 / 503 (Retry-After: 0). */
  httpErrors: number;
  httpStatus: 429 | 503;
  /** The next N requests that carry a send take effect and are answered 502 (the answer is lost). */
  lostSends: number;
  /** The next N read calls are answered by a replica `lagBlocks` behind the head. */
  laggedReads: number;
  lagBlocks: number;
}

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export class ModelChain {
  readonly chainId: number;
  private readonly blocks: Block[] = [];
  private readonly pool = new Map<string, ModelTx>();
  /** Transactions returned to the pool by a reorg (after their receipt may have been seen). */
  private readonly reorged = new Set<Hex>();
  /** Every transaction ever accepted or mined, by hash. */
  private readonly seen = new Map<Hex, ModelTx>();
  nextBaseFee: bigint;
  private readonly rejectBelowBaseFee: boolean;
  private readonly syncSends: boolean;
  private salt = 0;
  faults: Faults = { httpErrors: 0, httpStatus: 429, lostSends: 0, laggedReads: 0, lagBlocks: 0 };
  /** What eth_estimateGas answers, for every call. */
  gasEstimate = 50_000n;
  /** Mine a block after every N-th JSON-RPC call (0: only when told). */
  mineEvery = 0;
  private calls = 0;
  /** Counts by method, and of faults applied (for the simulation's report). */
  readonly stats: Record<string, number> = {};
  /** What happened, in order (the simulation prints it when an invariant fails). */
  readonly log: string[] = [];
  /** Calls the model itself failed on (a bug of the model, never an answer a node would give). */
  readonly modelErrors: string[] = [];

  constructor(opts: ModelChainOptions) {
    this.chainId = opts.chainId;
    this.nextBaseFee = opts.baseFeePerGas ?? GWEI;
    this.rejectBelowBaseFee = opts.rejectBelowBaseFee ?? false;
    this.syncSends = opts.syncSends ?? false;
    this.blocks.push({ number: 0, hash: this.blockHash(0), parentHash: ZERO_HASH, baseFeePerGas: this.nextBaseFee, txs: [] });
  }

  get head(): number {
    return this.blocks.length - 1;
  }

  private blockHash(n: number): Hex {
    return keccak256(toHex(`block:${n}:${this.salt++}`));
  }

  private count(name: string): void {
    this.stats[name] = (this.stats[name] ?? 0) + 1;
  }

  // ---- state -------------------------------------------------------------------------------------

  /** Transactions of `from` in blocks 0..at (its next nonce as of block `at`). */
  nonceAt(from: string, at = this.head): number {
    const me = from.toLowerCase();
    let n = 0;
    for (let i = 0; i <= at && i < this.blocks.length; i++) for (const tx of this.blocks[i].txs) if (tx.from === me) n++;
    return n;
  }

  /** The next nonce counting the pool's transactions that follow the mined ones without a gap. */
  pendingNonce(from: string, at = this.head): number {
    const me = from.toLowerCase();
    let n = this.nonceAt(me, at);
    while (this.pool.has(`${me}:${n}`)) n++;
    return n;
  }

  /** Where a mined transaction is: its block and index. */
  private locate(hash: Hex): { block: Block; index: number } | undefined {
    const h = hash.toLowerCase();
    for (const block of this.blocks) {
      const index = block.txs.findIndex((t) => t.hash === h);
      if (index >= 0) return { block, index };
    }
    return undefined;
  }

  /** Every successful execution of an effect in the canonical chain, by effect key (`to|data`). */
  executions(): Map<string, Hex[]> {
    const out = new Map<string, Hex[]>();
    for (const block of this.blocks)
      for (const tx of block.txs) {
        if (!tx.data.startsWith(EFFECT_MARKER)) continue;
        const key = effectKey(tx.to ?? '0x', tx.data);
        out.set(key, [...(out.get(key) ?? []), tx.hash]);
      }
    return out;
  }

  /** The pool's transactions of `from`, in nonce order. */
  pooled(from: string): ModelTx[] {
    const me = from.toLowerCase();
    return [...this.pool.values()].filter((t) => t.from === me).sort((a, b) => a.nonce - b.nonce);
  }

  // ---- the schedule's levers -----------------------------------------------------------------------

  /** Mines one block at the next base fee: each sender's pool transactions in nonce order, while affordable. */
  mine(): Block {
    const number = this.blocks.length;
    const baseFeePerGas = this.nextBaseFee;
    const txs: ModelTx[] = [];
    const senders = [...new Set([...this.pool.values()].map((t) => t.from))].sort();
    for (const from of senders) {
      for (let nonce = this.nonceAt(from); ; nonce++) {
        const tx = this.pool.get(`${from}:${nonce}`);
        if (!tx || tx.maxFeePerGas < baseFeePerGas) break;
        txs.push(tx);
        this.pool.delete(`${from}:${nonce}`);
      }
    }
    const block = { number, hash: this.blockHash(number), parentHash: this.blocks[number - 1].hash, baseFeePerGas, txs };
    this.blocks.push(block);
    // Transactions whose nonce is now used can never be mined: the pool forgets them.
    for (const [key, tx] of this.pool) if (tx.nonce < this.nonceAt(tx.from)) this.pool.delete(key);
    this.log.push(`mine #${number} base=${baseFeePerGas} [${txs.map((t) => `${t.hash.slice(0, 10)}@${t.nonce}`).join(' ')}]`);
    this.count('blocks');
    return block;
  }

  /** Drops the last `k` blocks (never the genesis); their transactions go back to the pool where their slot is free. */
  reorg(k: number): void {
    const n = Math.min(k, this.head);
    const dropped = this.blocks.splice(this.blocks.length - n, n);
    for (const block of dropped)
      for (const tx of block.txs) {
        const key = `${tx.from}:${tx.nonce}`;
        if (!this.pool.has(key)) this.pool.set(key, tx);
        this.reorged.add(tx.hash);
      }
    this.log.push(`reorg ${n} -> head #${this.head}`);
    this.count('reorgs');
  }

  /** Drops one pool transaction of `from` (the `index`-th in nonce order, wrapping); returns its hash. */
  drop(from: string, index: number): Hex | undefined {
    const ours = this.pooled(from);
    if (ours.length === 0) return undefined;
    const tx = ours[index % ours.length];
    this.pool.delete(`${tx.from}:${tx.nonce}`);
    this.log.push(`drop ${tx.hash.slice(0, 10)}@${tx.nonce}`);
    this.count('drops');
    return tx.hash;
  }

  /**
   * A transaction of `account` that is none of the relayer's (another process with its key): at the
   * lowest nonce it has in the pool, outbidding it ('outbid': never one a reorg returned to the pool,
   * whose receipt the relayer may have seen; 'outbid-reorged' allows those), or at the next unused
   * nonce ('next').
   */
  async foreign(account: PrivateKeyAccount, how: 'outbid' | 'outbid-reorged' | 'next'): Promise<Hex> {
    const ours = this.pooled(account.address).filter((t) => how === 'outbid-reorged' || !this.reorged.has(t.hash));
    const at = how !== 'next' && ours.length > 0 ? ours[0] : undefined;
    const nonce = at ? at.nonce : this.pendingNonce(account.address);
    const floor = this.nextBaseFee * 2n + GWEI;
    const raw = await account.signTransaction({
      chainId: this.chainId,
      type: 'eip1559',
      to: '0x000000000000000000000000000000000000f0e1',
      value: 1n,
      nonce,
      gas: 21_000n,
      maxFeePerGas: at ? max(at.maxFeePerGas * 2n, floor) : floor,
      maxPriorityFeePerGas: at ? max(at.maxPriorityFeePerGas * 2n, GWEI) : GWEI,
    });
    const tx = await this.decode(raw);
    this.pool.set(`${tx.from}:${tx.nonce}`, tx);
    this.seen.set(tx.hash, tx);
    this.log.push(`foreign ${how} ${tx.hash.slice(0, 10)}@${nonce}`);
    this.count('foreign');
    return tx.hash;
  }

  /** Ends every fault (the end of a run heals before its invariants are checked). */
  heal(baseFeePerGas: bigint): void {
    this.faults = { httpErrors: 0, httpStatus: 429, lostSends: 0, laggedReads: 0, lagBlocks: 0 };
    this.nextBaseFee = baseFeePerGas;
  }

  // ---- transactions --------------------------------------------------------------------------------

  /** Decoded transactions by their bytes: re-sends are frequent, and recovering the signer is the model's costliest step. */
  private readonly decoded = new Map<string, ModelTx>();

  private async decode(raw: Hex): Promise<ModelTx> {
    const known = this.decoded.get(raw.toLowerCase());
    if (known) return known;
    const tx = parseTransaction(raw);
    if (tx.type !== 'eip1559') throw new RpcError(-32000, 'transaction type not supported');
    if (tx.chainId !== this.chainId) throw new RpcError(-32000, 'invalid chain id for signer');
    const from = (await recoverTransactionAddress({ serializedTransaction: raw as never })).toLowerCase() as Address;
    const decoded: ModelTx = {
      hash: keccak256(raw),
      raw,
      from,
      nonce: tx.nonce ?? 0,
      to: (tx.to?.toLowerCase() as Address | undefined) ?? null,
      data: ((tx.data ?? '0x') as string).toLowerCase() as Hex,
      value: tx.value ?? 0n,
      gas: tx.gas ?? 0n,
      maxFeePerGas: tx.maxFeePerGas ?? 0n,
      maxPriorityFeePerGas: tx.maxPriorityFeePerGas ?? 0n,
      r: tx.r!,
      s: tx.s!,
      yParity: tx.yParity ?? 0,
    };
    this.decoded.set(raw.toLowerCase(), decoded);
    return decoded;
  }

  /** The pool's admission rules; returns the hash or throws the node's refusal. */
  private async admit(raw: Hex): Promise<ModelTx> {
    const tx = await this.decode(raw);
    try {
      return this.take(tx);
    } catch (err) {
      this.log.push(`refuse ${tx.hash.slice(0, 10)}@${tx.nonce}: ${(err as Error).message}`);
      throw err;
    }
  }

  private take(tx: ModelTx): ModelTx {
    if (tx.gas < 21_000n) throw new RpcError(-32000, 'intrinsic gas too low');
    const key = `${tx.from}:${tx.nonce}`;
    const held = this.pool.get(key);
    if (held?.hash === tx.hash) throw new RpcError(-32000, 'already known');
    if (tx.nonce < this.nonceAt(tx.from)) throw new RpcError(-32000, 'nonce too low');
    if (this.rejectBelowBaseFee && tx.maxFeePerGas < this.nextBaseFee)
      throw new RpcError(-32000, 'max fee per gas less than block base fee');
    if (held && (tx.maxFeePerGas * 10n < held.maxFeePerGas * 11n || tx.maxPriorityFeePerGas * 10n < held.maxPriorityFeePerGas * 11n))
      throw new RpcError(-32000, 'replacement transaction underpriced');
    this.pool.set(key, tx);
    this.seen.set(tx.hash, tx);
    this.log.push(`${held ? 'replace' : 'pool'} ${tx.hash.slice(0, 10)}@${tx.nonce}${held ? ` (was ${held.hash.slice(0, 10)})` : ''}`);
    return tx;
  }

  // ---- JSON-RPC ------------------------------------------------------------------------------------

  /** The head as this call sees it: a lagging replica's, while the fault lasts. */
  private viewHead(method: string): number {
    if (this.faults.laggedReads > 0 && READS.has(method)) {
      this.faults.laggedReads--;
      this.count('lagged');
      return Math.max(0, this.head - this.faults.lagBlocks);
    }
    return this.head;
  }

  private blockAt(tag: unknown, view: number): number | null {
    if (tag === 'latest' || tag === 'pending' || tag === 'safe' || tag === 'finalized' || tag === undefined) return view;
    if (tag === 'earliest') return 0;
    const n = Number(BigInt(tag as string));
    if (n > view) return null;
    return n;
  }

  private txJson(tx: ModelTx, at?: { block: Block; index: number }) {
    return {
      type: '0x2',
      chainId: numberToHex(this.chainId),
      hash: tx.hash,
      from: tx.from,
      to: tx.to,
      nonce: numberToHex(tx.nonce),
      input: tx.data,
      value: numberToHex(tx.value),
      gas: numberToHex(tx.gas),
      maxFeePerGas: numberToHex(tx.maxFeePerGas),
      maxPriorityFeePerGas: numberToHex(tx.maxPriorityFeePerGas),
      gasPrice: numberToHex(at ? effectivePrice(tx, at.block.baseFeePerGas) : tx.maxFeePerGas),
      accessList: [],
      r: tx.r,
      s: tx.s,
      yParity: numberToHex(tx.yParity),
      v: numberToHex(tx.yParity),
      blockHash: at ? at.block.hash : null,
      blockNumber: at ? numberToHex(at.block.number) : null,
      transactionIndex: at ? numberToHex(at.index) : null,
    };
  }

  private blockJson(block: Block, full: boolean) {
    return {
      number: numberToHex(block.number),
      hash: block.hash,
      parentHash: block.parentHash,
      timestamp: numberToHex(1_700_000_000 + block.number * 2),
      baseFeePerGas: numberToHex(block.baseFeePerGas),
      gasLimit: numberToHex(30_000_000),
      gasUsed: numberToHex(block.txs.length * 50_000),
      miner: '0x0000000000000000000000000000000000000000',
      difficulty: '0x0',
      totalDifficulty: '0x0',
      extraData: '0x',
      logsBloom: EMPTY_BLOOM,
      nonce: '0x0000000000000000',
      mixHash: ZERO_HASH,
      receiptsRoot: ZERO_HASH,
      stateRoot: ZERO_HASH,
      transactionsRoot: ZERO_HASH,
      sha3Uncles: ZERO_HASH,
      size: '0x100',
      uncles: [],
      transactions: block.txs.map((tx, index) => (full ? this.txJson(tx, { block, index }) : tx.hash)),
    };
  }

  private receiptJson(tx: ModelTx, at: { block: Block; index: number }) {
    return {
      transactionHash: tx.hash,
      transactionIndex: numberToHex(at.index),
      blockHash: at.block.hash,
      blockNumber: numberToHex(at.block.number),
      from: tx.from,
      to: tx.to,
      cumulativeGasUsed: numberToHex((at.index + 1) * 50_000),
      gasUsed: numberToHex(50_000),
      effectiveGasPrice: numberToHex(effectivePrice(tx, at.block.baseFeePerGas)),
      contractAddress: null,
      logs: [],
      logsBloom: EMPTY_BLOOM,
      status: '0x1',
      type: '0x2',
    };
  }

  /** One JSON-RPC call; throws RpcError for a JSON-RPC error answer. */
  async call(method: string, params: unknown[]): Promise<unknown> {
    this.count(method);
    if (this.mineEvery > 0 && ++this.calls % this.mineEvery === 0) this.mine();
    const view = this.viewHead(method);
    switch (method) {
      case 'eth_chainId':
        return numberToHex(this.chainId);
      case 'eth_blockNumber':
        return numberToHex(view);
      case 'eth_gasPrice':
        return numberToHex(this.blocks[view].baseFeePerGas + PRIORITY_FEE);
      case 'eth_maxPriorityFeePerGas':
        return numberToHex(PRIORITY_FEE);
      case 'eth_estimateGas':
        return numberToHex(this.gasEstimate);
      case 'eth_getTransactionCount': {
        const [address, tag] = params as [string, string];
        if (tag === 'pending') return numberToHex(this.pendingNonce(address, view));
        const at = this.blockAt(tag, view);
        if (at === null) throw new RpcError(-32000, 'header not found');
        return numberToHex(this.nonceAt(address, at));
      }
      case 'eth_getBlockByNumber': {
        const [tag, full] = params as [string, boolean];
        const at = this.blockAt(tag, view);
        return at === null ? null : this.blockJson(this.blocks[at], full);
      }
      case 'eth_getTransactionReceipt': {
        const found = this.locate(params[0] as Hex);
        return found && found.block.number <= view ? this.receiptJson(this.seen.get(found.block.txs[found.index].hash)!, found) : null;
      }
      case 'eth_getTransactionByHash': {
        const hash = (params[0] as string).toLowerCase() as Hex;
        const found = this.locate(hash);
        if (found && found.block.number <= view) return this.txJson(found.block.txs[found.index], found);
        const pooled = [...this.pool.values()].find((t) => t.hash === hash);
        return pooled ? this.txJson(pooled) : found ? this.txJson(found.block.txs[found.index]) : null;
      }
      case 'eth_sendRawTransaction':
        return (await this.admit(params[0] as Hex)).hash;
      case 'eth_sendRawTransactionSync': {
        if (!this.syncSends) throw new RpcError(-32601, 'the method eth_sendRawTransactionSync does not exist/is not available');
        const tx = await this.admit(params[0] as Hex);
        this.mine();
        const found = this.locate(tx.hash);
        if (!found) throw new RpcError(4, 'The transaction was added to the mempool but wasn’t processed within the timeout');
        return this.receiptJson(tx, found);
      }
      default:
        throw new RpcError(-32601, `the method ${method} does not exist/is not available`);
    }
  }

  /** One HTTP request's body (a call or a batch): the status, headers and body of the answer. */
  async request(body: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    const parsed = JSON.parse(body) as JsonRpcCall | JsonRpcCall[];
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    if (this.faults.httpErrors > 0) {
      this.faults.httpErrors--;
      this.count(`http-${this.faults.httpStatus}`);
      this.log.push(`http ${this.faults.httpStatus} to ${calls.map((c) => c.method).join(',')}`);
      const status = this.faults.httpStatus;
      return {
        status,
        headers: { 'retry-after': '0', 'content-type': 'text/plain' },
        body: status === 429 ? 'Too Many Requests' : 'Service Unavailable',
      };
    }
    const answers = [];
    for (const c of calls) {
      try {
        answers.push({ jsonrpc: '2.0', id: c.id, result: await this.call(c.method, c.params ?? []) });
      } catch (err) {
        if (!(err instanceof RpcError)) this.modelErrors.push(`${c.method}: ${String(err)}`);
        // A model failure answers -32602 (invalid params), which no client retries.
        const code = err instanceof RpcError ? err.code : -32602;
        answers.push({ jsonrpc: '2.0', id: c.id, error: { code, message: err instanceof Error ? err.message : String(err) } });
      }
    }
    if (this.faults.lostSends > 0 && calls.some((c) => c.method.startsWith('eth_sendRawTransaction'))) {
      this.faults.lostSends--;
      this.count('lost-answers');
      this.log.push(`answer lost: ${calls.map((c) => c.method).join(',')}`);
      return { status: 502, headers: { 'retry-after': '0', 'content-type': 'text/plain' }, body: 'Bad Gateway' };
    }
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(Array.isArray(parsed) ? answers : answers[0], (_k, v: unknown) => (typeof v === 'bigint' ? numberToHex(v) : v)),
    };
  }
}

interface JsonRpcCall {
  jsonrpc?: string;
  id?: unknown;
  method: string;
  params?: unknown[];
}

/** Calls a lagging replica answers (sends go to the head's pool). */
const READS = new Set([
  'eth_blockNumber',
  'eth_getTransactionCount',
  'eth_getBlockByNumber',
  'eth_getTransactionReceipt',
  'eth_getTransactionByHash',
  'eth_gasPrice',
]);

const PRIORITY_FEE = 1_000_000n;

const max = (a: bigint, b: bigint) => (a > b ? a : b);

const effectivePrice = (tx: ModelTx, baseFee: bigint) => {
  const tip = tx.maxFeePerGas - baseFee;
  return baseFee + (tip < tx.maxPriorityFeePerGas ? tip : tx.maxPriorityFeePerGas);
};

/** The key of an effect: what it calls, with what. */
export const effectKey = (to: string, data: string): string => `${to.toLowerCase()}|${data.toLowerCase()}`;

/**
 * One HTTP server for many model chains, each at its own path (`endpoint`). A killed endpoint refuses
 * every call with a JSON-RPC error no client retries (a dead worker's connections), so a relayer
 * object left over from before a simulated restart can no longer reach the chain.
 */
export class ModelServer {
  private readonly routes = new Map<string, { chain: ModelChain; alive: boolean }>();
  private constructor(
    private readonly server: Server,
    readonly origin: string,
  ) {}

  static async start(): Promise<ModelServer> {
    const box: { self?: ModelServer } = {};
    const server = createServer((req, res) =>
      box.self!.serve(req, res).catch((err: unknown) => {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(`model server: ${String(err)}`);
      }),
    );
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    box.self = new ModelServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return box.self;
  }

  /** A new URL serving `chain`. */
  endpoint(path: string, chain: ModelChain): string {
    this.routes.set(`/${path}`, { chain, alive: true });
    return `${this.origin}/${path}`;
  }

  kill(url: string): void {
    const route = this.routes.get(new URL(url).pathname);
    if (route) route.alive = false;
  }

  forget(url: string): void {
    this.routes.delete(new URL(url).pathname);
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const route = this.routes.get(req.url ?? '');
    let answer: { status: number; headers: Record<string, string>; body: string };
    if (!route || !route.alive) {
      const parsed = JSON.parse(body) as { id?: unknown } | { id?: unknown }[];
      const refuse = (c: { id?: unknown }) => ({
        jsonrpc: '2.0',
        id: c.id ?? null,
        error: { code: -32099, message: 'this worker is gone' },
      });
      answer = {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(Array.isArray(parsed) ? parsed.map(refuse) : refuse(parsed)),
      };
    } else {
      answer = await route.chain.request(body).catch((err: unknown) => ({
        status: 500,
        headers: { 'content-type': 'text/plain', 'retry-after': '0' },
        body: `model error: ${String(err)}`,
      }));
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
