/**
 * The accounts' own sections of a load: collection items, listings, offers and transactions. Small
 * sections, checked row by row against the file and the store: whose listing an offer is on, whose
 * collection item it trades, whose listing a transaction sells.
 */
import { randomBytes } from 'node:crypto';
import type { DatasetSection } from '../domain/dataset.js';
import type { Row } from './bulk-insert.js';
import type { CatalogueIds } from './catalogue-and-prices.js';
import { DatasetError } from './dataset-error.js';
import type { Obj } from './dataset-rows.js';
import { declaredIds, IdSpace, type IdTable } from './id-space.js';
import { columnsFor, missingRow, rowByRow, type LoadContext } from './load-context.js';

/** Rows of one table that belong to an account: which account owns each, from the file or the store. */
class Owners {
  private readonly inFile = new Map<number, number>();
  constructor(
    private readonly ctx: LoadContext,
    private readonly table: 'collection_items' | 'listings',
  ) {}

  set(rowId: number, accountId: number): void {
    this.inFile.set(rowId, accountId);
  }

  /** The account that owns row `rowId`, or undefined when there is no such row. */
  async of(rowId: number): Promise<number | undefined> {
    const inFile = this.inFile.get(rowId);
    if (inFile !== undefined) return inFile;
    const row = await this.ctx.trx.selectFrom(this.table).select('account_id').where('id', '=', rowId).executeTakeFirst();
    return row?.account_id;
  }
}

const LISTING = { section: 'listings', key: 'id' } as const;
const COLLECTION_ITEM = { section: 'collection', key: 'id' } as const;

const openIds = (ctx: LoadContext, section: DatasetSection, table: IdTable) => IdSpace.open(ctx.trx, table, 'id', declaredIds(ctx.input[section], 'id'));

/** A collection item's or a listing's columns: an item of the catalogue, a new id, its account as owner. */
async function ownedItemRow(
  ctx: LoadContext,
  section: 'collection' | 'listings',
  place: { items: CatalogueIds; ids: IdSpace; owners: Owners },
  row: Obj,
  where: string,
): Promise<Row> {
  const columns = columnsFor(ctx, section, row, where);
  await place.items.require(row.masterItemId as number, where);
  columns.id = await place.ids.takeNew(row.id, where);
  return columns;
}

/** Marks the row as the file's (later rows may name it): only once every check of it has passed. */
function owned(place: { owners: Owners }, columns: Row): Row {
  place.owners.set(columns.id as number, columns.account_id as number);
  return columns;
}

export async function loadMarketplace(ctx: LoadContext, items: CatalogueIds): Promise<void> {
  const { trx } = ctx;

  const collection = { items, ids: await openIds(ctx, 'collection', 'collection_items'), owners: new Owners(ctx, 'collection_items') };
  await rowByRow(ctx, 'collection', 'collection_items', async (row, _n, where) =>
    owned(collection, await ownedItemRow(ctx, 'collection', collection, row, where)),
  );

  const listings = { items, ids: await openIds(ctx, 'listings', 'listings'), owners: new Owners(ctx, 'listings') };
  const tokens = new Set<string>();
  await rowByRow(ctx, 'listings', 'listings', async (row, _n, where) => {
    const columns = await ownedItemRow(ctx, 'listings', listings, row, where);
    const token = (row.publicToken as string | undefined) ?? `pub_${randomBytes(12).toString('base64url')}`;
    const tokenTaken = tokens.has(token) || (await trx.selectFrom('listings').select('id').where('public_token', '=', token).executeTakeFirst()) !== undefined;
    if (tokenTaken) throw new DatasetError(`${where}: publicToken ${token} is already used`, { field: 'publicToken', value: token });
    tokens.add(token);
    return owned(listings, { ...columns, public_token: token });
  });

  const offers = await openIds(ctx, 'offers', 'offers');
  await rowByRow(ctx, 'offers', 'offers', async (row, _n, where) => {
    const columns = columnsFor(ctx, 'offers', row, where);
    const seller = await listings.owners.of(row.listingId as number);
    if (seller === undefined) throw missingRow(ctx.input, where, 'listingId', row.listingId, LISTING, 'does not exist');
    if (seller === columns.account_id) throw new DatasetError(`${where}: an account cannot make an offer on its own listing`, { field: 'listingId', value: row.listingId });
    const tradeItemId = columns.trade_item_id as number | null;
    if (tradeItemId !== null) {
      const owner = await collection.owners.of(tradeItemId);
      if (owner === undefined) throw missingRow(ctx.input, where, 'tradeItemId', tradeItemId, COLLECTION_ITEM, 'does not exist');
      if (owner !== columns.account_id) throw new DatasetError(`${where}: tradeItemId ${tradeItemId} is not a collection item of the offerer`, { field: 'tradeItemId', value: tradeItemId });
    }
    return { ...columns, id: await offers.takeNew(row.id, where) };
  });

  const transactions = await openIds(ctx, 'transactions', 'transactions');
  await rowByRow(ctx, 'transactions', 'transactions', async (row, _n, where) => {
    const columns = columnsFor(ctx, 'transactions', row, where);
    const seller = columns.seller_account_id;
    if (columns.buyer_account_id === seller) throw new DatasetError(`${where}: buyer and seller must be different accounts`, { field: 'seller', value: row.seller });
    const listingSeller = await listings.owners.of(row.listingId as number);
    if (listingSeller === undefined) throw missingRow(ctx.input, where, 'listingId', row.listingId, LISTING, 'does not exist');
    if (listingSeller !== seller) throw new DatasetError(`${where}: listing ${String(row.listingId)} is not the seller's`, { field: 'listingId', value: row.listingId });
    return { ...columns, id: await transactions.takeNew(row.id, where) };
  });
}
