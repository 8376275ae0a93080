/**
 * Rows of the CSV export, in batches, in the order of /prices. On SQLite the rows come from one statement
 * on a read-only connection of the export's own: better-sqlite3 is synchronous and an open iterator holds
 * its connection, so the shared connection stays free for other requests, and the export reads one
 * consistent snapshot. On PostgreSQL, keyset pages on masterItemId through the pool.
 */
import type { Kysely } from 'kysely';
import { EXPORT_COLUMNS } from '../../domain/export-columns.js';
import type { Store } from '../database.js';
import type { Dialect } from '../dialect.js';
import { openSqliteConnection } from '../database.js';
import type { Database } from '../schema.js';
import { priceColumns, pricesQuery, type PriceFilters, type PriceRow } from './price.repository.js';

// The list itself lives in the domain; the store's other readers of export rows (the search index, the
// import) find it next to the rows.
export { EXPORT_COLUMNS };

/** Rows per batch: small, so that the consumer can yield to other requests often (see csvChunks). */
export const EXPORT_BATCH_ROWS = 1000;

/** One row of the export: its values in EXPORT_COLUMNS order. */
export type ExportRow = Array<string | number | null>;

type SqliteConnection = ReturnType<typeof openSqliteConnection>;

/**
 * SQLite: the export's rows from one statement on `conn`, in batches. Raw mode: each row comes as an array
 * in select order (priceColumns' order, the export's), with no object to build per row. The statement is
 * stepped only when the consumer starts reading, and returned however it stops.
 */
export async function* sqliteExportBatches(conn: SqliteConnection, db: Kysely<Database>, filters: PriceFilters): AsyncGenerator<ExportRow[]> {
  const compiled = pricesQuery(db, 'sqlite', filters).select(priceColumns).orderBy('c.master_item_id').compile();
  const rows = conn.prepare(compiled.sql).raw(true).iterate(...(compiled.parameters as unknown[])) as IterableIterator<ExportRow>;
  try {
    let batch: ExportRow[] = [];
    for (const row of rows) {
      batch.push(row);
      if (batch.length === EXPORT_BATCH_ROWS) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  } finally {
    rows.return?.();
  }
}

/** The export's rows in keyset pages on masterItemId, each page one query through `db` (the pool, or a transaction). */
export async function* keysetExportBatches(db: Kysely<Database>, dialect: Dialect, filters: PriceFilters): AsyncGenerator<ExportRow[]> {
  let after = 0;
  for (;;) {
    const batch = await pricesQuery(db, dialect, filters)
      .select(priceColumns)
      // On both sides of the join: PostgreSQL does not carry a range across it, and would skip from the start.
      .where('c.master_item_id', '>', after)
      .where('p.master_item_id', '>', after)
      .orderBy('c.master_item_id')
      .limit(EXPORT_BATCH_ROWS)
      .execute();
    if (batch.length > 0) yield batch.map((row) => EXPORT_COLUMNS.map((column) => row[column]));
    if (batch.length < EXPORT_BATCH_ROWS) return;
    after = (batch[batch.length - 1] as PriceRow).masterItemId;
  }
}

/** On SQLite the export has a read-only connection of its own, closed however the consumer stops. */
async function* sqliteBatches(store: Store, path: string, filters: PriceFilters): AsyncGenerator<ExportRow[]> {
  const conn = openSqliteConnection(path, { readonly: true });
  try {
    yield* sqliteExportBatches(conn, store.db, filters);
  } finally {
    conn.close();
  }
}

export function exportPriceBatches(store: Store, filters: PriceFilters): AsyncGenerator<ExportRow[]> {
  return store.sqlitePath !== null && store.sqlitePath !== ':memory:'
    ? sqliteBatches(store, store.sqlitePath, filters)
    : keysetExportBatches(store.db, store.dialect, filters);
}
