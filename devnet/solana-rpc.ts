/**
 * The devnet Solana node: a JSON-RPC server backed by litesvm (an in-process Solana runtime with the
 * SPL programs). It implements the subset of the real Solana JSON-RPC that @solana/web3.js
 * `Connection` (and the x402 client) calls, so the service's production code (src/chains/solana/rpc.ts)
 * runs against it unchanged through a configured URL (`SOLANA_RPC_URL_SOLANA_DEVNET`).
 *
 * Like a real cluster it verifies signatures, accepts a blockhash for a window of blocks
 * (BLOCKHASH_WINDOW), ignores a signature it already processed, and records landed transactions
 * (also failed ones, which pay fees). Every processed transaction makes a new block.
 *
 * Devnet-only methods (`devnet_*`) let tests and `npm start` set up state and inject faults:
 *   devnet_fundToken [owner, amount]  create/top up owner's USDC ATA (and give the owner SOL)
 *   devnet_hold [true|false]          accept transactions but hold them unprocessed; false releases them
 *   devnet_expireBlockhashes []       advance past the blockhash window (held transactions then drop)
 *   devnet_dropHeld []                forget held transactions (as a node that lost them would)
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { LiteSVM, FailedTransactionMetadata, TransactionMetadata } from 'litesvm';
import { PublicKey, VersionedTransaction } from '@solana/web3.js';
import {
  ACCOUNT_SIZE,
  AccountLayout,
  getAssociatedTokenAddressSync,
  MINT_SIZE,
  MintLayout,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import { base58Decode, base58Encode } from '../src/chains/solana/base58';
import { isValidSignature } from '../src/chains/solana/verify-exact-svm';

/** Real clusters accept a blockhash for 150 blocks. */
export const BLOCKHASH_WINDOW = 150;
const SOL = 1_000_000_000n;

type TxErr = Record<string, unknown> | string | null;

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** litesvm state plus what a node adds: blockhash window, signature statuses, held transactions. */
export class SolanaDevnetLedger {
  readonly svm = new LiteSVM().withSigverify(false).withBlockhashCheck(false); // both checked here, as a node does
  private height = 0;
  private readonly blockhashHeights = new Map<string, number>();
  private readonly statuses = new Map<string, { slot: number; err: TxErr }>();
  private held: VersionedTransaction[] | undefined;

  constructor(readonly usdcMint: PublicKey) {
    this.blockhashHeights.set(this.svm.latestBlockhash(), 0);
    const data = Buffer.alloc(MINT_SIZE);
    MintLayout.encode(
      {
        mintAuthorityOption: 0,
        mintAuthority: PublicKey.default,
        supply: 0n,
        decimals: 6,
        isInitialized: true,
        freezeAuthorityOption: 0,
        freezeAuthority: PublicKey.default,
      },
      data,
    );
    this.svm.setAccount(usdcMint, { lamports: 1_461_600, data, owner: TOKEN_PROGRAM_ID, executable: false, rentEpoch: 0 });
  }

  get slot(): number {
    return this.height;
  }

  latestBlockhash() {
    return { blockhash: this.svm.latestBlockhash(), lastValidBlockHeight: this.height + BLOCKHASH_WINDOW };
  }

  isBlockhashValid(blockhash: string): boolean {
    const h = this.blockhashHeights.get(blockhash);
    return h !== undefined && this.height - h <= BLOCKHASH_WINDOW;
  }

  private newBlock(blocks = 1) {
    this.height += blocks;
    this.svm.expireBlockhash();
    this.svm.warpToSlot(BigInt(this.height));
    this.blockhashHeights.set(this.svm.latestBlockhash(), this.height);
  }

  expireBlockhashes() {
    this.newBlock(BLOCKHASH_WINDOW + 1);
  }

  airdrop(owner: PublicKey, lamports: bigint) {
    this.svm.setAccount(owner, { lamports: Number((this.svm.getBalance(owner) ?? 0n) + lamports), data: new Uint8Array(), owner: PublicKey.default, executable: false, rentEpoch: 0 });
  }

