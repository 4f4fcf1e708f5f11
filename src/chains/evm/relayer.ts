import {
  TransactionReceiptNotFoundError,
  keccak256,
  parseTransaction,
  type Address,
  type Hex,
  type PrivateKeyAccount,
  type PublicClient,
  type TransactionReceipt,
  type TransactionSerializableEIP1559,
} from 'viem';
import { UniqueConstraintViolationException, type EntityManager, type MikroORM } from '@mikro-orm/core';
import { RelayerTransaction } from '../../db/entities';
import { findRow, inTransaction, insertRow, updateRows } from '../../db/rows';
import type { EvmNetwork } from '../networks';
import { publicClientFor } from './clients';
import { checkGas, gasToSign } from './gas-ceilings';
import { oneAtATime } from './one-at-a-time';
import { Broadcasts } from './relayer-broadcasts';
import { UsedOnce } from './used-once';

/**
 * The relayer of one worker process on one network. It owns its key (no other process signs with
 * it), allocates nonces itself, and writes every signed transaction to the database *before*
 * broadcasting it. A retried activity finds that record and re-sends the same bytes (same hash,
 * same nonce), so a crash or retry can never produce a second transaction for one effect.
 *
 * Hygiene while waiting for a receipt (waitForReceipt), once a transaction has gone unmined for
 * `replaceAfterMs` since it was last signed:
 * - lower nonces of this signer that the chain has not used are re-sent (a dropped transaction
 *   leaves a gap that every later one waits behind) or, if nothing was ever recorded for one,
 *   filled with a zero-value transfer to ourselves;
 * - a transaction the node no longer knows is re-sent with the same bytes;
 * - one the node holds but does not mine is replaced: same nonce, both fees raised by 12.5%
 *   (EIP-1559 pools require at least 10%) or to the current estimate if higher, never above the
 *   network's fee ceiling (`maxFeePerGas`); at the ceiling it is only re-sent, and waits;
 * - if the chain has used our nonce, the transaction that used it is read from the block that used it
 *   (`nonceHolder`). Only when that block names a transaction that is none of ours is the same call
 *   signed again with a new nonce.
 * Unknown is never absent: an RPC error, a timeout or a lagging replica's "no receipt" proves nothing,
 * and a repair that meets one does nothing and waits. Every hash sent for an effect is recorded before
 * it is broadcast, and a receipt of any of them settles the effect (a successful one first).
 */
export class Relayer {
  private nextNonce: number | undefined;
  private feeCache: { at: number; fees: Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> } | undefined;
  /** The send lock: nonce allocation, signing and recording, one at a time (see `send`). */
  private readonly serialized = oneAtATime();
  /** First broadcasts in nonce order, and re-sends (relayer-broadcasts.ts). */
  private readonly broadcasts: Broadcasts;
  /** How long receipts have recently taken to appear (ms, moving average): where polling starts. */
  private receiptWaitMs = 0;
  /** The latest head poll, shared by every waiter of this relayer (see `headAfter`). */
  private headPoll: { at: number; head: Promise<bigint> } | undefined;
  /**
   * What this relayer itself learnt of a record moments ago (RECENT_MS, used-once.ts), each used once:
   * - the record it just signed answers the next `find` of that id (the receipt wait's lookup);
   * - an absence it just saw answers only `send`'s own check (a settlement's verification looked a
   *   moment before). A stale absence there is harmless: the record's unique id refuses a second
   *   insert and `send` returns the recorded transaction. No other caller is ever told "none" from here.
   * Each saves a database read on every settlement's path. Every write of ours drops the entry.
   */
  private readonly recent = new UsedOnce<RelayerTransaction | null>();
  /** Gas estimates made by `simulate`, each taken by the `send` of the same id and call. */
  private readonly estimates = new UsedOnce<{ to: Address; data: Hex; gas: Promise<bigint> }>();
  /** Receipts a synchronous broadcast answered with (relayer-broadcasts.ts), each taken by the wait for that id. */
  private readonly mined = new UsedOnce<TransactionReceipt>();
  readonly client: PublicClient;
  private readonly replaceAfterMs: number;

  constructor(
    readonly network: EvmNetwork,
    readonly account: PrivateKeyAccount,
    private readonly db: MikroORM,
    opts: { replaceAfterMs?: number } = {},
  ) {
    this.client = publicClientFor(network);
    this.broadcasts = new Broadcasts(network, this.client);
    this.replaceAfterMs = opts.replaceAfterMs ?? 20_000;
  }

