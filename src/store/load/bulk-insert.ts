/**
 * Inserting many rows inside the caller's transaction. SQLite runs one cached prepared statement per row on
 * the raw connection (the transaction's own connection: Kysely's SQLite driver has only that one);
 * PostgreSQL sends multi-row INSERTs, a few hundred rows each.
 */
import { sql, type Kysely } from 'kysely';
import type { Store } from '../database.js';
import { SQLITE_FTS_INSERT_TRIGGER } from '../migrations/0001-initial.js';
import type { Database } from '../schema.js';

export type Row = Record<string, string | number | null>;

export interface BulkInserter {
  insert(table: keyof Database, rows: Row[]): Promise<void>;
}

const PG_PARAMS_PER_STATEMENT = 30_000;

export function bulkInserter(store: Store, trx: Kysely<Database>): BulkInserter {
  const sqlite = store.sqlite;
  if (sqlite !== null) {
    const statements = new Map<string, import('better-sqlite3').Statement>();
    return {
      async insert(table, rows) {
        const first = rows[0];
        if (first === undefined) return;
        const columns = Object.keys(first);
        const cacheKey = `${table}(${columns.join(',')})`;
        let statement = statements.get(cacheKey);
        if (statement === undefined) {
          statement = sqlite.prepare(
            `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
          );
          statements.set(cacheKey, statement);
        }
        for (const row of rows) statement.run(row);
      },
    };
  }
  return {
    async insert(table, rows) {
      const first = rows[0];
      if (first === undefined) return;
      const perStatement = Math.max(1, Math.floor(PG_PARAMS_PER_STATEMENT / Object.keys(first).length));
      for (let i = 0; i < rows.length; i += perStatement) {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the table name is a runtime value; rows are checked by the caller
        await (trx as Kysely<any>).insertInto(table).values(rows.slice(i, i + perStatement)).execute();
      }
    },
  };
}

/**
 * Catalogue rows in bulk. On SQLite the per-row FTS trigger costs four times the insert itself, so for the
 * load it is dropped, each batch is indexed with one INSERT ... SELECT, and the trigger is put back before
 * the transaction commits (DDL is transactional in SQLite: a refused load restores it too).
 */
export interface CatalogueBulk {
  insert(rows: Row[]): Promise<void>;
  finish(): void;
}

export function catalogueBulk(store: Store, bulk: BulkInserter): CatalogueBulk {
  const sqlite = store.sqlite;
  if (sqlite === null) return { insert: (rows) => bulk.insert('catalogue_items', rows), finish: () => {} };
  sqlite.exec('DROP TRIGGER IF EXISTS catalogue_fts_insert');
  return {
    async insert(rows) {
      await bulk.insert('catalogue_items', rows);
      const ids = rows.map((r) => r.master_item_id as number);
      for (let i = 0; i < ids.length; i += 5000) {
        const part = ids.slice(i, i + 5000);
        sqlite
          .prepare(
            `INSERT INTO catalogue_fts(rowid, search_name) SELECT master_item_id, search_name FROM catalogue_items
             WHERE master_item_id IN (${part.map(() => '?').join(',')})`,
          )
          .run(...part);
      }
    },
    finish() {
      sqlite.exec(SQLITE_FTS_INSERT_TRIGGER);
    },
  };
}

/**
 * Brings current_prices in step with price_records for the given items: the record with the latest
 * scrape_date wins. The same statement runs on both dialects. `onChunk` hears the items done so far after
 * each chunk, for a progress display.
 */
export async function refreshCurrentPrices(
  trx: Kysely<Database>,
  masterItemIds: number[],
  onChunk: (done: number) => void = () => {},
): Promise<void> {
  for (let i = 0; i < masterItemIds.length; i += 5000) {
    const ids = masterItemIds.slice(i, i + 5000);
    await sql`
      insert into current_prices (master_item_id, upc, loose, cib, new, box_only, manual_only, scrape_date)
      select r.master_item_id, r.upc, r.loose, r.cib, r.new, r.box_only, r.manual_only, r.scrape_date
      from price_records r
      where r.master_item_id in (${sql.join(ids)})
        and r.scrape_date = (select max(r2.scrape_date) from price_records r2 where r2.master_item_id = r.master_item_id)
      on conflict (master_item_id) do update set
        upc = excluded.upc, loose = excluded.loose, cib = excluded.cib, new = excluded.new,
        box_only = excluded.box_only, manual_only = excluded.manual_only, scrape_date = excluded.scrape_date`.execute(trx);
    onChunk(i + ids.length);
  }
}
