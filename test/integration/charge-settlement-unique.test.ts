import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { InferenceCharge } from '../../src/db/entities';
import { openDatabase } from '../../src/db/orm';
import { DB_KINDS, openTestDatabase, type TestDatabase } from '../support/db';

/**
 * docs/security.md "One settlement, one charge": `inference_charges.settlement_id` is unique on both
 * databases, and the migration repairs a database from before, where one settlement backed two charges.
 */
describe.each(DB_KINDS)('one settlement, one charge (%s)', (kind) => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await openTestDatabase(kind);
  });
  afterAll(() => tdb.close());

  const SETTLEMENT = 'settle:base-sepolia:0x00000000000000000000000000000000000000aa:0x01';
  const charge = (id: string, createdAt: Date, settlementId = SETTLEMENT) => ({
    id,
    settlementId,
    network: 'base-sepolia',
    payer: '0x00000000000000000000000000000000000000aa',
    amount: '20000',
    model: 'm',
    state: 'delivered',
    createdAt,
    updatedAt: createdAt,
  });

  test('a second charge on a settlement that backs one already is refused', async () => {
    const em = tdb.db.em.fork();
    await em.insert(InferenceCharge, charge('media:one', new Date()));
    await expect(tdb.db.em.fork().insert(InferenceCharge, charge('chat:one', new Date()))).rejects.toBeInstanceOf(
      UniqueConstraintViolationException,
    );
    expect(await tdb.db.em.fork().count(InferenceCharge, { settlementId: SETTLEMENT })).toBe(1);
  });

  test('the migration points every charge after a settlement’s first at an id of its own, then makes the column unique', async () => {
    const conn = tdb.db.em.getConnection();
    // The schema of before: no unique index on settlement_id, and two charges on one settlement.
    await conn.execute(
      kind === 'postgres'
        ? 'alter table inference_charges drop constraint inference_charges_settlement_id_unique'
        : 'drop index inference_charges_settlement_id_unique',
    );
    const shared = `${SETTLEMENT}2`;
    await tdb.db.em.fork().insert(InferenceCharge, charge('chat:two', new Date('2026-11-01T00:00:01Z'), shared));
    await tdb.db.em.fork().insert(InferenceCharge, charge('media:two', new Date('2026-11-01T00:00:00Z'), shared));

    const migrated = await openDatabase(tdb.config, { migrate: true });
    try {
      const rows = await migrated.em.fork().find(InferenceCharge, { id: { $in: ['chat:two', 'media:two'] } }, { orderBy: { id: 'asc' } });
      expect(rows.map((r) => [r.id, r.settlementId])).toEqual([
        ['chat:two', expect.stringMatching(new RegExp(`^${shared.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}#[0-9a-f]{16}$`))],
        ['media:two', shared],
      ]);
      await expect(migrated.em.fork().insert(InferenceCharge, charge('chat:three', new Date(), shared))).rejects.toBeInstanceOf(
        UniqueConstraintViolationException,
      );
    } finally {
      await migrated.close();
    }
  });
});
