/**
 * Rows of the CSV export, in batches, in the order of /prices. On SQLite the rows come from one statement
 * on a read-only connection of the export's own: better-sqlite3 is synchronous and an open iterator holds
 * its connection, so the shared connection stays free for other requests, and the export reads one
 * consistent snapshot. On PostgreSQL, keyset pages on masterItemId through the pool.
 */
import type { Store } from '../database.js';
import { openSqliteConnection } from '../database.js';
import { priceColumns, pricesQuery, type PriceFilters, type PriceRow } from './price.repository.js';

/** Rows per batch: small, so that the consumer can yield to other requests often (see csvChunks). */
export const EXPORT_BATCH_ROWS = 1000;

/** The columns of the export, in the order of the CSV (and of priceColumns, so SQLite rows come as arrays). */
export const EXPORT_COLUMNS = [
  'masterItemId', 'name', 'slug', 'platform', 'category', 'upc',
  'loose', 'cib', 'new', 'boxOnly', 'manualOnly', 'scrapeDate',
] as const satisfies ReadonlyArray<keyof PriceRow>;

/** One row of the export: its values in EXPORT_COLUMNS order. */
export type ExportRow = Array<string | number | null>;

async function* sqliteBatches(store: Store, path: string, filters: PriceFilters): AsyncGenerator<ExportRow[]> {
  const compiled = pricesQuery(store.db, 'sqlite', filters).select(priceColumns).orderBy('c.master_item_id').compile();
  const conn = openSqliteConnection(path, { readonly: true });
  try {
    // Raw mode: each row an array in select order, with no object to build per row.
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
  } finally {
    conn.close();
  }
}

async function* keysetBatches(store: Store, filters: PriceFilters): AsyncGenerator<ExportRow[]> {
  let after = 0;
  for (;;) {
    const batch = await pricesQuery(store.db, store.dialect, filters)
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

export function exportPriceBatches(store: Store, filters: PriceFilters): AsyncGenerator<ExportRow[]> {
  return store.sqlitePath !== null && store.sqlitePath !== ':memory:'
    ? sqliteBatches(store, store.sqlitePath, filters)
    : keysetBatches(store, filters);
}
