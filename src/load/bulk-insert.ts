/**
 * Inserting many rows inside the caller's transaction. SQLite runs one cached prepared statement per row on
 * the raw connection (the transaction's own connection: Kysely's SQLite driver has only that one);
 * PostgreSQL streams each batch with COPY FROM STDIN on the transaction's client (write-transaction.ts),
 * or sends multi-row INSERTs outside one.
 */
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { sql, type Kysely } from 'kysely';
import { from as copyFrom, type CopyStreamQuery } from 'pg-copy-streams';
import type pg from 'pg';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { SQLITE_FTS_INSERT_TRIGGER } from '../store/search-triggers.js';
import { closeCopy, copyClientOf, holdCopy, type OpenCopy } from '../store/write-transaction.js';
import { step, type ProgressSink } from './progress.js';

export type Row = Record<string, string | number | null>;

export interface BulkInserter {
  insert(table: keyof Database, rows: Row[]): Promise<void>;
  /** Waits until every row handed to insert() is written (or refused). */
  flush(): Promise<void>;
}

const PG_PARAMS_PER_STATEMENT = 30_000;

// COPY's text format: tab between fields, newline after a row, \N for null, and a backslash escape for
// the four characters that would otherwise be read as structure.
const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function copyField(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value === 'number') return String(value);
  return COPY_SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c] as string) : value;
}

/** The rows as one piece of COPY text: one string built in place, no stream of small pieces. */
export function copyText(columns: string[], rows: Row[]): string {
  let text = '';
  for (const row of rows) {
    for (let c = 0; c < columns.length; c++) {
      if (c > 0) text += '\t';
      text += copyField(row[columns[c] as string]);
    }
    text += '\n';
  }
  return text;
}

/**
 * One COPY into one table, left open across batches: insert() hands a batch to the socket and returns
 * while the backend is still taking it in, so the load makes the next batch meanwhile (the backend and
 * Node each have a core). At most one batch waits in Node's buffers: the next insert waits for it first.
 */
class CopyIn implements OpenCopy {
  private readonly stream: CopyStreamQuery;
  private readonly done: Promise<void>;
  private drained: Promise<void> = Promise.resolve();
  private error: Error | null = null;

  constructor(
    client: pg.PoolClient,
    readonly target: string,
    private readonly onClose: (copy: CopyIn) => void,
  ) {
    // Held open for a whole section, the COPY outlives any per-statement read timeout of the pool (meant
    // for a server's requests; pg reads the query's own before the pool's, and setTimeout takes 2^31-1 ms at most).
    this.stream = client.query(Object.assign(copyFrom(`COPY ${target} FROM STDIN`), { query_timeout: 2 ** 31 - 1 }));
    this.stream.on('error', (error: Error) => (this.error ??= error));
    this.done = finished(this.stream);
    // Read by close() or by the next write; never an unhandled rejection meanwhile.
    this.done.catch(() => {});
  }

  async write(text: string): Promise<void> {
    await Promise.race([this.drained, this.done]);
    if (this.error !== null) throw this.error;
    // Every event loop turn lets the socket take more of it; the loop turns while the next batch is made.
    this.drained = this.stream.write(text) ? Promise.resolve() : once(this.stream, 'drain').then(() => {});
    this.drained.catch(() => {});
  }

  async close(): Promise<void> {
    this.onClose(this);
    if (this.error === null) this.stream.end();
    await this.done;
  }
}

/**
 * COPY on the transaction's client, one per table and column list, held open across batches (holdCopy)
 * until the load runs any other query: the checks of a batch against the store, or the next section. A
 * bad value fails the COPY, and with it the transaction.
 */
