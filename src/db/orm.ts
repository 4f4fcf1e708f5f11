import { MikroORM as LibSqlORM } from '@mikro-orm/libsql';
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql';
import { createHash } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { SqlEntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config';
import { ALL_ENTITIES } from './entities';

export type Database = MikroORM;

/** An entity manager as the SQL one it is (both drivers are SQL): its query builder writes src/db/rows.ts's statements. */
export const sqlEm = (em: EntityManager): SqlEntityManager => em as unknown as SqlEntityManager;

/**
 * Opens the database: PostgreSQL when DATABASE_URL is set, else the embedded SQLite file.
 * `migrate` brings the schema up to date (create tables/columns; never drops). Exactly one process
 * should migrate at a time: `npm start` and the test setup do it before starting the api and workers.
 */
export async function openDatabase(
  config: Pick<Config, 'DATABASE_URL' | 'SQLITE_PATH'>,
  opts: { migrate?: boolean } = {},
): Promise<Database> {
  const common = { entities: ALL_ENTITIES, debug: false, allowGlobalContext: false, discovery: { warnWhenNoEntities: true } };
  let orm: MikroORM;
  if (config.DATABASE_URL) {
    orm = await PostgresORM.init({ ...common, clientUrl: config.DATABASE_URL, pool: { min: 0, max: 10 } });
  } else {
    // The api and the worker are separate processes writing one file: every connection waits up to
    // 10 s for a lock (a connection option, so it also holds for connections the pool opens later;
    // a one-off `pragma busy_timeout` was lost when the pool replaced its connection), and WAL lets
    // readers run beside the writer.
    orm = await LibSqlORM.init({ ...common, dbName: config.SQLITE_PATH, driverOptions: { connection: { timeout: 10_000 } } });
    await orm.em.getConnection().execute('pragma journal_mode = wal');
  }
  if (opts.migrate) {
    await orm.schema.ensureDatabase();
    await oneChargePerSettlement(orm, Boolean(config.DATABASE_URL));
    await orm.schema.updateSchema({ safe: true });
  }
  return orm;
}

/**
 * Before `inference_charges.settlement_id` became unique, one settlement could back a chat and a media
 * charge (docs/security.md "One settlement, one charge"). The unique index cannot be built over such
 * pairs: every charge after a settlement's first (by creation) is pointed at an id of its own
 * (`<settlement id>#<hash of the charge id>`), which no settlement has, so its refund finds no payment
 * to return and an operator sees the charge that was never backed.
 */
export async function oneChargePerSettlement(orm: MikroORM, postgres: boolean): Promise<number> {
  const conn = orm.em.getConnection();
  const table = postgres
    ? await conn.execute<{ t: string | null }[]>("select to_regclass('inference_charges')::text as t")
    : await conn.execute<{ t: string | null }[]>("select name as t from sqlite_master where type = 'table' and name = 'inference_charges'");
  if (!table[0]?.t) return 0; // a new database: nothing to repair
  const rows = await conn.execute<{ id: string; settlement_id: string }[]>(
    `select c.id, c.settlement_id from inference_charges c
      where exists (select 1 from inference_charges d
                     where d.settlement_id = c.settlement_id
                       and (d.created_at < c.created_at or (d.created_at = c.created_at and d.id < c.id)))`,
  );
  for (const r of rows) {
    const own = `${r.settlement_id}#${createHash('sha256').update(r.id).digest('hex').slice(0, 16)}`;
    await conn.execute('update inference_charges set settlement_id = ? where id = ?', [own, r.id]);
  }
  return rows.length;
}
