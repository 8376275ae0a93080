/** Current prices: the latest record by scrape date of each published item. */
import type { PriceRow } from '../../domain/resources.js';
import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';
import type { Database } from '../schema.js';
import { countDirectly, filterKey, itemFilterConditions, type CountTotal, type ItemFilters } from './catalogue.repository.js';
import { toPage, type Page, type PageRequest } from './page.js';

export type { PriceRow };

export type PriceFilters = Omit<ItemFilters, 'category'>;

export const priceColumns = [
  'c.master_item_id as masterItemId',
  'c.name as name',
  'c.slug as slug',
  'c.platform as platform',
  'c.category as category',
  'p.upc as upc',
  'p.loose as loose',
  'p.cib as cib',
  'p.new as new',
  'p.box_only as boxOnly',
  'p.manual_only as manualOnly',
  'p.scrape_date as scrapeDate',
] as const;

export function pricesQuery(db: Kysely<Database>, dialect: Dialect, filters: PriceFilters) {
  let query = db.selectFrom('current_prices as p').innerJoin('catalogue_items as c', 'c.master_item_id', 'p.master_item_id');
  for (const condition of itemFilterConditions(filters, dialect)) query = query.where(condition);
  return query;
}

export async function listPrices(
  db: Kysely<Database>,
  dialect: Dialect,
  filters: PriceFilters,
  page: PageRequest,
  countTotal: CountTotal = countDirectly,
): Promise<Page<PriceRow>> {
  const base = pricesQuery(db, dialect, filters);
  const [rows, total] = await Promise.all([
    base.select(priceColumns).orderBy('c.master_item_id').limit(page.limit).offset(page.offset).execute(),
    countTotal(filterKey('prices', filters), async () =>
      Number((await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()).total),
    ),
  ]);
  return toPage(rows, total, page);
}

export function priceQuery(db: Kysely<Database>, masterItemId: number) {
  return db
    .selectFrom('current_prices as p')
    .innerJoin('catalogue_items as c', 'c.master_item_id', 'p.master_item_id')
    .select(priceColumns)
    .where('p.master_item_id', '=', masterItemId)
    .where('c.status', '=', 'PUBLISHED');
}
