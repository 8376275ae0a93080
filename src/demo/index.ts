/**
 * Demo data for `shelfapi seed --demo [--items N]`: a believable, deterministic retro-games catalogue with
 * aggregator prices, plus two accounts ('demo' and its counterparty 'trader') whose collection, listings,
 * offers and transactions reference it. The catalogue and prices are generators so that a million items
 * never sit in memory; every item is a pure function of (seed, id), which lets prices and the account rows
 * look items up again without keeping them. See README.md for what each module makes.
 */
import type {
  DatasetAccount,
  DatasetCollectionItem,
  DatasetKey,
  DatasetListing,
  DatasetOffer,
  DatasetPrice,
  DatasetTransaction,
} from '../domain/dataset.js';
import { AccountBuilder } from './account-builder.js';
import { demoAccounts, demoKeys } from './accounts-and-keys.js';
import { buildItem, type DemoCatalogueItem } from './catalogue-items.js';
import { demoCollection } from './collection.js';
import { buildMarketplace } from './marketplace.js';
import { priceRecords } from './prices.js';
import { DEFAULT_DEMO_SEED, Rng } from './random.js';
import { checkItems, makeCtx } from './run-context.js';

export type { DemoCatalogueItem } from './catalogue-items.js';
export { largeCollection } from './collection.js';
export { DEFAULT_DEMO_SEED } from './random.js';
export { DEMO_PLATFORM_YEARS } from './run-context.js';

export interface DemoOptions {
  items: number;
  seed?: number;
  now: Date;
}

export interface DemoData {
  accounts: DatasetAccount[];
  keys: DatasetKey[];
  /** Lazy, and says its size: a progress display shows how far a large seed is. */
  catalogue(): Iterable<DemoCatalogueItem> & { readonly size: number };
  /** Lazy; the record count is not known up front, so it says how far through the items it is. */
  prices(): Iterable<DatasetPrice> & { fraction(): number };
  collection: DatasetCollectionItem[];
  listings: DatasetListing[];
  offers: DatasetOffer[];
  transactions: DatasetTransaction[];
}

export function generateDemo(opts: DemoOptions): DemoData {
  checkItems(opts.items);
  const seed = (opts.seed ?? DEFAULT_DEMO_SEED) >>> 0;
  const ctx = makeCtx(seed, opts.now);
  const items = opts.items;
  // The account rows share one random stream: the collection is drawn first, then the marketplace.
  const builder = new AccountBuilder(ctx, items);
  const collection = demoCollection(builder);
  const marketplace = buildMarketplace(builder, collection);
  return {
    accounts: demoAccounts(),
    keys: demoKeys(),
    catalogue() {
      return {
        size: items,
        *[Symbol.iterator](): Generator<DemoCatalogueItem> {
          const r = new Rng(0);
          for (let id = 1; id <= items; id++) yield buildItem(ctx, r, id);
        },
      };
    },
    prices() {
      let walked = 0;
      return {
        fraction: () => walked / items,
        *[Symbol.iterator](): Generator<DatasetPrice> {
          const itemRng = new Rng(0);
          const priceRng = new Rng(0);
          for (let id = 1; id <= items; id++) {
            yield* priceRecords(ctx, itemRng, priceRng, id);
            walked = id;
          }
        },
      };
    },
    collection: collection.map((o) => o.row),
    ...marketplace,
  };
}
