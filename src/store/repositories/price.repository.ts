/** Current prices: the latest record by scrape date of each published item. */
import { EXPORT_COLUMNS, type ExportColumn } from '../../domain/export-columns.js';
import type { PriceRow } from '../../domain/resources.js';
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';
import type { Database } from '../schema.js';
import { countDirectly, filterKey, itemFilterConditions, type FilteredList, type ItemFilters } from './catalogue.repository.js';
import { countRows, pageRows, toPage } from './page.js';

export type { PriceRow };

export type PriceFilters = Omit<ItemFilters, 'category'>;

/** Where each field of a price row is read from. */
const PRICE_SOURCES = {
  masterItemId: 'c.master_item_id',
  name: 'c.name',
  slug: 'c.slug',
  platform: 'c.platform',
  category: 'c.category',
  upc: 'p.upc',
  loose: 'p.loose',
  cib: 'p.cib',
  new: 'p.new',
  boxOnly: 'p.box_only',
  manualOnly: 'p.manual_only',
  scrapeDate: 'p.scrape_date',
} as const satisfies Record<keyof PriceRow, string>;

/** One column's select expression, `<source> as <field>`, typed as such so that Kysely types the row. */
function selection<K extends ExportColumn>(column: K): `${(typeof PRICE_SOURCES)[K]} as ${K}` {
  return `${PRICE_SOURCES[column]} as ${column}`;
}
/** Each field with its own source; map() alone would type every field as any source's value. */
type PriceSelection = { [K in ExportColumn]: ReturnType<typeof selection<K>> }[ExportColumn];

/**
 * The select list of a price row, in the export's column order: the export reads SQLite rows as arrays in
 * select order, and they are its CSV rows as they come.
 */
export const priceColumns = EXPORT_COLUMNS.map(selection) as readonly PriceSelection[];

export function pricesQuery(db: Kysely<Database>, dialect: Dialect, filters: PriceFilters) {
  let query = db.selectFrom('current_prices as p').innerJoin('catalogue_items as c', 'c.master_item_id', 'p.master_item_id');
  for (const condition of itemFilterConditions(filters, dialect)) query = query.where(condition);
  return query;
}

export const listPrices: FilteredList<PriceFilters, PriceRow> = async (db, dialect, filters, page, countTotal = countDirectly) => {
  const base = pricesQuery(db, dialect, filters);
  const [rows, total] = await Promise.all([
    pageRows(base.select(priceColumns).orderBy('c.master_item_id'), page),
    countTotal(filterKey('prices', filters), () => countRows(base)),
  ]);
  return toPage(rows, total, page);
};

/** Current prices of published items as the single-item reads return them: every read by id starts here. */
function publishedPrices(db: Kysely<Database>) {
  return db
    .selectFrom('current_prices as p')
    .innerJoin('catalogue_items as c', 'c.master_item_id', 'p.master_item_id')
    .select(priceColumns)
    .where('c.status', '=', 'PUBLISHED');
}

/** Current prices of several published items at once (PostgreSQL: `= any($1)`). */
export function pricesByIdsQuery(db: Kysely<Database>, masterItemIds: number[]) {
  return publishedPrices(db).where(sql<boolean>`p.master_item_id = any(${masterItemIds})`);
}

export function priceQuery(db: Kysely<Database>, masterItemId: number) {
  return publishedPrices(db).where('p.master_item_id', '=', masterItemId);
}

/**
 * The current prices of published items of ids above `afterId`, at most `limit`, in id order: the rows
 * priceQuery reads, every price a page at a time (item answers' priming, src/http/api/answer-priming.ts).
 */
export function pricePageQuery(db: Kysely<Database>, afterId: number, limit: number) {
  return publishedPrices(db).where('p.master_item_id', '>', afterId).orderBy('p.master_item_id').limit(limit);
}

/**
 * How many of the current prices of published items of ids above `afterId` there are, counted no further
 * than `limit`, and the last id counted (null when none): the count of pricePageQuery's rows.
 */
export function priceCountQuery(db: Kysely<Database>, afterId: number, limit: number) {
  const ids = publishedPrices(db).clearSelect().select('p.master_item_id as id').where('p.master_item_id', '>', afterId).orderBy('p.master_item_id').limit(limit);
  return db.selectFrom(ids.as('t')).select((eb) => [eb.fn.countAll<number | string | bigint>().as('rows'), eb.fn.max('t.id').as('lastId')]);
}
