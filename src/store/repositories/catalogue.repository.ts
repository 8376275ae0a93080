/** Catalogue items: only PUBLISHED ones exist for the API. */
import type { CatalogueItem } from '../../domain/resources.js';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Dialect } from '../dialect.js';
import type { Database } from '../schema.js';
import { likeContains, searchTerms } from '../search-text.js';
import { countRows, pageRows, toPage, type Page, type PageRequest } from './page.js';

export type { CatalogueItem };

export interface ItemFilters {
  search?: string;
  platform?: string;
  category?: string;
  upc?: string;
}

export const catalogueColumns = [
  'c.master_item_id as masterItemId',
  'c.name as name',
  'c.slug as slug',
  'c.category as category',
  'c.platform as platform',
  'c.sub_category as subCategory',
  'c.model_number as modelNumber',
  'c.release_year as releaseYear',
  'c.region as region',
  'c.format as format',
  'c.developer as developer',
  'c.publisher as publisher',
  'c.genre as genre',
  'c.manufacturer as manufacturer',
  'c.description as description',
  'c.image_url as imageUrl',
] as const;

/** FTS5 phrase syntax: the term in double quotes, inner quotes doubled. */
function ftsPhrase(term: string): string {
  return `"${term.replaceAll('"', '""')}"`;
}

/**
 * The item filters as conditions on `catalogue_items c`, for any query that joins it under that alias.
 * Search terms are matched exactly by LIKE on the folded name; on SQLite the FTS5 trigram index first
 * narrows the rows for terms of three or more characters (on PostgreSQL the pg_trgm GIN index serves the
 * LIKE itself).
 */
export function itemFilterConditions(filters: ItemFilters, dialect: Dialect, useTrigramIndex = true): RawBuilder<boolean>[] {
  const conditions = [sql<boolean>`c.status = 'PUBLISHED'`];
  if (filters.platform !== undefined) conditions.push(sql<boolean>`c.platform_key = ${filters.platform.toLowerCase()}`);
  if (filters.category !== undefined) conditions.push(sql<boolean>`c.category_key = ${filters.category.toLowerCase()}`);
  if (filters.search !== undefined) {
    const terms = searchTerms(filters.search);
    if (dialect === 'sqlite' && useTrigramIndex) {
      const indexed = terms.filter((t) => [...t].length >= 3);
      if (indexed.length > 0) {
        const match = indexed.map(ftsPhrase).join(' AND ');
        conditions.push(sql<boolean>`c.master_item_id in (select rowid from catalogue_fts where catalogue_fts match ${match})`);
      }
    }
    for (const term of terms) conditions.push(sql<boolean>`c.search_name like ${likeContains(term)} escape '\\'`);
  }
  if (filters.upc !== undefined) {
    conditions.push(sql<boolean>`c.master_item_id in (select master_item_id from current_prices where upc = ${filters.upc})`);
  }
  return conditions;
}

/** How a list query counts its total: directly, or through a cache keyed by the filters (read-cache.ts). */
export type CountTotal = (key: string, count: () => Promise<number>) => Promise<number>;
export const countDirectly: CountTotal = (_key, count) => count();

/** A public list under filters (the catalogue, the prices): one page, and the total under the filters. */
export type FilteredList<F, T> = (
  db: Kysely<Database>,
  dialect: Dialect,
  filters: F,
  page: PageRequest,
  countTotal?: CountTotal,
) => Promise<Page<T>>;

/**
 * The read cache's key for a list's total under these filters. JSON of the tuple: a value may hold any
 * character, so joining with a separator would let two different filters share a key (and a total).
 */
export function filterKey(kind: string, filters: ItemFilters): string {
  return JSON.stringify([kind, filters.search ?? null, filters.platform?.toLowerCase() ?? null, filters.category?.toLowerCase() ?? null, filters.upc ?? null]);
}

/**
 * SQLite: whether the page of a search is found faster by reading items in id order and testing the name
 * (LIKE alone) than through the trigram index. The index first collects every item matching the terms
 * (37 ms for "super", 55,000 of a million items), while reading in id order stops at the page's last row
 * (0.7 ms for the same page). The total, already known (cached), tells how far that read goes: about
 * (offset + limit) * published / total rows, against a cost of about `total` for the index; the factor 2
 * comes from timing both paths on the million-item catalogue. Both paths return the same rows: the index
 * only ever narrows, and LIKE decides.
 */
function pageByScan(page: PageRequest, total: number, published: number): boolean {
  return (page.offset + page.limit) * published < 2 * total * total;
}

export const listCatalogue: FilteredList<ItemFilters, CatalogueItem> = async (db, dialect, filters, page, countTotal = countDirectly) => {
  const where = (f: ItemFilters, useTrigramIndex = true) => {
    let query = db.selectFrom('catalogue_items as c');
    for (const condition of itemFilterConditions(f, dialect, useTrigramIndex)) query = query.where(condition);
    return query;
  };
  const count = (f: ItemFilters) => countTotal(filterKey('catalogue', f), () => countRows(where(f)));
  const pageOf = (query: ReturnType<typeof where>) => pageRows(query.select(catalogueColumns).orderBy('c.master_item_id'), page);
  if (dialect === 'sqlite' && filters.search !== undefined) {
    const total = await count(filters);
    // The unfiltered total is the /catalogue total, cached under the same key.
    const published = await count({});
    const rows = await pageOf(where(filters, !pageByScan(page, total, published)));
    return toPage(rows, total, page);
  }
  const [rows, total] = await Promise.all([pageOf(where(filters)), count(filters)]);
  return toPage(rows, total, page);
};

/** Published items as the single-item reads return them: every read of one or more items by id starts here. */
function publishedItems(db: Kysely<Database>) {
  return db.selectFrom('catalogue_items as c').select(catalogueColumns).where('c.status', '=', 'PUBLISHED');
}

/** Published items of several ids at once (PostgreSQL: `= any($1)`, one round trip for a batch of requests). */
export function catalogueItemsQuery(db: Kysely<Database>, ids: number[]) {
  return publishedItems(db).where(sql<boolean>`c.master_item_id = any(${ids})`);
}

export function catalogueItemQuery(db: Kysely<Database>, id: number) {
  return publishedItems(db).where('c.master_item_id', '=', id);
}

/**
 * The published items of ids above `afterId`, at most `limit`, in id order: the rows catalogueItemQuery
 * reads, the whole catalogue a page at a time (item answers' priming, src/http/api/answer-priming.ts).
 */
export function cataloguePageQuery(db: Kysely<Database>, afterId: number, limit: number) {
  return publishedItems(db).where('c.master_item_id', '>', afterId).orderBy('c.master_item_id').limit(limit);
}

/**
 * How many of the published items of ids above `afterId` there are, counted no further than `limit`, and the
 * last id counted (null when none): the count of cataloguePageQuery's rows, a slice at a time if need be.
 */
export function catalogueCountQuery(db: Kysely<Database>, afterId: number, limit: number) {
  const ids = publishedItems(db).clearSelect().select('c.master_item_id as id').where('c.master_item_id', '>', afterId).orderBy('c.master_item_id').limit(limit);
  return db.selectFrom(ids.as('t')).select((eb) => [eb.fn.countAll<number | string | bigint>().as('rows'), eb.fn.max('t.id').as('lastId')]);
}
