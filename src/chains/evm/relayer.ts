import { keccak256, type Address, type Hex, type PrivateKeyAccount, type PublicClient, type TransactionReceipt } from 'viem';
import { UniqueConstraintViolationException, type MikroORM } from '@mikro-orm/core';
import { RelayerTransaction } from '../../db/entities';
import type { EvmNetwork } from '../networks';
import { publicClientFor } from './clients';

/**
 * The relayer of one worker process on one network. It owns its key (no other process signs with
 * it), allocates nonces itself, and writes every signed transaction to the database *before*
 * broadcasting it. A retried activity finds that record and re-sends the same bytes (same hash,
 * same nonce), so a crash or retry can never produce a second transaction for one effect.
 */
export class Relayer {
  private nextNonce: number | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  readonly client: PublicClient;

  constructor(
    readonly network: EvmNetwork,
    readonly account: PrivateKeyAccount,
    private readonly db: MikroORM,
  ) {
    this.client = publicClientFor(network);
  }

  get address(): Address {
    return this.account.address;
  }

  /** The transaction recorded for this effect, if one was ever signed. */
  async find(id: string): Promise<RelayerTransaction | null> {
    return this.db.em.fork().findOne(RelayerTransaction, { id });
  }

  /**
   * Sends the call once per `id`: returns the recorded transaction when there is one (re-broadcast
   * in case it was never sent or was dropped), otherwise estimates, signs with the next nonce,
   * records, then broadcasts. Estimation reverts are thrown before anything is signed.
   */
  async send(id: string, call: { to: Address; data: Hex }): Promise<{ hash: Hex; reused: boolean }> {
    const existing = await this.find(id);
    if (existing) {
      await this.rebroadcast(existing);
      return { hash: existing.hash as Hex, reused: true };
    }
    const gas = await this.client.estimateGas({ account: this.account.address, to: call.to, data: call.data });
    const fees = await this.client.estimateFeesPerGas();
    // Nonce allocation, signing, recording and broadcasting run one at a time per relayer so that the
    // node sees this signer's transactions in nonce order (anvil can stall on gaps).
    return this.serialized(async () => {
      const again = await this.find(id); // a concurrent retry of the same activity may have won
      if (again) return { hash: again.hash as Hex, reused: true };
      for (let attempt = 0; ; attempt++) {
        const nonce = await this.allocateNonce();
        const rawTx = await this.account.signTransaction({
          chainId: this.network.chainId!,
          type: 'eip1559',
          to: call.to,
          data: call.data,
          nonce,
          gas: (gas * 12n) / 10n,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        });
        const hash = keccak256(rawTx);
        const now = new Date();
        try {
          // One auto-committed INSERT: either the record exists or nothing was sent.
          await this.db.em.fork().insert(RelayerTransaction, {
            id,
            chainId: this.network.chainId!,
            signer: this.address.toLowerCase(),
            nonce,
            rawTx,
            hash,
            status: 'signed',
            createdAt: now,
            updatedAt: now,
          });
        } catch (err) {
          // The nonce was not used: recompute it from the chain and the records next time, so a
          // failed write never leaves a gap that would stall every later transaction.
          this.nextNonce = undefined;
          if (err instanceof UniqueConstraintViolationException) {
            // Another worker recorded this very effect meanwhile: use its transaction.
            const winner = await this.find(id);
            if (winner) return { hash: winner.hash as Hex, reused: true };
            // Someone else holds this nonce (another process with the same key): take the next one.
            if (attempt < 5) continue;
          }
          throw err;
        }
        await this.client.sendRawTransaction({ serializedTransaction: rawTx });
        return { hash, reused: false };
      }
    });
  }

  /**
   * Waits (bounded) for the receipt with a back-off that starts at ~1 ms: anvil mines within
   * milliseconds and viem's default 1 s poll would dominate settlement latency. Returns null on
   * timeout after re-broadcasting, so the caller's retry finds a dropped transaction again.
   */
  async waitForReceipt(tx: RelayerTransaction, timeoutMs: number, onPoll?: () => void): Promise<TransactionReceipt | null> {
    const deadline = Date.now() + timeoutMs;
    let delay = 1;
    while (Date.now() < deadline) {
      const receipt = await this.client.getTransactionReceipt({ hash: tx.hash as Hex }).catch(() => null);
      if (receipt) {
        await this.markStatus(tx.id, receipt.status === 'success' ? 'mined' : 'reverted');
        return receipt;
      }
      onPoll?.();
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 250);
    }
    await this.rebroadcast(tx);
    return null;
  }

  /** Re-sends recorded transactions that never got a receipt, in nonce order (worker start-up). */
  async recoverPending(): Promise<number> {
    const pending = await this.db.em
      .fork()
      .find(
        RelayerTransaction,
        { chainId: this.network.chainId!, signer: this.address.toLowerCase(), status: 'signed' },
        { orderBy: { nonce: 'asc' } },
      );
    for (const tx of pending) await this.rebroadcast(tx);
    return pending.length;
  }

  private async rebroadcast(tx: RelayerTransaction): Promise<void> {
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

  private async markStatus(id: string, status: 'mined' | 'reverted'): Promise<void> {
    await this.db.em.fork().nativeUpdate(RelayerTransaction, { id }, { status });
  }

  private async allocateNonce(): Promise<number> {
    if (this.nextNonce === undefined) {
      const [chainNext, recorded] = await Promise.all([
        this.client.getTransactionCount({ address: this.address, blockTag: 'pending' }),
        this.db.em
          .fork()
          .findOne(
            RelayerTransaction,
            { chainId: this.network.chainId!, signer: this.address.toLowerCase() },
            { orderBy: { nonce: 'desc' } },
          ),
      ]);
      this.nextNonce = Math.max(chainNext, recorded ? recorded.nonce + 1 : 0);
    }
    return this.nextNonce++;
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
