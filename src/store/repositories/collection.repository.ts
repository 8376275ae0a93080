/** The key owner's collection and its value. Rows of other accounts never leave these queries. */
import type { CollectionItem, CollectionValue } from '../../domain/resources.js';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { toBool, toPage, type Page, type PageRequest } from './page.js';

export type { CollectionItem };

/**
 * The current price at the item's condition, or 0 where unknown. An unpublished item's price does not
 * exist for the API, so it counts as unknown.
 */
const estimatedValue = sql<number>`coalesce(case when c.status = 'PUBLISHED' then case ci.condition
    when 'LOOSE' then p.loose when 'CIB' then p.cib when 'NEW' then p.new
    when 'BOX_ONLY' then p.box_only when 'MANUAL_ONLY' then p.manual_only end end, 0)`;

function owned(db: Kysely<Database>, accountId: number) {
  return db
    .selectFrom('collection_items as ci')
    .innerJoin('catalogue_items as c', 'c.master_item_id', 'ci.master_item_id')
    .leftJoin('current_prices as p', 'p.master_item_id', 'ci.master_item_id')
    .where('ci.account_id', '=', accountId);
}

function selectItem(db: Kysely<Database>, accountId: number) {
  return owned(db, accountId).select([
    'ci.id as id',
    'ci.master_item_id as masterItemId',
    'c.name as name',
    'c.category as category',
    'ci.condition as condition',
    'ci.status as status',
    'c.platform as platform',
    'c.release_year as releaseYear',
    estimatedValue.as('estimatedValue'),
    'ci.purchase_price as purchasePrice',
    'ci.acquired_at as acquiredAt',
    'ci.location as location',
    'ci.is_favorite as isFavorite',
    'ci.created_at as createdAt',
    'ci.updated_at as updatedAt',
  ]);
}

type Row = Omit<CollectionItem, 'isFavorite' | 'estimatedValue'> & { isFavorite: number; estimatedValue: number | string };
const toItem = (r: Row): CollectionItem => ({ ...r, estimatedValue: Number(r.estimatedValue), isFavorite: toBool(r.isFavorite) });

export async function listCollection(db: Kysely<Database>, accountId: number, page: PageRequest): Promise<Page<CollectionItem>> {
  const [rows, count] = await Promise.all([
    selectItem(db, accountId).orderBy('ci.id').limit(page.limit).offset(page.offset).execute(),
    db
      .selectFrom('collection_items')
      .select((eb) => eb.fn.countAll<number>().as('total'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow(),
  ]);
  return toPage(rows.map(toItem), Number(count.total), page);
}

export async function getCollectionItem(db: Kysely<Database>, accountId: number, id: number): Promise<CollectionItem | undefined> {
  const row = await selectItem(db, accountId).where('ci.id', '=', id).executeTakeFirst();
  return row && toItem(row);
}

export async function collectionValue(db: Kysely<Database>, accountId: number): Promise<CollectionValue> {
  const row = await owned(db, accountId)
    .where('ci.status', '=', 'OWNED')
    .select((eb) => [eb.fn.countAll<number>().as('ownedItems'), sql<number | null>`sum(${estimatedValue})`.as('total')])
    .executeTakeFirstOrThrow();
  return { ownedItems: Number(row.ownedItems), estimatedValue: Math.round(Number(row.total ?? 0) * 100) / 100 };
}
