/**
 * A write transaction for operator commands (load, import, seed). On SQLite it starts with BEGIN IMMEDIATE:
 * a deferred transaction that reads first cannot later upgrade to a writer while running servers keep
 * committing meter counts (SQLITE_BUSY_SNAPSHOT); taking the write lock first lets busy_timeout queue
 * it fairly. Operator commands own their process, so nothing else runs on the connection meanwhile.
 *
 * On PostgreSQL the transaction runs on one client taken from the pool, which bulk writes can reach
 * (copyClientOf) to stream rows with COPY inside the same transaction: a refused load still leaves nothing.
 */
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import type { Store } from './database.js';
import type { Database } from './schema.js';

const copyClients = new WeakMap<Kysely<Database>, pg.PoolClient>();

/** The PostgreSQL client a write transaction's queries run on, or null (SQLite, or not a write transaction). */
export function copyClientOf(db: Kysely<Database>): pg.PoolClient | null {
  return copyClients.get(db) ?? null;
}

async function withPostgresClient<T>(pool: pg.Pool, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // Kysely over this one client: every query of the work, and COPY beside them, share its transaction.
  const connection: PostgresPoolClient = {
    query: client.query.bind(client) as PostgresPoolClient['query'],
    release: () => {},
  };
  const single: PostgresPool = { connect: async () => connection, end: async () => {} };
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: single }) });
  copyClients.set(db, client);
  let broken: Error | undefined;
  try {
    await client.query('begin');
    const result = await work(db);
    await client.query('commit');
    return result;
  } catch (error) {
    try {
      await client.query('rollback');
    } catch (rollbackError) {
      // The connection itself failed: it goes back to the pool to be discarded, not reused.
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.release(broken);
    await db.destroy();
  }
}

export async function withWriteTransaction<T>(store: Store, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const sqlite = store.sqlite;
  if (sqlite === null) {
    if (store.pgPool === null) return store.db.transaction().execute(work);
    return withPostgresClient(store.pgPool, work);
  }
  sqlite.exec('BEGIN IMMEDIATE');
  try {
    const result = await work(store.db);
    sqlite.exec('COMMIT');
    return result;
  } catch (error) {
    if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
    throw error;
  }
}
