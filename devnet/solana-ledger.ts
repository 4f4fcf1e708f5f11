/**
 * The state of the devnet Solana node (devnet/solana-rpc.ts serves it over JSON-RPC): litesvm (an
 * in-process Solana runtime with the SPL programs) plus what a real node adds. It verifies
 * signatures, accepts a blockhash for a window of blocks (BLOCKHASH_WINDOW), ignores a signature it
 * already processed, records landed transactions (also failed ones, which pay fees), and makes a
 * new block per processed transaction. It can hold transactions unprocessed (fault injection).
 */
import { LiteSVM, FailedTransactionMetadata, TransactionMetadata } from 'litesvm';
import { PublicKey, VersionedTransaction } from '@solana/web3.js';
import { ACCOUNT_SIZE, AccountLayout, getAssociatedTokenAddressSync, MINT_SIZE, MintLayout, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { base58Encode } from '../src/chains/solana/base58';
import { isValidSignature } from '../src/schemes/solana/verify';

/** Real clusters accept a blockhash for 150 blocks. */
export const BLOCKHASH_WINDOW = 150;
export const SOL = 1_000_000_000n;

export type TxErr = Record<string, unknown> | string | null;

/** A JSON-RPC error (code and message as a real node answers). */
export class RpcError extends Error {
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
    this.svm.setAccount(owner, {
      lamports: Number((this.svm.getBalance(owner) ?? 0n) + lamports),
      data: new Uint8Array(),
      owner: PublicKey.default,
      executable: false,
      rentEpoch: 0,
    });
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
    if (!this.isBlockhashValid(tx.message.recentBlockhash))
      throw new RpcError(-32002, 'Transaction simulation failed: Blockhash not found');
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
