import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config';
import { openDatabase, type Database } from '../../src/db/orm';

/** A fresh, migrated database per test suite: a temp SQLite file or a uniquely named PostgreSQL database. */

export type DbKind = 'sqlite' | 'postgres';
/** Both kinds: for suites whose SQL, races or write-ahead ids differ by dialect. */
export const DB_KINDS: DbKind[] = ['sqlite', 'postgres'];

/**
 * One kind, for a suite whose database work is the same on both (README "Tests": databases by risk).
 * Suites name theirs so that PostgreSQL takes about half of the time; `npm run test:all` (TEST_ALL_DBS=1)
 * runs every suite on both.
 */
export const oneDbKind = (kind: DbKind): DbKind[] => (process.env.TEST_ALL_DBS === '1' ? DB_KINDS : [kind]);

/**
 * In a suite on both kinds, for its tests whose database work is the same on both: `test` in the
 * describe of `kind` when `kinds` (a oneDbKind) has it, else nothing is declared there. With
 * TEST_ALL_DBS=1 every such test runs on both.
 */
export function testOn(kinds: DbKind[], kind: DbKind): (name: string, fn: () => Promise<unknown>, timeout?: number) => void {
  return kinds.includes(kind) ? test : () => undefined;
}

export interface TestDatabase {
  kind: DbKind;
  config: Config;
  db: Database;
  close(): Promise<void>;
}

/** Server of the per-suite databases; override with TEST_POSTGRES_URL. */
const POSTGRES_SERVER = process.env.TEST_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/';

// `pg` ships without types here; this is the sliver we use.
interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- pg ships no types here; only this narrow shape is used
const { Client: PgClientCtor } = require('pg') as { Client: new (opts: { connectionString: string }) => PgClient };

async function adminQuery(sql: string): Promise<void> {
  const client = new PgClientCtor({ connectionString: new URL('postgres', POSTGRES_SERVER).toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Opens a fresh database of `kind` and migrates it. `env` adds or overrides configuration variables
 * (on top of process.env); SESSION_SECRET is random per database unless given.
 */
export async function openTestDatabase(kind: DbKind, env: Record<string, string | undefined> = {}): Promise<TestDatabase> {
  const base = {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    SESSION_SECRET: randomBytes(32).toString('hex'),
    // Suites send many requests from 127.0.0.1 (storms, polling); the rate-limit tests set their own budgets.
    RATE_LIMIT_IP: '1000000',
    RATE_LIMIT_AUTH_IP: '1000000',
    RATE_LIMIT_KEY: '1000000',
  };
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'x402-test-'));
    const config = loadConfig({ ...base, DATABASE_URL: undefined, SQLITE_PATH: join(dir, 'facilitator.sqlite'), ...env });
    const db = await openDatabase(config, { migrate: true });
    return {
      kind,
      config,
      db,
      async close() {
        await db.close(true);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const name = `x402_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`create database "${name}"`);
  const config = loadConfig({ ...base, DATABASE_URL: new URL(name, POSTGRES_SERVER).toString(), ...env });
  let db: Database;
  try {
    db = await openDatabase(config, { migrate: true });
  } catch (err) {
    await adminQuery(`drop database if exists "${name}" with (force)`);
    throw err;
  }
  return {
    kind,
    config,
    db,
    async close() {
      await db.close(true);
      await adminQuery(`drop database if exists "${name}" with (force)`);
    },
  };
}
