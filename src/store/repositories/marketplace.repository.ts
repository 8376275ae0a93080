/** The key owner's listings, the offers the owner made, and the owner's transactions (either side). */
import type { Listing, Offer, Transaction } from '../../domain/resources.js';

export type { Listing, Offer, Transaction };
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { Database } from '../schema.js';
import { pageWithTotal, toBool, type Page, type PageRequest } from './page.js';

export async function listListings(db: Kysely<Database>, accountId: number, page: PageRequest): Promise<Page<Listing>> {
  const listings = await pageWithTotal(
    db
      .selectFrom('listings as l')
      .innerJoin('catalogue_items as c', 'c.master_item_id', 'l.master_item_id')
      .select([
        'l.id as id',
        'l.public_token as publicToken',
        'l.master_item_id as masterItemId',
        'l.title as title',
        'c.category as category',
        'l.condition as condition',
        'l.status as status',
        'l.price as price',
        'l.currency as currency',
        'l.accepts_trade as acceptsTrade',
        'l.shipping_cost as shippingCost',
        'l.created_at as createdAt',
        'l.updated_at as updatedAt',
      ])
      .where('l.account_id', '=', accountId)
      .orderBy('l.id'),
    // Counted without the join: every listing has its catalogue item.
    db.selectFrom('listings').where('account_id', '=', accountId),
    page,
  );
  return { ...listings, data: listings.data.map((r) => ({ ...r, acceptsTrade: toBool(r.acceptsTrade) })) };
}

/** What an offer and a transaction both are: an id, the listing it is about, an amount. */
type DealColumns = { id: number; listingId: number; amount: number };

/**
 * One page of the owner's offers or transactions: `mine` (the owner's rows) with the columns every deal has
 * and its own `columns`, in id order; the total counts `mine` as it is, without the selection.
 */
function pageOfDeals<TB extends 'offers' | 'transactions', O>(
  mine: SelectQueryBuilder<Database, TB, object>,
  columns: (rows: SelectQueryBuilder<Database, TB, DealColumns>) => SelectQueryBuilder<Database, TB, O>,
  page: PageRequest,
): Promise<Page<O>> {
  const deals = mine.select(['id', 'listing_id as listingId', 'amount']);
  return pageWithTotal(columns(deals).orderBy('id'), mine, page);
}

export async function listOffers(db: Kysely<Database>, accountId: number, page: PageRequest): Promise<Page<Offer>> {
  const mine = db.selectFrom('offers').where('account_id', '=', accountId);
  return pageOfDeals(
    mine,
    (deals) =>
      deals.select([
        'trade_item_id as tradeItemId',
        'message',
        'status',
        'created_at as createdAt',
        'updated_at as updatedAt',
      ]),
    page,
  );
}

export async function listTransactions(db: Kysely<Database>, accountId: number, page: PageRequest): Promise<Page<Transaction>> {
  const mine = db
    .selectFrom('transactions')
    .where((eb) => eb.or([eb('buyer_account_id', '=', accountId), eb('seller_account_id', '=', accountId)]));
  return pageOfDeals(
    mine,
    (deals) =>
      deals.select([
        'platform_fee as platformFee',
        'status',
        'tracking_number as trackingNumber',
        'shipping_carrier as shippingCarrier',
        'estimated_delivery as estimatedDelivery',
        'actual_delivery as actualDelivery',
        'created_at as createdAt',
        'updated_at as updatedAt',
        sql<'buyer' | 'seller'>`case when buyer_account_id = ${accountId} then 'buyer' else 'seller' end`.as('role'),
      ]),
    page,
  );
}
