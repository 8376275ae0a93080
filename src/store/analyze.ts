/**
 * Refreshes the planner's statistics after a bulk write. Without them PostgreSQL plans a freshly loaded
 * million-row table as if it held a few hundred rows (sequential scans where an index walk is right), and
 * SQLite keeps no statistics until asked.
 */
import { sql } from 'kysely';
import type { Store } from './database.js';

export const ANALYZE_AFTER_ROWS = 10_000;

export async function refreshStatistics(store: Store): Promise<void> {
  if (store.dialect === 'postgres') {
    await sql`analyze catalogue_items, price_records, current_prices, collection_items`.execute(store.db);
  } else {
    store.sqlite!.exec('ANALYZE');
  }
}
