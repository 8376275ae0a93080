/**
 * A write transaction for operator commands (load, import, seed). On SQLite it starts with BEGIN IMMEDIATE:
 * a deferred transaction that reads first cannot later upgrade to a writer while running servers keep
 * committing meter counts (SQLITE_BUSY_SNAPSHOT); taking the write lock first lets busy_timeout queue
 * it fairly. Operator commands own their process, so nothing else runs on the connection meanwhile.
 *
 * On PostgreSQL the transaction runs on one client taken from the pool, which bulk writes can reach
 * (copyClientOf) to stream rows with COPY inside the same transaction: a refused load still leaves nothing.
 * A bulk write may leave its COPY open across batches (holdCopy), so the backend takes in one batch while
 * the load makes the next; every other query of the transaction, and its commit or rollback, closes it first.
 */
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import type { Store } from './database.js';
import type { Database } from './schema.js';

/** A COPY still taking rows: `close` ends it and settles once the backend has taken them (or refused them). */
export interface OpenCopy {
  close(): Promise<void>;
}

interface CopyChannel {
  client: pg.PoolClient;
  open: OpenCopy | null;
}

const copyChannels = new WeakMap<Kysely<Database>, CopyChannel>();

/** The PostgreSQL client a write transaction's queries run on, or null (SQLite, or not a write transaction). */
export function copyClientOf(db: Kysely<Database>): pg.PoolClient | null {
  return copyChannels.get(db)?.client ?? null;
}

/**
 * Leaves `copy` open on the transaction's client: the next query of the transaction closes it before it
 * runs (a client runs one statement at a time), and fails with the COPY's error if the backend refused it.
 */
export function holdCopy(db: Kysely<Database>, copy: OpenCopy): void {
  const channel = copyChannels.get(db);
  if (channel === undefined) throw new Error('holdCopy outside a PostgreSQL write transaction');
  if (channel.open !== null && channel.open !== copy) throw new Error('another COPY is still open');
  channel.open = copy;
}

/** Closes the COPY held open on the transaction's client, if any. */
export async function closeCopy(db: Kysely<Database>): Promise<void> {
  const channel = copyChannels.get(db);
  if (channel !== undefined) await settle(channel);
}

async function settle(channel: CopyChannel): Promise<void> {
  const open = channel.open;
  if (open === null) return;
  channel.open = null;
  await open.close();
}

async function withPostgresClient<T>(pool: pg.Pool, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const channel: CopyChannel = { client, open: null };
  // Kysely over this one client: every query of the work, and COPY beside them, share its transaction.
  const query = client.query.bind(client) as PostgresPoolClient['query'];
  const connection: PostgresPoolClient = {
    // A statement waits for a COPY left open to close; a cursor (a stream of rows) is never run on a load's
    // transaction, so it goes straight through.
    query: ((sqlOrCursor: string, parameters: ReadonlyArray<unknown>) =>
      typeof sqlOrCursor === 'string'
        ? settle(channel).then(() => query(sqlOrCursor, parameters))
        : query(sqlOrCursor)) as PostgresPoolClient['query'],
    release: () => {},
  };
  const single: PostgresPool = { connect: async () => connection, end: async () => {} };
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: single }) });
  copyChannels.set(db, channel);
  let broken: Error | undefined;
  try {
    await client.query('begin');
    const result = await work(db);
    await settle(channel);
    await client.query('commit');
    return result;
  } catch (error) {
    try {
      // A COPY left open by the failed work: ended (its rows go with the rollback), its own error ignored.
      await settle(channel).catch(() => {});
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

/** The work's result, carried out of a transaction that must not commit (a dry run). */
class RolledBack {
  constructor(readonly value: unknown) {}
}

/**
 * Runs `work` in one write transaction, committed when it returns and rolled back when it throws. With
 * `rollback` (a dry run) it is rolled back when it returns too, and its result is returned: the work runs
 * exactly as a real one, every check of the store included, and nothing of it is kept.
 */
export async function withWriteTransaction<T>(
  store: Store,
  work: (db: Kysely<Database>) => Promise<T>,
  options: { rollback?: boolean } = {},
): Promise<T> {
  if (options.rollback !== true) return inTransaction(store, work);
  try {
    await inTransaction(store, async (db) => {
      throw new RolledBack(await work(db));
    });
  } catch (error) {
    if (error instanceof RolledBack) return error.value as T;
    throw error;
  }
  throw new Error('unreachable: a rolled-back transaction returned');
}

async function inTransaction<T>(store: Store, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
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
