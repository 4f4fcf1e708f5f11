import { EntitySchema } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/core';

/**
 * The latest stuck scan's counts, one row per (kind, state, network) with at least one stuck
 * workflow: written by the worker's scan (activities/stuck.ts), read by the API on each /metrics
 * scrape (x402_stuck_payments). Each scan replaces every row, so a series that is gone counts 0.
 */
export class StuckPaymentCount {
  kind!: string;
  state!: string;
  network!: string;
  count!: number;
  scannedAt: Date = new Date();
}

export const StuckPaymentCountSchema = new EntitySchema<StuckPaymentCount>({
  class: StuckPaymentCount,
  tableName: 'stuck_payment_counts',
  properties: {
    kind: { type: 'string', length: 32, primary: true },
    state: { type: 'string', length: 32, primary: true },
    network: { type: 'string', length: 32, primary: true },
    count: { type: 'integer' },
    scannedAt: { type: 'datetime' },
  },
});

export type StuckCount = Pick<StuckPaymentCount, 'kind' | 'state' | 'network' | 'count'>;

/** Replaces the stored counts with one scan's, in one transaction (a scrape sees the old or the new set). */
export async function replaceStuckCounts(em: EntityManager, counts: StuckCount[], scannedAt: Date): Promise<void> {
  await em.transactional(async (tx) => {
    await tx.nativeDelete(StuckPaymentCount, {});
    for (const c of counts) tx.persist(tx.create(StuckPaymentCount, { ...c, scannedAt }));
  });
}

export async function readStuckCounts(em: EntityManager): Promise<StuckCount[]> {
  const rows = await em.find(StuckPaymentCount, {}, { orderBy: { kind: 'asc', state: 'asc', network: 'asc' } });
  return rows.map(({ kind, state, network, count }) => ({ kind, state, network, count }));
}
