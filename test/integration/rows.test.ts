import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { ApiKey, Organization, RelayerTransaction } from '../../src/db/entities';
import { sqlEm } from '../../src/db/orm';
import { findRow, findRowWith, inTransaction, insertRow, updateRows, upsertRow } from '../../src/db/rows';
import { DB_KINDS, openTestDatabase, type TestDatabase } from '../support/db';

/**
 * The settlement path's compiled statements (src/db/rows.ts) on both databases: they read and write
 * what the query builder would, refuse the shapes they cannot compile faithfully, and keep the
 * transaction and the ORM's exception classes.
 */
describe.each(DB_KINDS)('compiled statements (%s)', (kind) => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await openTestDatabase(kind);
  });
  afterAll(() => tdb.close());

  const at = new Date('2026-11-26T10:00:00.000Z');
  const key = (id: string, extra: Partial<ApiKey> = {}) => ({
    id,
    organizationId: 'org-1',
    name: `key ${id} with 'quotes' and ? marks`,
    testNet: true,
    publicKeyHash: `hash-${id}`,
    secretKeyHash: `secret-${id}`,
    keyHint: 'pk_test_…',
    createdAt: at,
    updatedAt: at,
    lastUsedAt: null,
    revokedAt: null,
    expiresAt: new Date('2027-01-01T00:00:00.000Z'),
    ...extra,
  });
  const tx = (id: string, nonce: number) => ({
    id,
    chainId: 84532,
    signer: '0xabc',
    nonce,
    rawTx: '0x01',
    hash: `0x${id}`,
    status: 'signed',
    createdAt: at,
    updatedAt: at,
  });

  it('reads back exactly what the query builder reads: dates, booleans, nulls, text with quotes', async () => {
    await insertRow(tdb.db.em.fork(), ApiKey, key('a'));
    const viaBuilder = await sqlEm(tdb.db.em.fork())
      .createQueryBuilder(ApiKey)
      .select('*')
      .where({ publicKeyHash: 'hash-a' })
      .limit(1)
      .execute('get');
    const compiled = await findRow(tdb.db.em.fork(), ApiKey, { publicKeyHash: 'hash-a' });
    expect(compiled).toEqual(viaBuilder);
    expect(compiled).toMatchObject({ testNet: true, revokedAt: null, name: "key a with 'quotes' and ? marks" });
    expect(new Date(compiled!.expiresAt!).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(await findRow(tdb.db.em.fork(), ApiKey, { publicKeyHash: 'none' })).toBeNull();
  });

  it('reads a row with the row it names in one statement, each as findRow reads it', async () => {
    const org = {
      id: 'org-with',
      ownerAddress: '0x00000000000000000000000000000000000000aa',
      name: "the 'org'",
      payoutWalletTest: '0x00000000000000000000000000000000000000bb',
      payoutWalletLive: null,
      payoutWalletSolanaTest: null,
      payoutWalletSolanaLive: null,
      platformFeeBps: 25,
      createdAt: at,
      updatedAt: at,
    };
    await insertRow(tdb.db.em.fork(), Organization, org);
    await insertRow(tdb.db.em.fork(), ApiKey, key('w', { organizationId: 'org-with' }));
    await insertRow(tdb.db.em.fork(), ApiKey, key('orphan', { organizationId: 'org-none' }));
    const em = tdb.db.em.fork();

    const found = await findRowWith(em, ApiKey, { publicKeyHash: 'hash-w' }, Organization, 'organizationId');
    expect(found).toEqual({
      row: await findRow(em, ApiKey, { publicKeyHash: 'hash-w' }),
      other: await findRow(em, Organization, { id: 'org-with' }),
    });
    expect(found!.other).toMatchObject({ name: "the 'org'", platformFeeBps: 25, payoutWalletLive: null });
    expect(found!.row).toMatchObject({ id: 'w', organizationId: 'org-with', testNet: true });

    const orphan = await findRowWith(em, ApiKey, { publicKeyHash: 'hash-orphan' }, Organization, 'organizationId');
    expect(orphan).toEqual({ row: await findRow(em, ApiKey, { publicKeyHash: 'hash-orphan' }), other: null });
    expect(await findRowWith(em, ApiKey, { publicKeyHash: 'none' }, Organization, 'organizationId')).toBeNull();
  });

  it('upserts only the merged fields, and updates by equality', async () => {
    await upsertRow(tdb.db.em.fork(), ApiKey, key('b'), ['name']);
    await upsertRow(tdb.db.em.fork(), ApiKey, key('b', { name: 'renamed', keyHint: 'not merged' }), ['name']);
    await updateRows(tdb.db.em.fork(), ApiKey, { id: 'b' }, { revokedAt: at });
    const row = await findRow(tdb.db.em.fork(), ApiKey, { id: 'b' });
    expect(row).toMatchObject({ name: 'renamed', keyHint: 'pk_test_…' });
    expect(new Date(row!.revokedAt!).getTime()).toBe(at.getTime());
  });

  it('keeps the ORM exception class for a duplicate key, inside and outside a transaction', async () => {
    await insertRow(tdb.db.em.fork(), RelayerTransaction, tx('t1', 1));
    await expect(insertRow(tdb.db.em.fork(), RelayerTransaction, tx('t1', 2))).rejects.toBeInstanceOf(UniqueConstraintViolationException);
    await expect(inTransaction(tdb.db, (em) => insertRow(em, RelayerTransaction, tx('t1', 3)))).rejects.toBeInstanceOf(
      UniqueConstraintViolationException,
    );
  });

  it('commits both writes of a transaction or neither', async () => {
    await inTransaction(tdb.db, async (em) => {
      await insertRow(em, RelayerTransaction, tx('t2', 10));
      await updateRows(em, RelayerTransaction, { id: 't2' }, { status: 'mined' });
    });
    expect(await findRow(tdb.db.em.fork(), RelayerTransaction, { id: 't2' })).toMatchObject({ status: 'mined', nonce: 10 });
    await expect(
      inTransaction(tdb.db, async (em) => {
        await insertRow(em, RelayerTransaction, tx('t3', 11));
        throw new Error('the second write failed');
      }),
    ).rejects.toThrow('the second write failed');
    expect(await findRow(tdb.db.em.fork(), RelayerTransaction, { id: 't3' })).toBeNull();
  });

  it('refuses what a compiled `= ?` cannot say: a field both set and matched, a null in a where, a non-plain value', async () => {
    await expect(updateRows(tdb.db.em.fork(), RelayerTransaction, { status: 'signed' }, { status: 'mined' })).rejects.toThrow(
      'a field is named twice',
    );
    await expect(updateRows(tdb.db.em.fork(), RelayerTransaction, { id: 't2', hashes: null }, { status: 'reverted' })).rejects.toThrow(
      'where hashes: null is not an equality',
    );
    await expect(findRow(tdb.db.em.fork(), RelayerTransaction, { id: ['t1', 't2'] as unknown as string })).rejects.toThrow(
      'field id: not a plain value (an array)',
    );
    expect(await findRow(tdb.db.em.fork(), RelayerTransaction, { id: 't2' })).toMatchObject({ status: 'mined' });
  });
});
