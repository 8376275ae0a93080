/** `shelfapi seed --demo`: a generated, believable catalogue with prices, and the demo accounts. */
import { generateDemo } from '../store/demo/generate-demo.js';
import type { Store } from '../store/database.js';
import { loadDataset, type LoadResult } from '../store/load/load-dataset.js';
import { InputError } from './input-error.js';

export const DEFAULT_DEMO_ITEMS = 5000;

export async function storeIsEmpty(store: Store): Promise<boolean> {
  const [accounts, items] = await Promise.all([
    store.db.selectFrom('accounts').select('id').limit(1).execute(),
    store.db.selectFrom('catalogue_items').select('master_item_id').limit(1).execute(),
  ]);
  return accounts.length === 0 && items.length === 0;
}

export async function seedDemo(
  store: Store,
  options: { items: number; keyPrefix: string; now: number; onProgress?: (section: string, rows: number) => void },
): Promise<LoadResult> {
  if (!Number.isSafeInteger(options.items) || options.items < 50) throw new InputError('--items must be a whole number >= 50');
  if (!(await storeIsEmpty(store))) {
    throw new InputError('the store already holds data; seed --demo fills an empty store (use a new DATABASE_URL)');
  }
  const demo = generateDemo({ items: options.items, now: new Date(options.now) });
  return loadDataset(
    store,
    {
      accounts: demo.accounts,
      keys: demo.keys,
      catalogue: demo.catalogue(),
      prices: demo.prices(),
      collection: demo.collection,
      listings: demo.listings,
      offers: demo.offers,
      transactions: demo.transactions,
    },
    { keyPrefix: options.keyPrefix, now: options.now, ...(options.onProgress ? { onProgress: options.onProgress } : {}) },
  );
}
