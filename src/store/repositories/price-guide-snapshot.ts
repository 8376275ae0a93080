/**
 * The unfiltered export read as one consistent snapshot, together with the data version that snapshot
 * shows: what the price guide file (src/export/price-guide.ts) is written from, and named by. Reading the
 * version and the rows in one read transaction is what makes the name true: a load or import committing
 * meanwhile lands in neither.
 */
import type { Kysely } from 'kysely';
import type { Store } from '../database.js';
import { openSqliteConnection } from '../database.js';
import { dataVersionQuery } from '../read-cache.js';
import { keysetExportBatches, sqliteExportBatches, type ExportRow } from './price-export.js';

export type SnapshotWork<T> = (version: number, batches: AsyncGenerator<ExportRow[]>) => Promise<T>;

async function sqliteSnapshot<T>(store: Store, path: string, work: SnapshotWork<T>): Promise<T> {
  const conn = openSqliteConnection(path, { readonly: true });
  try {
    // A deferred read transaction: its snapshot starts at the first read and holds for both statements.
    conn.exec('BEGIN');
    const version = Number(conn.prepare('select version from data_version where id = 1').pluck().get());
    return await work(version, sqliteExportBatches(conn, store.db, {}));
  } finally {
    if (conn.inTransaction) conn.exec('COMMIT');
    conn.close();
  }
}

/** Runs `work` over the unfiltered export's rows as of one snapshot, and the data version of that snapshot. */
export async function readPriceGuideSnapshot<T>(store: Store, work: SnapshotWork<T>): Promise<T> {
  if (store.dialect === 'sqlite') {
    if (store.sqlitePath === null || store.sqlitePath === ':memory:') throw new Error('price guide: an in-memory store has no file to read a snapshot from');
    return sqliteSnapshot(store, store.sqlitePath, work);
  }
  // Repeatable read: every keyset page sees the data as of the transaction's first query, the version read.
  return store.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (trx) => {
      const row = await dataVersionQuery(trx).executeTakeFirst();
      // Pages of the request path's size, so that each stays well inside the pool's 1.5 s per-query limit
      // (the writer shares the serving pool) even on a busy machine.
      return work(Number(row?.version ?? 0), keysetExportBatches(trx, 'postgres', {}));
    });
}

/**
 * Tells one store from another, so that files written for one are never served for another sharing the
 * directory (a deleted and re-seeded SQLite file starts again at data version 1): the time the store's
 * first migration ran, which Kysely records.
 */
export async function storeIdentity(store: Store): Promise<string> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kysely's own table, not part of the schema type
  const row = (await (store.db as Kysely<any>)
    .selectFrom('kysely_migration')
    .select('timestamp')
    .where('name', '=', '0001-initial')
    .executeTakeFirst()) as { timestamp: string } | undefined;
  return `${store.dialect}:${row?.timestamp ?? 'unknown'}`;
}
