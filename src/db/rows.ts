import type { EntityManager, EntityMetadata, MikroORM } from '@mikro-orm/core';
import { sqlEm } from './orm';

/**
 * The settlement path's reads and writes. The query builder writes each statement's SQL once per
 * shape (entity, kind and fields), for the database it runs on, and every call runs that SQL with its
 * own values through the connection, as the query builder's own `execute` does. Building and
 * compiling a query costs 0.3-0.5 ms of CPU per call, three times what running it costs (measured in
 * docs/decisions/compiled-statements-and-rpc-fetch.md).
 */

/** A value a compiled statement takes: the query builder binds these as they are. */
type Value = string | number | boolean | Date | null;
type Values = Record<string, Value>;
/** Our entities are classes (src/db/entities.ts). */
type Entity<T> = new () => T;
type QB = ReturnType<ReturnType<typeof sqlEm>['createQueryBuilder']>;
type Sql = { sql: string; bindings: readonly unknown[] };
type Built = { getKnexQuery(): { toSQL(): Sql } };

/** Where each bound parameter comes from: a field of the call's values, or the query builder's own constant (a limit). */
type Slot = { field: string } | { constant: unknown };
interface Statement {
  sql: string;
  slots: Slot[];
}

// Per platform (the SQL differs between SQLite and PostgreSQL; tests open both in one process).
const compiled = new WeakMap<object, Map<string, Statement>>();

/**
 * The statement of this shape. Built once with a unique marker as each field's value, so the bound
 * parameters show where each field goes; a field named twice, or one the query builder did not bind
 * as given (a type that converts its value), refuses here rather than running something else.
 */
function statement(em: EntityManager, key: string, fields: string[], build: (marks: Values) => Sql): Statement {
  const platform = em.getPlatform();
  let byKey = compiled.get(platform);
  if (!byKey) compiled.set(platform, (byKey = new Map()));
  const known = byKey.get(key);
  if (known) return known;
  if (new Set(fields).size !== fields.length) throw new Error(`statement ${key}: a field is named twice`);
  const marks = fields.map((_, i) => `\u0000field${i}\u0000`);
  const fieldOf = new Map(marks.map((m, i) => [m, fields[i]]));
  const query = build(Object.fromEntries(fields.map((f, i) => [f, marks[i]])));
  const slots: Slot[] = query.bindings.map((b) => (typeof b === 'string' && fieldOf.has(b) ? { field: fieldOf.get(b)! } : { constant: b }));
  // A marker the builder converted is no longer found, so fewer fields are bound than given.
  if (slots.filter((s) => 'field' in s).length !== fields.length) {
    throw new Error(`statement ${key}: the query builder did not bind every field as given`);
  }
  const made = { sql: query.sql, slots };
  byKey.set(key, made);
  return made;
}

/** A statement written by the query builder of `entity`. */
const built =
  (em: EntityManager, entity: Entity<object>, build: (qb: QB, marks: Values) => Built) =>
  (marks: Values): Sql =>
    build(sqlEm(em).createQueryBuilder(entity), marks).getKnexQuery().toSQL();

/** Runs it in the entity manager's transaction, if it has one; database errors as the ORM names them (unique violations…). */
async function run(em: EntityManager, s: Statement, values: Values, method: 'get' | 'run'): Promise<unknown> {
  const params = s.slots.map((slot) => ('field' in slot ? checked(values[slot.field], slot.field) : slot.constant));
  try {
    return await em.getConnection().execute(s.sql, params, method, em.getTransactionContext());
  } catch (err) {
    throw em.getDriver().convertException(err as Error);
  }
}

/** A value as the statement was compiled for (an array or object would be spliced in as SQL text by the inliner). */
function checked(value: unknown, field: string): Value {
  if (value === null || value instanceof Date || ['string', 'number', 'boolean'].includes(typeof value)) return value as Value;
  throw new Error(`field ${field}: not a plain value (${Array.isArray(value) ? 'an array' : typeof value})`);
}

/** A where of equalities: a null would need `is null`, which the compiled `= ?` is not. */
function equalities(where: Record<string, unknown>): Values {
  for (const [k, v] of Object.entries(where)) if (v === null) throw new Error(`where ${k}: null is not an equality`);
  return where as Values;
}

/** The fields that carry a value (an undefined one is left out, as the query builder leaves it out). */
const present = (values: Record<string, unknown>) => Object.keys(values).filter((k) => values[k] !== undefined);

/** One row matching every field (equality) as a plain object (not a managed entity: nothing to flush), or null. */
export async function findRow<T extends object>(
  em: EntityManager,
  entity: Entity<T>,
  where: Partial<Record<keyof T, string | number>>,
): Promise<T | null> {
  const fields = present(where);
  const s = statement(
    em,
    `get ${entity.name} ${fields}`,
    fields,
    built(em, entity, (qb, marks) => qb.select('*').where(marks).limit(1)),
  );
  const row = await run(em, s, equalities(where), 'get');
  return row ? (em.getDriver().mapResult(row as T, em.getMetadata().get(entity.name)) as T) : null;
}