  /**
   * The fee estimate for a new transaction, shared for FEE_CACHE_MS: two RPCs saved per transaction
   * under load. viem's estimate already allows the base fee to rise 20% (a block raises it at most
   * 12.5%), so one block's staleness never underprices; a replacement (repair) re-estimates afresh.
   */
  private fees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
    const now = Date.now();
    if (!this.feeCache || now - this.feeCache.at >= FEE_CACHE_MS) {
      const fees = this.client.estimateFeesPerGas();
      this.feeCache = { at: now, fees };
      fees.catch(() => {
        if (this.feeCache?.fees === fees) this.feeCache = undefined; // never cache a failure
      });
    }
    return this.feeCache.fees;
  }

  get address(): Address {
    return this.account.address;
  }

  /** The transaction recorded for this effect, if one was ever signed. */
  async find(id: string): Promise<RelayerTransaction | null> {
    const signed = this.recent.take(id, (tx) => tx !== null);
    if (signed) return signed.value;
    // On every settlement's path: a compiled statement and a plain row (src/db/rows.ts).
    const tx = await findRow(this.db.em.fork(), RelayerTransaction, { id });
    // Not over an entry set while the read ran (a send of ours may have committed meanwhile).
    if (!tx && !this.recent.has(id)) this.recent.put(id, null);
    return tx;
  }

  /**
   * Simulates the call `send(id, call)` is about to make (the gas estimate, which runs it against the
   * chain's latest state), for the caller to learn whether it would succeed now. `send` takes this
   * estimate when the call is the same, it is fresh (RECENT_MS, used-once.ts) and it succeeded,
   * else estimates again: one simulation per transaction. Reads only. Rejects as viem's estimate
   * does (a revert, or no answer).
   */
  simulate(id: string, call: { to: Address; data: Hex }): Promise<bigint> {
    const gas = this.estimateGas(call);
    gas.catch(() => undefined); // a revert is `send`'s to report, if it ever sends
    this.estimates.put(id, { ...call, gas });
    return gas;
  }

  /**
   * The fresh simulation of this very call, else a new estimate. A failed simulation is never reused:
   * it may have been a node's passing trouble.
   */
  private estimate(id: string, call: { to: Address; data: Hex }): Promise<bigint> {
    const prepared = this.estimates.take(id, (p) => p.to === call.to && p.data === call.data);
    return prepared ? prepared.value.gas.catch(() => this.estimateGas(call)) : this.estimateGas(call);
  }

  private estimateGas(call: { to: Address; data: Hex }): Promise<bigint> {
    return this.client.estimateGas({ account: this.account.address, to: call.to, data: call.data });
  }

  /**
   * Sends the call once per `id`: returns the recorded transaction when there is one (re-broadcast
   * in case it was never sent or was dropped), otherwise estimates, signs with the next nonce,
   * records, then broadcasts. Estimation reverts, and estimates above the call type's gas ceiling
   * (`GasCeilingExceeded`, gas-ceilings.ts), are thrown before anything is signed.
   */
  async send(
    id: string,
    call: { to: Address; data: Hex },
    opts: { record?: AlsoWrite<Hex> } = {},
  ): Promise<{ hash: Hex; reused: boolean }> {
    const existing = this.recent.take(id, (tx) => tx === null) ? null : await this.find(id);
    if (existing) {
      this.estimates.delete(id);
      // Another caller's effect under this id (a failed run's id reused with other input): never adopted.
      if (!Relayer.records(existing, call)) throw new RecordedCallMismatch(id);
      // Bytes the node refuses now (e.g. priced under today's base fee) are the wait's to repair with a
      // replacement: thrown here, the refusal would fail every retry of the caller's activity, and the
      // wait that repairs would never run (found by test/unit/relayer-simulation.test.ts).
      await this.broadcasts.rebroadcast(existing).catch(() => undefined);
      return { hash: existing.hash as Hex, reused: true };
    }
    const [gas, fees] = await Promise.all([this.estimate(id, call), this.fees().then((f) => this.capped(f))]);
    // Never more gas than the call type needs (gas-ceilings.ts): refused here, before anything is signed.
    const ceiling = checkGas(call.data, gas);
    // Nonce allocation, signing and recording run one at a time per relayer; the broadcasts follow in
    // the same order (`Broadcasts.queue`), so a gap, which the node holds until it fills, is rare and
    // short. A concurrent retry of the same activity that recorded first is found by the record's
    // unique id below.
    const signed = await this.serialized(async () => {
      for (let attempt = 0; ; attempt++) {
        const nonce = await this.allocateNonce();
        const rawTx = await this.account.signTransaction({
          chainId: this.network.chainId!,
          type: 'eip1559',
          to: call.to,
          data: call.data,
          nonce,
          gas: gasToSign(gas, ceiling),
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        });
        const hash = keccak256(rawTx);
        const now = new Date();
        const signer = this.address.toLowerCase();
        const row = { id, chainId: this.network.chainId!, signer, nonce, rawTx, hash, status: 'signed', createdAt: now, updatedAt: now };
        try {
          // One commit: either the record exists (with the caller's own record of the effect, e.g. the
          // settlement row) or nothing was sent.
          await this.commit((em) => insertRow(em, RelayerTransaction, row), opts.record, hash);
          this.recent.put(id, Object.assign(new RelayerTransaction(), row, { hashes: null }));
        } catch (err) {
          // The nonce was not used: recompute it from the chain and the records next time, so a
          // failed write never leaves a gap that would stall every later transaction.
          this.nextNonce = undefined;
          if (err instanceof UniqueConstraintViolationException) {
            // Another worker recorded this very effect meanwhile: use its transaction.
            const winner = await this.find(id);
            if (winner) return { hash: winner.hash as Hex, reused: true, out: undefined };
            // Someone else holds this nonce (another process with the same key): take the next one.
            if (attempt < 5) continue;
          }
          throw err;
        }
        // Queued here, in nonce order, but sent after the lock: the next transaction is signed and
        // recorded while this one goes out (under load the broadcast was most of the time in the lock).
        return { hash, reused: false, out: this.broadcasts.queue(id, { rawTx, hash }) };
      }
    });
    if (!signed.out) return { hash: signed.hash, reused: signed.reused };
    const receipt = await signed.out;
    if (receipt) this.mined.put(id, receipt);
    return { hash: signed.hash, reused: false };
  }

  /**
   * Waits (bounded) for a receipt of any hash sent for this effect. Where receipts come within
   * milliseconds (anvil's automine) it polls the receipt, backing off from ~1 ms (viem's default 1 s
   * poll would dominate settlement latency). Where blocks take time (recent waits of 100 ms or more)
   * it asks for the receipt once per new block, and the head is polled once for all of this
   * relayer's waiters (`headAfter`): per-transaction polling cost more CPU and RPC quota than the
   * settlement itself. Past `replaceAfterMs` without one it repairs what it can (see the class
   * comment). Where the network has a confirmation depth, a receipt counts only once that many blocks
   * follow its block on the canonical chain (`depthOf`); one whose block a reorg replaced sends the
   * recorded bytes again and is looked for anew. Returns null on timeout after re-broadcasting, so the caller's retry finds a dropped
   * transaction again. On success `tx.hash` (and the record's) is the mined hash.
   */
  async waitForReceipt(
    tx: RelayerTransaction,
    timeoutMs: number,
    onPoll?: () => void,
    onMined?: AlsoWrite<TransactionReceipt>,
  ): Promise<TransactionReceipt | null> {
    const known = this.mined.take(tx.id, (r) => Relayer.hashesOf(tx).includes(r.transactionHash));
    // Where blocks must follow (confirmationDepth), the synchronous answer is only the first sighting.
    if (known && this.network.confirmationDepth === 0) {
      await this.markMined(tx.id, known.value, onMined);
      tx.hash = known.value.transactionHash;
      return known.value;
    }
    const started = Date.now();
    const deadline = started + timeoutMs;
    const perBlock = this.receiptWaitMs >= PER_BLOCK_FROM_MS;
    let delay = firstPollMs(this.receiptWaitMs);
    let seen = -1n; // the head whose blocks were already searched (per-block mode)
    let current = tx;
    let reread = Date.now() + 2_000;
    let sighted = false; // a receipt was seen, not yet final (confirmationDepth)
    while (Date.now() < deadline) {
      // Every 2 s, the record again: an operator's replacement (nudge) may have added a hash.
      if (Date.now() >= reread) {
        current = (await this.find(current.id).catch(() => null)) ?? current;
        reread = Date.now() + 2_000;
      }
      // Per block: back at least by the next re-read, repair or deadline, whichever comes first.
      const replaceAt = new Date(current.updatedAt).getTime() + this.replaceAfterMs;
      // Null (polling, or the head unknown): look for the receipt every time.
      const head = perBlock ? await this.headAfter(seen, Math.min(reread, deadline, replaceAt) - Date.now()) : null;
      if (head === null || head > seen) {
        // An RPC error is unknown (undefined), not "no receipt": asked again at the next poll.
        const receipt = await this.receiptOfAny(current).catch(() => undefined);
        const depth = receipt ? await this.depthOf(receipt) : undefined;
        // Its block was replaced, or the receipt seen before is gone (a reorg; nodes do not put a
        // reorged transaction back in their pool): the same bytes go out again, and the wait looks again.
        if (depth === 'gone' || (sighted && receipt === null)) await this.broadcasts.rebroadcast(current).catch(() => undefined);
        if (receipt !== undefined) sighted = depth === 'shallow';
        if (receipt && depth === 'final') {
          this.receiptWaitMs = (this.receiptWaitMs * 4 + Math.min(Date.now() - started, MAX_POLL_MS * 4)) / 5;
          this.broadcasts.minedNow(current.id, new Date(current.updatedAt).getTime());
          await this.markMined(current.id, receipt, onMined);
          tx.hash = receipt.transactionHash;
          return receipt;
        }
        if (head !== null) seen = head; // a failed lookup too: asked again at the next block, not in a loop
      }
      onPoll?.();
      if (Date.now() >= replaceAt) {
        // On RPC trouble, try again a replaceAfterMs later (re-read: the record may have moved on).
        current = await this.repair(current.id).catch(async () => (await this.find(current.id)) ?? current);
        delay = 1;
        seen = -1n; // what the repair sent may already be in the latest block
      }
      if (perBlock) continue;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, MAX_POLL_MS);
    }
    await this.broadcasts.rebroadcast(current).catch(() => undefined);
    return null;
  }

  /**
   * An operator's nudge of an effect still waiting for its receipt, now instead of after
   * `replaceAfterMs`: `rebroadcast` re-sends the recorded bytes (same hash); `replace` runs the
   * repair step (lower gaps filled, re-sent if the node dropped it, else the same nonce with fees
   * +12.5%, or a new nonce if ours went elsewhere). Either way the effect keeps one record and at most
   * one of its hashes can be mined. Returns the hash now in flight (or mined) and the record's status.
   */
  async nudge(id: string, how: 'rebroadcast' | 'replace'): Promise<{ hash: Hex; status: string }> {
    if (!(await this.find(id))) throw new Error(`no relayer transaction recorded as ${id}`);
    const tx =
      how === 'replace'
        ? await this.repair(id)
        : await this.serialized(async () => {
            const tx = (await this.find(id))!;
            if (tx.status !== 'signed' || (await this.receiptOfAny(tx).catch(() => undefined))) return tx;
            await this.broadcasts.rebroadcast(tx); // the same bytes: harmless whatever the chain knows
            await this.touch(tx);
            return tx;
          });
    return { hash: tx.hash as Hex, status: tx.status };
  }

  /**
   * The chain's head once it is past `seen`, or the same head after `maxMs`. Every waiter of this
   * relayer shares one `eth_blockNumber` per HEAD_POLL_MS. On RPC trouble it answers null (unknown):
   * the caller asks for its receipt as it would without a head (and tolerates the error there). A
   * provider whose nodes lag each other may show a block before its receipts: the receipt is then
   * found at the next block.
   */
  private async headAfter(seen: bigint, maxMs: number): Promise<bigint | null> {
    // At least one pause, so that a caller whose bound has passed (a repair that keeps failing) does not spin.
    const until = Date.now() + Math.max(HEAD_POLL_MS, maxMs);
    for (;;) {
      const now = Date.now();
      if (!this.headPoll || now - this.headPoll.at >= HEAD_POLL_MS) {
        const head = this.client.getBlockNumber({ cacheTime: 0 });
        this.headPoll = { at: now, head };
        head.catch(() => undefined); // each waiter handles it below
      }
      const head = await this.headPoll.head.catch(() => null);
      const left = until - Date.now();
      if (head !== null && (head > seen || left <= 0)) return head;
      await new Promise((r) => setTimeout(r, Math.max(0, Math.min(HEAD_POLL_MS, left))));
      if (head === null) return null; // after the pause: a node that keeps failing is not asked in a loop
    }
  }

  /**
   * Whether a receipt counts yet: `final` once `confirmationDepth` blocks follow its block and the
   * canonical block at its height is still the receipt's; `shallow` while fewer follow or a read
   * fails (unknown); `gone` when another block stands at its height (a reorg took it out).
   */
  private async depthOf(receipt: TransactionReceipt): Promise<'final' | 'shallow' | 'gone'> {
    const depth = BigInt(this.network.confirmationDepth);
    if (depth === 0n) return 'final';
    const head = await this.client.getBlockNumber({ cacheTime: 0 }).catch(() => null);
    if (head === null || head < receipt.blockNumber + depth) return 'shallow';
    const block = await this.client.getBlock({ blockNumber: receipt.blockNumber }).catch(() => null);
    if (!block) return 'shallow';
    return block.hash === receipt.blockHash ? 'final' : 'gone';
  }

  /** Every hash ever sent for this effect, latest first. */
  static hashesOf(tx: RelayerTransaction): Hex[] {
    const all = tx.hashes ? (JSON.parse(tx.hashes) as Hex[]) : [];
    return [tx.hash as Hex, ...all.filter((h) => h !== tx.hash).reverse()];
  }

  /** Whether `tx` was signed for this very call (a record's call is never another's). */
  static records(tx: RelayerTransaction, call: { to: Address; data: Hex }): boolean {
    const signed = parseTransaction(tx.rawTx as Hex);
    return signed.to?.toLowerCase() === call.to.toLowerCase() && (signed.data ?? '0x').toLowerCase() === call.data.toLowerCase();
  }

  /**
   * A receipt of any hash sent for this effect, a successful one first (a later duplicate's revert is
   * never the answer when another of its hashes moved the money); null when every lookup answered
   * "no receipt". Throws when any lookup fails: an unanswered question is never an absence. A null
   * from a lagging replica is still only "not seen": nothing is ever re-signed on it (see `repair`).
   */
  private async receiptOfAny(tx: RelayerTransaction): Promise<TransactionReceipt | null> {
    let reverted: TransactionReceipt | null = null;
    for (const hash of Relayer.hashesOf(tx)) {
      const receipt = await this.client.getTransactionReceipt({ hash }).catch((err: unknown) => {
        if (err instanceof TransactionReceiptNotFoundError) return null;
        throw err;
      });
      if (receipt?.status === 'success') return receipt;
      reverted ??= receipt;
    }
    return reverted;
  }

  /**
   * The hash of the transaction that used `nonce` of our account, read from the block that used it:
   * the lowest block whose nonce count passes it (each count pinned to one block number), then that
   * block's own transactions. Every read names its block, so a lagging replica either answers as the
   * chain did at that block or fails ("header not found"). Throws (unknown) when any read fails, when
   * the head's count says the nonce is unused, or when the block shows no such transaction (replicas
   * that disagree, or a reorg between the reads).
   */
  private async nonceHolder(nonce: number): Promise<Hex> {
    const countAt = (blockNumber: bigint) =>
      blockNumber < 0n ? Promise.resolve(0) : this.client.getTransactionCount({ address: this.address, blockNumber });
    let hi = await this.client.getBlockNumber({ cacheTime: 0 });
    if ((await countAt(hi)) <= nonce) throw new Error(`nonce ${nonce} is not used at block ${hi}`);
    // Back from the head in doubling steps to a block where the nonce was not yet used, then bisect.
    let lo = hi - 1n;
    for (let step = 1n; (await countAt(lo)) > nonce; step *= 2n) [hi, lo] = [lo, lo - step < -1n ? -1n : lo - step];
    while (hi - lo > 1n) {
      const mid = (hi + lo) / 2n;
      if ((await countAt(mid)) > nonce) hi = mid;
      else lo = mid;
    }
    const block = await this.client.getBlock({ blockNumber: hi, includeTransactions: true });
    const me = this.address.toLowerCase();
    const holder = block.transactions.find((t) => t.from.toLowerCase() === me && t.nonce === nonce);
    if (!holder) throw new Error(`block ${hi} shows no transaction of ours at nonce ${nonce}`);
    return holder.hash;
  }

  /** Fees no higher than the network's ceiling (`maxFeePerGas` in the network table). */
  private capped(fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }) {
    const ceiling = this.network.maxFeePerGas;
    const maxFeePerGas = fees.maxFeePerGas > ceiling ? ceiling : fees.maxFeePerGas;
    const maxPriorityFeePerGas = fees.maxPriorityFeePerGas > maxFeePerGas ? maxFeePerGas : fees.maxPriorityFeePerGas;
    return { maxFeePerGas, maxPriorityFeePerGas };
  }

  /**
   * One repair step for an effect that has waited `replaceAfterMs`: fill gaps below it, then re-send,
   * replace or re-nonce it. Serialized with new transactions' signing, so no nonce is taken twice.
   * Returns the fresh record.
   */
  private repair(id: string): Promise<RelayerTransaction> {
    return this.serialized(async () => {
      const tx = (await this.find(id))!;
      // Another key recorded it (lanes were reconfigured): only that key may sign for it; we just wait.
      if (tx.signer !== this.address.toLowerCase()) return tx;
      // A lookup that fails throws here: the repair is tried again a replaceAfterMs later.
      if (tx.status !== 'signed' || (await this.receiptOfAny(tx))) return tx;
      const used = await this.client.getTransactionCount({ address: this.address, blockTag: 'latest' });
      if (used > tx.nonce) {
        // Our nonce is spent. Signed again only on proof, from the block that used it, that the
        // transaction there is none of ours; one of ours there is mined, and its receipt will be found.
        const holder = await this.nonceHolder(tx.nonce);
        if (Relayer.hashesOf(tx).some((h) => h.toLowerCase() === holder.toLowerCase())) {
          await this.touch(tx);
          return tx;
        }
        this.nextNonce = undefined;
        return this.resign(tx, await this.allocateNonce(), this.capped(await this.client.estimateFeesPerGas()));
      }
      if (used < tx.nonce) {
        // Lower nonces first; this one is looked at again a replaceAfterMs later if still unmined.
        await this.fillGaps(used, tx.nonce);
        await this.touch(tx);
        return tx;
      }
      const known = await this.client.getTransaction({ hash: tx.hash as Hex }).then(
        () => true,
        () => false,
      );
      if (!known) {
        try {
          await this.broadcasts.rebroadcast(tx);
          await this.touch(tx); // give the re-sent bytes their own replaceAfterMs
          return tx;
        } catch {
          // The node refuses these bytes (e.g. fee below its base fee): replace them.
        }
      }
      const old = parseTransaction(tx.rawTx as Hex) as TransactionSerializableEIP1559;
      const estimate = await this.client.estimateFeesPerGas();
      const bump = (v: bigint | undefined) => ((v ?? 0n) * 9n + 7n) / 8n; // +12.5%, rounded up
      const priority = max(bump(old.maxPriorityFeePerGas), estimate.maxPriorityFeePerGas);
      const fees = this.capped({
        maxFeePerGas: max(bump(old.maxFeePerGas), estimate.maxFeePerGas, priority),
        maxPriorityFeePerGas: priority,
      });
      // Pools take a replacement only with both fees 10% up: at the ceiling the bytes we have wait.
      const replaceable = (o: bigint | undefined, n: bigint) => n * 10n >= (o ?? 0n) * 11n;
      if (!replaceable(old.maxFeePerGas, fees.maxFeePerGas) || !replaceable(old.maxPriorityFeePerGas, fees.maxPriorityFeePerGas)) {
        await this.broadcasts.rebroadcast(tx).catch(() => undefined);
        await this.touch(tx);
        return tx;
      }
      return this.resign(tx, tx.nonce, fees);
    });
  }

  /** Signs the recorded call again (nonce and fees given), records the new bytes, then broadcasts. */
  private async resign(
    tx: RelayerTransaction,
    nonce: number,
    fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
  ): Promise<RelayerTransaction> {
    const { to, data, value, gas, accessList } = parseTransaction(tx.rawTx as Hex) as TransactionSerializableEIP1559;
    const rawTx = await this.account.signTransaction({
      chainId: this.network.chainId!,
      type: 'eip1559',
      to,
      data,
      value,
      gas,
      accessList,
      nonce,
      ...fees,
    });
    const hash = keccak256(rawTx);
    const hashes = JSON.stringify([...Relayer.hashesOf(tx).reverse(), hash]);
    const updatedAt = new Date();
    this.recent.delete(tx.id);
    try {
      await this.db.em.fork().nativeUpdate(RelayerTransaction, { id: tx.id }, { rawTx, hash, hashes, nonce, updatedAt });
    } catch (err) {
      this.nextNonce = undefined;
      throw err;
    }
    const next = Object.assign(new RelayerTransaction(), tx, { rawTx, hash, hashes, nonce, updatedAt });
    await this.broadcasts.rebroadcast(next);
    return next;
  }

  /**
   * Nonces in [from, to) that the chain has not used: each recorded one is re-sent (a node may have
   * dropped it), each never-recorded one gets a zero-value transfer to ourselves, recorded first.
   */
  private async fillGaps(from: number, to: number): Promise<void> {
    if (from >= to) return;
    const rows = await this.db.em.fork().find(RelayerTransaction, {
      chainId: this.network.chainId!,
      signer: this.address.toLowerCase(),
      nonce: { $gte: from, $lt: to },
    });
    const byNonce = new Map(rows.map((r) => [r.nonce, r]));
    const fees = await this.client.estimateFeesPerGas();
    for (let nonce = from; nonce < to; nonce++) {
      const row = byNonce.get(nonce);
      if (row) {
        await this.broadcasts.rebroadcast(row).catch(() => undefined); // its own waiter replaces it if underpriced
        continue;
      }
      const rawTx = await this.account.signTransaction({
        chainId: this.network.chainId!,
        type: 'eip1559',
        to: this.address,
        value: 0n,
        nonce,
        gas: 21_000n,
        ...fees,
      });
      const hash = keccak256(rawTx);
      const now = new Date();
      await this.db.em.fork().insert(RelayerTransaction, {
        id: `gap:${this.network.chainId}:${this.address.toLowerCase()}:${nonce}`,
        chainId: this.network.chainId!,
        signer: this.address.toLowerCase(),
        nonce,
        rawTx,
        hash,
        status: 'signed',
        createdAt: now,
        updatedAt: now,
      });
      await this.broadcasts.rebroadcast({ rawTx, hash });
    }
  }

  private async touch(tx: RelayerTransaction): Promise<void> {
    tx.updatedAt = new Date();
    this.recent.delete(tx.id);
    await this.db.em.fork().nativeUpdate(RelayerTransaction, { id: tx.id }, { updatedAt: tx.updatedAt });
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
    for (const tx of pending) await this.broadcasts.rebroadcast(tx);
    return pending.length;
  }

  /** Records the outcome, with the caller's own record of it (`onMined`) in the same DB transaction. */
  private markMined(id: string, receipt: TransactionReceipt, onMined?: AlsoWrite<TransactionReceipt>) {
    const status = receipt.status === 'success' ? 'mined' : 'reverted';
    this.recent.delete(id);
    const mark = (em: EntityManager) => updateRows(em, RelayerTransaction, { id }, { status, hash: receipt.transactionHash });
    return this.commit(mark, onMined, receipt);
  }

  /** One write to our records, in one DB transaction with the caller's own write (`also`) when it has one. */
  private async commit<T>(write: (em: EntityManager) => Promise<unknown>, also: AlsoWrite<T> | undefined, value: T): Promise<void> {
    if (!also) return void (await write(this.db.em.fork()));
    await inTransaction(this.db, async (em) => {
      await write(em);
      await also(em, value);
    });
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
}

/** A caller's own record of a relayer effect, written in the same DB transaction as ours. */
export type AlsoWrite<T> = (em: EntityManager, value: T) => Promise<unknown>;

/** How long one fee estimate serves new transactions: at most about one block. */
const FEE_CACHE_MS = 1_000;

/** The longest pause between two receipt polls. */
const MAX_POLL_MS = 250;

/** Recent receipt waits this long or longer mean blocks take time: one receipt query per new block. */
const PER_BLOCK_FROM_MS = 100;

/** How often a relayer asks for the chain's head while transactions wait for blocks. */
const HEAD_POLL_MS = 100;

/** The first receipt poll comes after about half the recent wait (at least 1 ms, at most MAX_POLL_MS). */
const firstPollMs = (recentWaitMs: number) => Math.max(1, Math.min(MAX_POLL_MS, Math.round(recentWaitMs / 2)));

const max = (...values: bigint[]) => values.reduce((a, b) => (a > b ? a : b));

/** `send` was asked for a call other than the one recorded under its id: another caller's effect, never adopted. */
export class RecordedCallMismatch extends Error {
  constructor(readonly id: string) {
    super(`the transaction recorded as ${id} was signed for another call`);
    this.name = 'RecordedCallMismatch';
  }
}
