/**
 * Reads the published catalogue and the priced ids from the store into a SearchIndex, in one consistent
 * snapshot tagged with the data version it saw, a slice at a time: `pause` is awaited every few hundred
 * rows and yields to the event loop when the slice has run long enough, so that requests keep being
 * served while a million items are read.
 *
 * SQLite: a read-only connection of its own inside one read transaction (WAL gives it a snapshot; the
 * shared connection stays free, as for the export). PostgreSQL: one REPEATABLE READ transaction reading
 * keyset pages. An in-memory SQLite store (tests) is read in pages on its only connection, and the build
 * is refused if the data version moved meanwhile.
 */
import { sql, type Kysely } from 'kysely';
import { openSqliteConnection, type Store } from '../database.js';
import type { Database } from '../schema.js';
import { dataVersionQuery } from '../read-cache.js';
import type { SearchIndex } from './search-index.js';
import { SearchIndexBuilder } from './search-index-builder.js';

/** Rows between two checks of the slice's time. */
const ROWS_PER_CHECK = 256;
/** Rows per keyset page on PostgreSQL. */
const PAGE_ROWS = 10_000;

export class DataVersionMovedError extends Error {
  constructor() {
    super('the data changed while the search index was read');
    this.name = 'DataVersionMovedError';
  }
}

type ItemRow = [id: number, searchName: string, platformKey: string, categoryKey: string];

const ITEMS_SQL = `select master_item_id, search_name, platform_key, category_key from catalogue_items
  where status = 'PUBLISHED' order by master_item_id`;
const PRICED_SQL = 'select master_item_id from current_prices order by master_item_id';
const VERSION_SQL = 'select version from data_version where id = 1';

export async function readSearchIndex(store: Store, pause: () => Promise<void>): Promise<SearchIndex> {
  if (store.sqlitePath !== null && store.sqlitePath !== ':memory:') return readSqliteSnapshot(store.sqlitePath, pause);
  if (store.sqlite !== null) return readInPages(store.db, pause, true);
  return store.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      await sql`set transaction read only`.execute(trx);
      return readInPages(trx, pause, false);
    });
}

async function readSqliteSnapshot(path: string, pause: () => Promise<void>): Promise<SearchIndex> {
  const conn = openSqliteConnection(path, { readonly: true });
  try {
    conn.exec('begin');
    const version = Number(conn.prepare(VERSION_SQL).pluck().get());
    const builder = new SearchIndexBuilder();
    let n = 0;
    for (const row of conn.prepare(ITEMS_SQL).raw(true).iterate() as IterableIterator<ItemRow>) {
      builder.addItem(Number(row[0]), row[1], row[2], row[3]);
      if (++n % ROWS_PER_CHECK === 0) await pause();
    }
    for (const id of conn.prepare(PRICED_SQL).pluck().iterate() as IterableIterator<number>) {
      builder.addPriced(Number(id));
      if (++n % ROWS_PER_CHECK === 0) await pause();
    }
    conn.exec('commit');
    return await builder.build(version, pause);
  } finally {
    conn.close();
  }
}

async function readInPages(db: Kysely<Database>, pause: () => Promise<void>, checkVersionAfter: boolean): Promise<SearchIndex> {
  const readVersion = async () => Number((await dataVersionQuery(db).executeTakeFirstOrThrow()).version);
  const version = await readVersion();
  const builder = new SearchIndexBuilder();
  let after = 0;
  let n = 0;
  for (;;) {
    const rows = await db
      .selectFrom('catalogue_items')
      .select(['master_item_id', 'search_name', 'platform_key', 'category_key'])
      .where('status', '=', 'PUBLISHED')
      .where('master_item_id', '>', after)
      .orderBy('master_item_id')
      .limit(PAGE_ROWS)
      .execute();
    for (const row of rows) {
      builder.addItem(Number(row.master_item_id), row.search_name, row.platform_key, row.category_key);
      if (++n % ROWS_PER_CHECK === 0) await pause();
    }
    if (rows.length < PAGE_ROWS) break;
    after = Number(rows[rows.length - 1]!.master_item_id);
  }
  after = 0;
  for (;;) {
    const rows = await db
      .selectFrom('current_prices')
      .select('master_item_id')
      .where('master_item_id', '>', after)
      .orderBy('master_item_id')
      .limit(PAGE_ROWS)
      .execute();
    for (const row of rows) builder.addPriced(Number(row.master_item_id));
    await pause();
    if (rows.length < PAGE_ROWS) break;
    after = Number(rows[rows.length - 1]!.master_item_id);
  }
  if (checkVersionAfter && (await readVersion()) !== version) throw new DataVersionMovedError();
  return builder.build(version, pause);
}