/**
 * findRow's row together with the row of `other` whose id its field `via` holds (null when there is
 * none), read in one statement: two lookups that always go together cost one round trip.
 */
export async function findRowWith<T extends object, O extends object>(
  em: EntityManager,
  entity: Entity<T>,
  where: Partial<Record<keyof T, string | number>>,
  other: Entity<O>,
  via: keyof T & string,
): Promise<{ row: T; other: O | null } | null> {
  const fields = present(where);
  const [own, joined] = [em.getMetadata().get(entity.name), em.getMetadata().get(other.name)];
  const column = (meta: EntityMetadata, prop: string) => meta.properties[prop].fieldNames[0];
  const otherKey = column(joined, joined.primaryKeys[0]);
  const s = statement(em, `get ${entity.name} ${fields} with ${other.name} by ${via}`, fields, (marks) => {
    // Plain columns only (a relation or an embeddable would need the ORM's own joins); prefixes kept apart.
    if (joined.props.some((p) => p.fieldNames?.length !== 1) || own.props.some((p) => p.fieldNames?.[0]?.startsWith(JOINED))) {
      throw new Error(`statement ${entity.name} with ${other.name}: not plain columns`);
    }
    return sqlEm(em)
      .getKnex()
      .select(['a.*', ...joined.props.map((p) => `b.${p.fieldNames[0]} as ${JOINED}${p.fieldNames[0]}`)])
      .from({ a: own.tableName })
      .leftJoin({ b: joined.tableName }, `b.${otherKey}`, `a.${column(own, via)}`)
      .where(Object.fromEntries(fields.map((f) => [`a.${column(own, f)}`, marks[f]])))
      .limit(1)
      .toSQL();
  });
  const found = (await run(em, s, equalities(where), 'get')) as Record<string, unknown> | undefined;
  if (!found) return null;
  const [a, b]: Record<string, unknown>[] = [{}, {}];
  for (const [k, v] of Object.entries(found)) {
    if (k.startsWith(JOINED)) b[k.slice(JOINED.length)] = v;
    else a[k] = v;
  }
  const driver = em.getDriver();
  return { row: driver.mapResult(a as T, own) as T, other: b[otherKey] == null ? null : (driver.mapResult(b as O, joined) as O) };
}
/** The prefix of the joined row's columns in findRowWith's result (ours have no such name). */
const JOINED = 'joined__';

/** Inserts one row; a duplicate key rejects with the ORM's UniqueConstraintViolationException. */
export async function insertRow<T extends object>(em: EntityManager, entity: Entity<T>, row: Partial<T>): Promise<void> {
  const fields = present(row);
  const s = statement(
    em,
    `insert ${entity.name} ${fields}`,
    fields,
    built(em, entity, (qb, marks) => qb.insert(marks)),
  );
  await run(em, s, row as Values, 'run');
}

/** Inserts one row, or sets `merge` (and nothing else; a field the row leaves undefined is not merged) on the row with its id. */
export async function upsertRow<T extends object>(
  em: EntityManager,
  entity: Entity<T>,
  row: Partial<T> & { id: string },
  merge: (keyof T & string)[],
): Promise<void> {
  const fields = present(row);
  const merged = merge.filter((f) => fields.includes(f));
  const s = statement(
    em,
    `upsert ${entity.name} ${fields} / ${merged}`,
    fields,
    built(em, entity, (qb, marks) => qb.insert(marks).onConflict('id').merge(merged)),
  );
  await run(em, s, row as Values, 'run');
}

/** Sets `set` on the rows matching `where` (equality on every field). */
export async function updateRows<T extends object>(
  em: EntityManager,
  entity: Entity<T>,
  where: Partial<T>,
  set: Partial<T>,
): Promise<void> {
  const setFields = present(set);
  const whereFields = present(where);
  const fields = [...setFields, ...whereFields]; // a field both set and matched is refused (named twice)
  const s = statement(
    em,
    `update ${entity.name} ${setFields} / ${whereFields}`,
    fields,
    built(em, entity, (qb, marks) => qb.update(pick(marks, setFields)).where(pick(marks, whereFields))),
  );
  await run(em, s, { ...(set as Values), ...equalities(where) }, 'run');
}

const pick = (values: Values, keys: string[]): Values => Object.fromEntries(keys.map((k) => [k, values[k]]));

/**
 * Runs `fn` in one DB transaction, handing it an entity manager bound to it. The connection's own
 * transaction: the entity manager's adds a flush and its events (~0.25 ms of CPU), for nothing here.
 * Nothing is flushed, so `fn` writes through the statements above only (an `em.persist` would be lost).
 */
export function inTransaction<T>(db: MikroORM, fn: (em: EntityManager) => Promise<T>): Promise<T> {
  const em = db.em.fork();
  return em.getConnection().transactional(async (trx) => {
    em.setTransactionContext(trx);
    try {
      return await fn(em);
    } finally {
      em.resetTransactionContext();
    }
  });
}