  /** Creates or tops up `owner`'s USDC associated token account (and the mint's supply). */
  fundToken(owner: PublicKey, amount: bigint): PublicKey {
    const ata = getAssociatedTokenAddressSync(this.usdcMint, owner, true);
    const existing = this.svm.getAccount(ata);
    const balance = existing ? AccountLayout.decode(Buffer.from(existing.data)).amount : 0n;
    const data = Buffer.alloc(ACCOUNT_SIZE);
    AccountLayout.encode(
      {
        mint: this.usdcMint,
        owner,
        amount: balance + amount,
        delegateOption: 0,
        delegate: PublicKey.default,
        state: 1,
        isNativeOption: 0,
        isNative: 0n,
        delegatedAmount: 0n,
        closeAuthorityOption: 0,
        closeAuthority: PublicKey.default,
      },
      data,
    );
    this.svm.setAccount(ata, { lamports: 2_039_280, data, owner: TOKEN_PROGRAM_ID, executable: false, rentEpoch: 0 });
    const mint = this.svm.getAccount(this.usdcMint)!;
    const m = MintLayout.decode(Buffer.from(mint.data));
    const mintData = Buffer.alloc(MINT_SIZE);
    MintLayout.encode({ ...m, supply: m.supply + amount }, mintData);
    this.svm.setAccount(this.usdcMint, { ...mint, data: mintData });
    return ata;
  }

  hold(on: boolean) {
    if (on) this.held ??= [];
    else {
      const queue = this.held ?? [];
      this.held = undefined;
      for (const tx of queue) {
        try {
          this.execute(tx);
        } catch {
          // Dropped (e.g. its blockhash expired while held): it never lands, as on a real cluster.
        }
      }
    }
  }

  dropHeld() {
    if (this.held) this.held = [];
  }

  /** sendTransaction: checks a node makes before accepting, then processes (or holds) it. */
  send(raw: Uint8Array): string {
    let tx: VersionedTransaction;
    try {
      tx = VersionedTransaction.deserialize(raw);
    } catch {
      throw new RpcError(-32602, 'failed to deserialize transaction');
    }
    const signature = base58Encode(tx.signatures[0]);
    if (this.statuses.has(signature) || this.held?.some((t) => base58Encode(t.signatures[0]) === signature)) return signature;
    const message = tx.message.serialize();
    const keys = tx.message.staticAccountKeys;
    for (let i = 0; i < tx.message.header.numRequiredSignatures; i++) {
      if (!isValidSignature(message, tx.signatures[i], keys[i])) throw new RpcError(-32003, 'Transaction signature verification failure');
    }
    if (!this.isBlockhashValid(tx.message.recentBlockhash)) throw new RpcError(-32002, 'Transaction simulation failed: Blockhash not found');
    if (this.held) {
      this.held.push(tx);
      return signature;
    }
    this.execute(tx);
    return signature;
  }

  private execute(tx: VersionedTransaction) {
    const signature = base58Encode(tx.signatures[0]);
    if (!this.isBlockhashValid(tx.message.recentBlockhash)) throw new RpcError(-32002, 'Blockhash not found');
    const result = this.svm.sendTransaction(tx);
    if (result instanceof TransactionMetadata) {
      this.statuses.set(signature, { slot: this.height, err: null });
      this.newBlock();
      return;
    }
    // A transaction that ran and failed still lands (its fee is paid); one refused up front does not.
    if (this.svm.getTransaction(tx.signatures[0])) {
      this.statuses.set(signature, { slot: this.height, err: errJson(result) });
      this.newBlock();
      return;
    }
    throw new RpcError(-32002, `Transaction simulation failed: ${result.toString().slice(0, 200)}`);
  }

  simulate(raw: Uint8Array) {
    const tx = VersionedTransaction.deserialize(raw);
    const result = this.svm.simulateTransaction(tx);
    if (result instanceof FailedTransactionMetadata) {
      return { err: errJson(result), logs: result.meta().logs(), unitsConsumed: Number(result.meta().computeUnitsConsumed()) };
    }
    const meta = result.meta();
    return { err: null, logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()) };
  }

  status(signature: string) {
    return this.statuses.get(signature) ?? null;
  }
}

function errJson(result: FailedTransactionMetadata): TxErr {
  const e = result.err() as unknown;
  return typeof e === 'number' ? { TransactionError: e } : { TransactionError: String((e as { toString(): string }).toString()) };
}

const ctx = (ledger: SolanaDevnetLedger) => ({ slot: ledger.slot });

function accountJson(ledger: SolanaDevnetLedger, address: string) {
  const a = ledger.svm.getAccount(new PublicKey(address));
  if (!a) return null;
  return {
    data: [Buffer.from(a.data).toString('base64'), 'base64'],
    executable: a.executable,
    lamports: Number(a.lamports),
    owner: a.owner.toBase58(),
    rentEpoch: 0,
    space: a.data.length,
  };
}

