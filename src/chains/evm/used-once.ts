/** How long a value a relayer kept for later serves (ms). */
const RECENT_MS = 5_000;

/** At most this many such values are kept per store. */
const RECENT_MAX = 1_024;

/**
 * Values a relayer keeps for one later use (what it just learnt of a record, a gas estimate, a
 * receipt, when a broadcast started): each is taken at most once, only within RECENT_MS of being
 * put, and at most RECENT_MAX are kept (those nobody took, such as a rejected payment's absence, go
 * oldest first).
 */
export class UsedOnce<V> {
  private readonly entries = new Map<string, { value: V; at: number }>();

  put(id: string, value: V): void {
    this.entries.delete(id); // re-inserted last, so the oldest stays first
    this.entries.set(id, { value, at: Date.now() });
    if (this.entries.size > RECENT_MAX) this.entries.delete(this.entries.keys().next().value!);
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  delete(id: string): void {
    this.entries.delete(id);
  }

  /** The entry of `id` if `wanted` accepts it, removed; undefined as well when it was too old. */
  take(id: string, wanted: (value: V) => boolean): { value: V } | undefined {
    const entry = this.entries.get(id);
    if (!entry || !wanted(entry.value)) return undefined;
    this.entries.delete(id);
    return Date.now() - entry.at < RECENT_MS ? entry : undefined;
  }
}
