import { MikroORM as LibSqlORM } from '@mikro-orm/libsql';
import { MikroORM as PostgresORM } from '@mikro-orm/postgresql';
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
    await orm.schema.updateSchema({ safe: true });
  }
  return orm;
}
