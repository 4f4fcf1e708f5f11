import {
  BaseError,
  MethodNotFoundRpcError,
  MethodNotSupportedRpcError,
  TimeoutError,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import type { RelayerTransaction } from '../../db/entities';
import type { EvmNetwork } from '../networks';
import { oneShotClientFor, publicClientFor } from './clients';
import { oneAtATime } from './one-at-a-time';
import { UsedOnce } from './used-once';

/** Transactions mined within this (ms) of their first broadcast, on a moving average, mean the node mines at once: new ones are broadcast synchronously. */
const SYNC_SEND_UNDER_MS = 50;

/** How long a synchronous broadcast may hold up the later ones (ms) before the plain path takes over. */
export const SYNC_SEND_TIMEOUT_MS = 1_000;

/** The bytes of a recorded transaction and their hash. */
type Signed = Pick<RelayerTransaction, 'rawTx' | 'hash'>;

/** A first broadcast waiting for its turn, and the settling of its `queue` promise. */
type Outgoing = {
  id: string;
  tx: Signed;
  resolve: (receipt: TransactionReceipt | undefined) => void;
  reject: (err: unknown) => void;
};

/**
 * How one relayer's transactions reach the node: new transactions' first broadcasts, in nonce order
 * (`queue`), and re-sends of recorded bytes (`rebroadcast`). It learns the chain's pace from how soon
 * after their first broadcast transactions are mined (`minedNow`), and where the node mines at once it
 * sends synchronously. It never signs or records anything: the relayer records every transaction
 * before it is queued here.
 */
export class Broadcasts {
  /** The first broadcasts' turns, one at a time (`flushOutbox`); queued under the send lock, so in nonce order. */
  private readonly inNonceOrder = oneAtATime();
  /** The first broadcasts waiting for their turn, in nonce order (see `flushOutbox`). */
  private readonly outbox: Outgoing[] = [];
  /**
   * How long after their broadcast our transactions have recently been found mined (ms, moving
   * average; undefined until one was): whether the node mines at once (see `broadcast`). Unlike the
   * receipt waits, a wait that starts late (behind other waits) cannot make a chain with blocks look
   * quick, and the queue of broadcasts before it does not make a quick node look slow.
   */
  private minedAfterMs: number | undefined;
  /** When each new transaction's first broadcast started, taken when its receipt is found (`minedNow`). */
  private readonly startedAt = new UsedOnce<number>();
  /** False once the node answered that it has no `eth_sendRawTransactionSync`. */
  private syncSends = true;
  /** The same node(s), with the calls made together in one JSON-RPC batch (clients.ts; see `flushOutbox`). */
  private readonly batchClient: PublicClient;
  /** The first node, for the synchronous broadcast, which holds up the later ones: asked once, bounded by SYNC_SEND_TIMEOUT_MS. */
  private readonly syncClient: PublicClient;

  constructor(
    network: EvmNetwork,
    private readonly client: PublicClient,
  ) {
    this.batchClient = publicClientFor(network, { batch: true });
    this.syncClient = oneShotClientFor(network, SYNC_SEND_TIMEOUT_MS);
  }

  /**
   * A new transaction's first broadcast, after every one queued before it (call it in nonce order).
   * Resolves once it is out, with its receipt when a synchronous broadcast answered with one; rejects
   * when the node refuses it.
   */
  queue(id: string, tx: Signed): Promise<TransactionReceipt | undefined> {
    const out = new Promise<TransactionReceipt | undefined>((resolve, reject) => this.outbox.push({ id, tx, resolve, reject }));
    void this.inNonceOrder(() => this.flushOutbox()); // one turn per queued broadcast: none is left behind
    return out;
  }

  /** A receipt of `id` was just found: its time since the first broadcast (else since `since`) feeds the pace. */
  minedNow(id: string, since: number): void {
    const startedAt = this.startedAt.take(id, () => true)?.value ?? since;
    this.noteMinedAfter(Date.now() - startedAt);
  }

  /** Sends recorded bytes again: "already known" or "nonce too low" for these very bytes is taken as sent; any other refusal is thrown. */
  async rebroadcast(tx: Signed): Promise<void> {
    try {
      await this.client.sendRawTransaction({ serializedTransaction: tx.rawTx as Hex });
    } catch (err) {
      // "already known" / "nonce too low": the node has it or mined it. Anything else is real,
      // unless the node does know the transaction by hash.
      const known = await this.client.getTransaction({ hash: tx.hash as Hex }).then(
        () => true,
        () => false,
      );
      if (!known && !/nonce too low|already known|already imported|known transaction/i.test(String(err))) throw err;
    }
  }

  private noteMinedAfter(ms: number): void {
    if (!Number.isFinite(ms)) return; // an unreadable time says nothing of the pace
    const capped = Math.min(Math.max(ms, 0), SYNC_SEND_TIMEOUT_MS);
    this.minedAfterMs = this.minedAfterMs === undefined ? capped : (this.minedAfterMs * 4 + capped) / 5;
  }

  /**
   * One turn of the first broadcasts (`inNonceOrder`): where the node mines at once, the oldest one
   * alone (`broadcast`, synchronous); otherwise every one waiting, in one JSON-RPC batch in nonce
   * order. Under load each broadcast's round trip took ~10 ms and they queued one behind another
   * (the queue's median wait was ~130 ms at 1 s blocks and 64 clients); a batch takes about one. A
   * node may handle a batch's calls in any order: a nonce that arrives before the one below it waits
   * in the node's pool for it. A call of the batch not answered with its own hash (refused; or a
   * provider that refuses batches, caps their size or answers out of line) goes again alone, the
   * usual way, one after another in nonce order; that answer is its send's. Never rejects.
   */
  private async flushOutbox(): Promise<void> {
    const turn = this.sendsSync() ? this.outbox.splice(0, 1) : this.outbox.splice(0);
    const at = Date.now();
    for (const { id } of turn) this.startedAt.put(id, at);
    if (turn.length === 1) {
      const [{ id, tx, resolve, reject }] = turn;
      return this.broadcast(tx).then((receipt) => {
        if (receipt) this.startedAt.delete(id); // the synchronous broadcast timed this one itself
        resolve(receipt);
      }, reject);
    }
    const answers = await Promise.allSettled(
      turn.map(({ tx }) => this.batchClient.sendRawTransaction({ serializedTransaction: tx.rawTx as Hex })),
    );
    for (const [i, { tx, resolve, reject }] of turn.entries()) {
      const answer = answers[i];
      if (answer.status === 'fulfilled' && answer.value.toLowerCase() === tx.hash.toLowerCase()) resolve(undefined);
      else await this.rebroadcast(tx).then(() => resolve(undefined), reject);
    }
  }

  /** Whether new transactions go out synchronously: the node mines at once, and answers the method (see `broadcast`). */
  private sendsSync(): boolean {
    return this.syncSends && this.minedAfterMs !== undefined && this.minedAfterMs < SYNC_SEND_UNDER_MS;
  }

  /**
   * A new transaction's first broadcast, after the ones signed before it (`inNonceOrder`). Where our
   * transactions have recently been mined within SYNC_SEND_UNDER_MS of their first broadcast (the
   * node mines at once, as anvil's automine does), it asks `eth_sendRawTransactionSync` (EIP-7966),
   * whose answer is the receipt: the receipt polls after it are spared. The later broadcasts wait while the node
   * mines, so the call goes to one node, once, bounded by SYNC_SEND_TIMEOUT_MS on our side (anvil
   * refuses EIP-7966's own timeout parameter). Until the pace is known (a relayer's first transaction)
   * it sends plainly: on a chain with blocks a synchronous send would hold every broadcast queued
   * behind it for up to a block. Whatever the synchronous call did not settle goes the plain way
   * (`rebroadcast`: retried, "already known" taken as sent, a refusal thrown); after a timeout (ours,
   * or the node's EIP-7966 code 4) so do the sends after it until transactions are mined at once
   * again, and a node without the method is not asked again.
   */
  private async broadcast(tx: Signed): Promise<TransactionReceipt | undefined> {
    if (!this.sendsSync()) {
      // As a re-send: a retry or a repair may have sent these bytes while they waited their turn.
      await this.rebroadcast(tx);
      return undefined;
    }
    const started = Date.now();
    try {
      const receipt = await this.syncClient.sendRawTransactionSync({ serializedTransaction: tx.rawTx as Hex, throwOnReceiptRevert: false });
      this.noteMinedAfter(Date.now() - started);
      return receipt;
    } catch (err) {
      const found = (test: (e: unknown) => boolean) => err instanceof BaseError && err.walk(test) !== null;
      if (found((e) => e instanceof TimeoutError || (e as { code?: unknown }).code === 4)) this.noteMinedAfter(SYNC_SEND_TIMEOUT_MS);
      const unsupported = found(
        (e) =>
          e instanceof MethodNotFoundRpcError ||
          e instanceof MethodNotSupportedRpcError ||
          (e instanceof BaseError &&
            /method/i.test(e.details) &&
            /not found|not supported|unsupported|does not exist|not available/i.test(e.details)),
      );
      if (unsupported) this.syncSends = false;
      await this.rebroadcast(tx);
      return undefined;
    }
  }
}
