/**
 * The catalogue and the current prices read whole, a page at a time in id order: what item answers' priming
 * reads (src/http/api/answer-priming.ts). Run as prepared statements (prepared-query.ts), as the single-item
 * reads are (hot-queries.ts), so that a page's rows have exactly the shape of those reads' rows: the same
 * driver path, the same type parsing, on both dialects.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Store } from './database.js';
import { prepareQuery, type PreparedQuery } from './prepared-query.js';
import { catalogueCountQuery, cataloguePageQuery, type CatalogueItem } from './repositories/catalogue.repository.js';
import { priceCountQuery, pricePageQuery, type PriceRow } from './repositories/price.repository.js';

export interface ItemPages<Row> {
  /** How many rows there are, counted no further than `upTo`. */
  countUpTo(upTo: number): Promise<number>;
  /** At most `limit` rows of ids above `afterId`, in id order. */
  after(afterId: number, limit: number): Promise<Row[]>;
  /** The id of a row. */
  idOf(row: Row): number;
}

/**
 * SQLite counts synchronously: one count of a 20,000-item catalogue held the event loop 7-9 ms, and 64 ms as
 * the first read after a load; counted 2,000 ids a slice, with a turn of the loop between slices, no slice
 * holds it long. PostgreSQL counts in one statement, which holds nothing.
 */
const SQLITE_COUNT_SLICE = 2000;

type CountSlice = PreparedQuery<[afterId: number, limit: number], { rows: number | string | bigint; lastId: number | string | bigint | null }>;

function countUpTo(store: Store, slice: CountSlice): (upTo: number) => Promise<number> {
  const sliceRows = store.dialect === 'sqlite' ? SQLITE_COUNT_SLICE : Number.POSITIVE_INFINITY;
  return async (upTo) => {
    let counted = 0;
    for (let afterId = 0; counted < upTo; ) {
      const limit = Math.min(sliceRows, upTo - counted);
      const row = (await slice(afterId, limit))[0];
      const rows = Number(row?.rows ?? 0);
      counted += rows;
      if (rows < limit || row?.lastId === null || row?.lastId === undefined) break;
      afterId = Number(row.lastId);
      await nextTurn();
    }
    return counted;
  };
}

/** Every published catalogue item. */
export function cataloguePages(store: Store): ItemPages<CatalogueItem> {
  const count = prepareQuery(store, 2, (db, afterId: number, limit: number) => catalogueCountQuery(db, afterId, limit));
  const page = prepareQuery(store, 2, (db, afterId: number, limit: number) => cataloguePageQuery(db, afterId, limit));
  return { countUpTo: countUpTo(store, count), after: page, idOf: (row) => Number(row.masterItemId) };
}

/** Every current price of a published item. */
export function pricePages(store: Store): ItemPages<PriceRow> {
  const count = prepareQuery(store, 2, (db, afterId: number, limit: number) => priceCountQuery(db, afterId, limit));
  const page = prepareQuery(store, 2, (db, afterId: number, limit: number) => pricePageQuery(db, afterId, limit));
  return { countUpTo: countUpTo(store, count), after: page, idOf: (row) => Number(row.masterItemId) };
}