/** One JSON-RPC method call. */
function call(ledger: SolanaDevnetLedger, method: string, params: unknown[]): unknown {
  const p = params as any[];
  switch (method) {
    case 'getHealth':
      return 'ok';
    case 'getVersion':
      return { 'solana-core': '2.1.0-litesvm', 'feature-set': 0 };
    case 'getGenesisHash':
      return 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
    case 'getSlot':
    case 'getBlockHeight':
      return ledger.slot;
    case 'getLatestBlockhash':
      return { context: ctx(ledger), value: ledger.latestBlockhash() };
    case 'isBlockhashValid':
      return { context: ctx(ledger), value: ledger.isBlockhashValid(String(p[0])) };
    case 'getMinimumBalanceForRentExemption':
      return Number(ledger.svm.minimumBalanceForRentExemption(BigInt(p[0] ?? 0)));
    case 'getBalance':
      return { context: ctx(ledger), value: Number(ledger.svm.getBalance(new PublicKey(p[0])) ?? 0n) };
    case 'getAccountInfo':
      return { context: ctx(ledger), value: accountJson(ledger, p[0]) };
    case 'getMultipleAccounts':
      return { context: ctx(ledger), value: (p[0] as string[]).map((a) => accountJson(ledger, a)) };
    case 'getTokenAccountBalance': {
      const a = ledger.svm.getAccount(new PublicKey(p[0]));
      if (!a || a.data.length < ACCOUNT_SIZE) throw new RpcError(-32602, 'Invalid param: could not find account');
      const amount = AccountLayout.decode(Buffer.from(a.data).subarray(0, ACCOUNT_SIZE)).amount;
      return { context: ctx(ledger), value: { amount: amount.toString(), decimals: 6, uiAmount: Number(amount) / 1e6, uiAmountString: (Number(amount) / 1e6).toString() } };
    }
    case 'requestAirdrop': {
      ledger.airdrop(new PublicKey(p[0]), BigInt(p[1]));
      return base58Encode(new Uint8Array(64).map(() => Math.floor(Math.random() * 256)));
    }
    case 'sendTransaction':
      return ledger.send(decodeWire(p[0], p[1]?.encoding));
    case 'simulateTransaction':
      return { context: ctx(ledger), value: { ...ledger.simulate(decodeWire(p[0], p[1]?.encoding)), accounts: null, returnData: null } };
    case 'getSignatureStatuses':
      return {
        context: ctx(ledger),
        value: (p[0] as string[]).map((s) => {
          const st = ledger.status(s);
          return st && { slot: st.slot, confirmations: null, err: st.err, status: st.err ? { Err: st.err } : { Ok: null }, confirmationStatus: 'finalized' };
        }),
      };
    case 'devnet_fundToken': {
      const owner = new PublicKey(p[0]);
      if (!ledger.svm.getBalance(owner)) ledger.airdrop(owner, SOL);
      return ledger.fundToken(owner, BigInt(p[1])).toBase58();
    }
    case 'devnet_hold':
      ledger.hold(Boolean(p[0]));
      return true;
    case 'devnet_dropHeld':
      ledger.dropHeld();
      return true;
    case 'devnet_expireBlockhashes':
      ledger.expireBlockhashes();
      return true;
    default:
      throw new RpcError(-32601, `Method not found: ${method}`);
  }
}

const decodeWire = (data: string, encoding: string | undefined) =>
  encoding === 'base64' ? Buffer.from(data, 'base64') : Buffer.from(base58Decode(data));

export interface SolanaDevnet {
  url: string;
  port: number;
  ledger: SolanaDevnetLedger;
  stop(): Promise<void>;
}

/**
 * Starts the devnet node on host:port (0 = a free port): the USDC mint at `usdcMint` (6 decimals),
 * `feePayers` funded with SOL.
 */
export async function startSolanaDevnet(opts: { usdcMint: string; feePayers: PublicKey[]; port?: number; host?: string }): Promise<SolanaDevnet> {
  const ledger = new SolanaDevnetLedger(new PublicKey(opts.usdcMint));
  for (const f of opts.feePayers) ledger.airdrop(f, 1000n * SOL);
  const server = http.createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (body: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      let parsed: any;
      try {
        parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        answer({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
        return;
      }
      const one = (r: any) => {
        try {
          return { jsonrpc: '2.0', id: r.id ?? null, result: call(ledger, r.method, Array.isArray(r.params) ? r.params : []) };
        } catch (err) {
          const code = err instanceof RpcError ? err.code : -32603;
          return { jsonrpc: '2.0', id: r.id ?? null, error: { code, message: (err as Error).message } };
        }
      };
      answer(Array.isArray(parsed) ? parsed.map(one) : one(parsed));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}`,
    port,
    ledger,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
