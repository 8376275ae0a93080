/**
 * Rows of the CSV export, in batches, in the order of /prices. On SQLite the rows come from one statement
 * on a read-only connection of the export's own: better-sqlite3 is synchronous and an open iterator holds
 * its connection, so the shared connection stays free for other requests, and the export reads one
 * consistent snapshot. On PostgreSQL, keyset pages on masterItemId through the pool.
 */
import type { Store } from '../database.js';
import { openSqliteConnection } from '../database.js';
import { priceColumns, pricesQuery, type PriceFilters, type PriceRow } from './price.repository.js';

export const EXPORT_BATCH_ROWS = 2000;

async function* sqliteBatches(store: Store, path: string, filters: PriceFilters): AsyncGenerator<PriceRow[]> {
  const compiled = pricesQuery(store.db, 'sqlite', filters).select(priceColumns).orderBy('c.master_item_id').compile();
  const conn = openSqliteConnection(path, { readonly: true });
  try {
    const rows = conn.prepare(compiled.sql).iterate(...(compiled.parameters as unknown[])) as IterableIterator<PriceRow>;
    try {
      let batch: PriceRow[] = [];
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

async function* keysetBatches(store: Store, filters: PriceFilters): AsyncGenerator<PriceRow[]> {
  let after = 0;
  for (;;) {
    const batch = await pricesQuery(store.db, store.dialect, filters)
      .select(priceColumns)
      .where('c.master_item_id', '>', after)
      .orderBy('c.master_item_id')
      .limit(EXPORT_BATCH_ROWS)
      .execute();
    if (batch.length > 0) yield batch;
    if (batch.length < EXPORT_BATCH_ROWS) return;
    after = (batch[batch.length - 1] as PriceRow).masterItemId;
  }
}

export function exportPriceBatches(store: Store, filters: PriceFilters): AsyncGenerator<PriceRow[]> {
  return store.sqlitePath !== null && store.sqlitePath !== ':memory:'
    ? sqliteBatches(store, store.sqlitePath, filters)
    : keysetBatches(store, filters);
}
