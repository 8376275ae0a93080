/**
 * Inserting many rows inside the caller's transaction. SQLite runs one cached prepared statement per row on
 * the raw connection (the transaction's own connection: Kysely's SQLite driver has only that one);
 * PostgreSQL streams each batch with COPY FROM STDIN on the transaction's client (write-transaction.ts),
 * or sends multi-row INSERTs outside one.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sql, type Kysely } from 'kysely';
import { from as copyFrom } from 'pg-copy-streams';
import type pg from 'pg';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { SQLITE_FTS_INSERT_TRIGGER } from '../store/search-triggers.js';
import { copyClientOf } from '../store/write-transaction.js';
import { step, type ProgressSink } from './progress.js';

export type Row = Record<string, string | number | null>;

export interface BulkInserter {
  insert(table: keyof Database, rows: Row[]): Promise<void>;
}

const PG_PARAMS_PER_STATEMENT = 30_000;
/** Rows of COPY text built into one string before it is handed to the stream. */
const COPY_ROWS_PER_CHUNK = 1000;

// COPY's text format: tab between fields, newline after a row, \N for null, and a backslash escape for
// the four characters that would otherwise be read as structure.
const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function copyField(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value === 'number') return String(value);
  return COPY_SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c] as string) : value;
}

function* copyText(columns: string[], rows: Row[]): Generator<string> {
  for (let i = 0; i < rows.length; i += COPY_ROWS_PER_CHUNK) {
    let text = '';
    const end = Math.min(rows.length, i + COPY_ROWS_PER_CHUNK);
    for (let r = i; r < end; r++) {
      const row = rows[r] as Row;
      for (let c = 0; c < columns.length; c++) {
        if (c > 0) text += '\t';
        text += copyField(row[columns[c] as string]);
      }
      text += '\n';
    }
    yield text;
  }
}

/**
 * One COPY per batch: the load checks each batch against the store before writing it, on this same
 * client, so a COPY cannot stay open across batches. A bad value fails the COPY, and with it the transaction.
 */
function copyInserter(client: pg.PoolClient): BulkInserter {
  return {
    async insert(table, rows) {
      const first = rows[0];
      if (first === undefined) return;
      const columns = Object.keys(first);
      const copy = client.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
      await pipeline(Readable.from(copyText(columns, rows)), copy);
    },
  };
}

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
  const client = copyClientOf(trx);
  if (client !== null) return copyInserter(client);
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
 *
 * On PostgreSQL, a load into an empty catalogue drops the table's GIN (search) indexes and builds them
 * again once the rows are in: a GIN index built in one go costs about a third of one kept up row by row
 * (2.0 s against 5.8 s per 100,000 names here). DDL is transactional there too. Only into an empty
 * catalogue: dropping an index locks the table until the load commits, and with rows in it that would
 * hold up every server's catalogue reads for the whole load.
 */
export interface CatalogueBulk {
  insert(rows: Row[]): Promise<void>;
  /** Restores what the load set aside; reports a rebuild as its own section of the progress display. */
  finish(progress: ProgressSink): Promise<void>;
}

function postgresCatalogueBulk(trx: Kysely<Database>, bulk: BulkInserter): CatalogueBulk {
  let setAside: Promise<string[]> | null = null;
  const setAsideSearchIndexes = async (): Promise<string[]> => {
    const empty = (await trx.selectFrom('catalogue_items').select('master_item_id').limit(1).execute()).length === 0;
    if (!empty) return [];
    const indexes = await sql<{ name: string; definition: string }>`
      select indexname as name, indexdef as definition from pg_indexes
      where schemaname = current_schema() and tablename = 'catalogue_items' and indexdef like '% USING gin %'`.execute(trx);
    for (const index of indexes.rows) await sql`drop index ${sql.id(index.name)}`.execute(trx);
    return indexes.rows.map((index) => index.definition);
  };
  return {
    async insert(rows) {
      setAside ??= setAsideSearchIndexes();
      await setAside;
      await bulk.insert('catalogue_items', rows);
    },
    async finish(progress) {
      const definitions = setAside === null ? [] : await setAside;
      if (definitions.length === 0) return;
      await step(progress, 'search index', async () => {
        for (const definition of definitions) await sql.raw(definition).execute(trx);
      });
    },
  };
}

export function catalogueBulk(store: Store, bulk: BulkInserter, trx: Kysely<Database>): CatalogueBulk {
  const sqlite = store.sqlite;
  if (sqlite === null) {
    return copyClientOf(trx) !== null
      ? postgresCatalogueBulk(trx, bulk)
      : { insert: (rows) => bulk.insert('catalogue_items', rows), finish: async () => {} };
  }
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
    async finish() {
      sqlite.exec(SQLITE_FTS_INSERT_TRIGGER);
    },
  };
}

/** Items per statement on PostgreSQL, where one set-based statement does what SQLite does per item. */
const PG_CURRENT_CHUNK = 50_000;

/**
 * Brings current_prices in step with price_records for the given items: the record with the latest
 * scrape_date wins. `onChunk` hears the items done so far after each chunk, for a progress display.
 * In a PostgreSQL write transaction: DISTINCT ON over the (master_item_id, scrape_date) index, a chunk of
 * items per statement; otherwise one statement both dialects run, with a correlated max per item.
 */
export async function refreshCurrentPrices(
  trx: Kysely<Database>,
  masterItemIds: number[],
  onChunk: (done: number) => void = () => {},
): Promise<void> {
  const postgres = copyClientOf(trx) !== null;
  const chunk = postgres ? PG_CURRENT_CHUNK : 5000;
  for (let i = 0; i < masterItemIds.length; i += chunk) {
    const ids = masterItemIds.slice(i, i + chunk);
    const latest = postgres
      ? sql`select distinct on (r.master_item_id) r.master_item_id, r.upc, r.loose, r.cib, r.new, r.box_only, r.manual_only, r.scrape_date
            from price_records r
            where r.master_item_id = any(${ids}::bigint[])
            order by r.master_item_id, r.scrape_date desc`
      : sql`select r.master_item_id, r.upc, r.loose, r.cib, r.new, r.box_only, r.manual_only, r.scrape_date
            from price_records r
            where r.master_item_id in (${sql.join(ids)})
              and r.scrape_date = (select max(r2.scrape_date) from price_records r2 where r2.master_item_id = r.master_item_id)`;
    await sql`
      insert into current_prices (master_item_id, upc, loose, cib, new, box_only, manual_only, scrape_date)
      ${latest}
      on conflict (master_item_id) do update set
        upc = excluded.upc, loose = excluded.loose, cib = excluded.cib, new = excluded.new,
        box_only = excluded.box_only, manual_only = excluded.manual_only, scrape_date = excluded.scrape_date`.execute(trx);
    onChunk(i + ids.length);
  }
}