function copyInserter(client: pg.PoolClient, trx: Kysely<Database>): BulkInserter {
  let open: CopyIn | null = null;
  return {
    async insert(table, rows) {
      const first = rows[0];
      if (first === undefined) return;
      const columns = Object.keys(first);
      const target = `${table} (${columns.join(', ')})`;
      if (open === null || open.target !== target) {
        await closeCopy(trx);
        // Closed by another query of the load (a check of a batch against the store): the next batch opens a new one.
        open = new CopyIn(client, target, (closed) => {
          if (open === closed) open = null;
        });
        holdCopy(trx, open);
      }
      await open.write(copyText(columns, rows));
    },
    async flush() {
      await closeCopy(trx);
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
      async flush() {},
    };
  }
  const client = copyClientOf(trx);
  if (client !== null) return copyInserter(client, trx);
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
    async flush() {},
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
  /** On PostgreSQL, whether the catalogue was empty when this load began writing it (known after the first insert). */
  startedEmpty(): boolean;
  /** Restores what the load set aside; reports a rebuild as its own section of the progress display. */
  finish(progress: ProgressSink): Promise<void>;
}

function postgresCatalogueBulk(trx: Kysely<Database>, bulk: BulkInserter): CatalogueBulk {
  let setAside: Promise<string[]> | null = null;
  let empty = false;
  const setAsideSearchIndexes = async (): Promise<string[]> => {
    empty = (await trx.selectFrom('catalogue_items').select('master_item_id').limit(1).execute()).length === 0;
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
    startedEmpty: () => empty,
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
      : { insert: (rows) => bulk.insert('catalogue_items', rows), startedEmpty: () => false, finish: async () => {} };
  }
  sqlite.exec('DROP TRIGGER IF EXISTS catalogue_fts_insert');
  return {
    startedEmpty: () => false,
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

/**
 * A load into an empty catalogue on PostgreSQL: the foreign keys from `tables` to the catalogue are dropped
 * while their rows are copied in, and the returned function adds them back, which checks every row in one
 * join instead of one lookup (and row lock on the item) per row copied. Those tables are empty when the
 * catalogue is, and the catalogue is locked by its search index being set aside already, so nobody waits
 * on them longer than on the catalogue. DDL is transactional: a refused load gets its keys back too. The
 * load has checked every row against the catalogue itself; adding a key back fails the load if one is wrong.
 */
export async function setAsideCatalogueKeys(trx: Kysely<Database>, tables: Array<keyof Database>): Promise<() => Promise<void>> {
  const keys = await sql<{ table: string; name: string; definition: string }>`
    select conrelid::regclass::text as table, conname as name, pg_get_constraintdef(oid) as definition
    from pg_constraint
    where contype = 'f' and confrelid = 'catalogue_items'::regclass and conrelid = any(${tables}::regclass[])`.execute(trx);
  for (const key of keys.rows) await sql`alter table ${sql.raw(key.table)} drop constraint ${sql.id(key.name)}`.execute(trx);
  return async () => {
    for (const key of keys.rows) {
      await sql`alter table ${sql.raw(key.table)} add constraint ${sql.id(key.name)} ${sql.raw(key.definition)}`.execute(trx);
    }
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
  options: { storeHadNoPrices?: boolean } = {},
): Promise<void> {
  const postgres = copyClientOf(trx) !== null;
  if (postgres && options.storeHadNoPrices === true) return insertCurrentPrices(trx, masterItemIds, onChunk);
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

/**
 * refreshCurrentPrices when the store held no price records before this transaction (a load into an empty
 * catalogue): every record is of the given items and current_prices is empty, so each chunk is a range of
 * the sorted ids read in index order (backwards: latest scrape first), inserted with no conflict to check.
 */
async function insertCurrentPrices(trx: Kysely<Database>, masterItemIds: number[], onChunk: (done: number) => void): Promise<void> {
  const sorted = Float64Array.from(masterItemIds).sort();
  for (let i = 0; i < sorted.length; i += PG_CURRENT_CHUNK) {
    const end = Math.min(sorted.length, i + PG_CURRENT_CHUNK);
    await sql`
      insert into current_prices (master_item_id, upc, loose, cib, new, box_only, manual_only, scrape_date)
      select distinct on (r.master_item_id) r.master_item_id, r.upc, r.loose, r.cib, r.new, r.box_only, r.manual_only, r.scrape_date
      from price_records r
      where r.master_item_id between ${sorted[i]} and ${sorted[end - 1]}
      order by r.master_item_id desc, r.scrape_date desc`.execute(trx);
    onChunk(end);
  }
}
