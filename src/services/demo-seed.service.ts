/** `shelfapi seed --demo`: a generated, believable catalogue with prices, and the demo accounts. */
import { SCOPES } from '../domain/scopes.js';
import type { Store } from '../store/database.js';
import { loadDataset, type LoadResult } from '../load/load-dataset.js';
import type { ProgressSink } from '../load/progress.js';
import { InputError } from '../errors/input-error.js';

export const DEFAULT_DEMO_ITEMS = 5000;
export const COLLECTOR_ITEMS = 10_000;

function nextId(rows: ReadonlyArray<{ id?: number }>): number {
  return rows.reduce((max, r) => Math.max(max, r.id ?? 0), 0) + 1;
}

export async function storeIsEmpty(store: Store): Promise<boolean> {
  const [accounts, items] = await Promise.all([
    store.db.selectFrom('accounts').select('id').limit(1).execute(),
    store.db.selectFrom('catalogue_items').select('master_item_id').limit(1).execute(),
  ]);
  return accounts.length === 0 && items.length === 0;
}

export async function seedDemo(
  store: Store,
  options: { items: number; keyPrefix: string; now: number; progress?: ProgressSink },
): Promise<LoadResult> {
  if (!Number.isSafeInteger(options.items) || options.items < 50) throw new InputError('--items must be a whole number >= 50');
  if (!(await storeIsEmpty(store))) {
    throw new InputError('the store already holds data; seed --demo fills an empty store (use a new DATABASE_URL)');
  }
  const now = new Date(options.now);
  // The generator and its reference data load only when a store is seeded: every CLI command imports this
  // module (through seed and serve), and most never seed.
  const { generateDemo, largeCollection } = await import('../demo/index.js');
  const demo = generateDemo({ items: options.items, now });
  // A collector holding a large collection (10,000 owned items on a catalogue that large): the size that
  // /collection/value must stay fast for.
  const collector = largeCollection('collector', Math.min(COLLECTOR_ITEMS, options.items), options.items, nextId(demo.collection), { now });
  return loadDataset(
    store,
    {
      accounts: [...demo.accounts, { ref: 'collector', email: 'collector@shelfapi.dev', plan: 'enthusiast', planStatus: 'active' }],
      keys: [...demo.keys, { ref: 'collector', account: 'collector', name: 'collector', scopes: [...SCOPES] }],
      catalogue: demo.catalogue(),
      prices: demo.prices(),
      collection: [...demo.collection, ...collector],
      listings: demo.listings,
      offers: demo.offers,
      transactions: demo.transactions,
    },
    { keyPrefix: options.keyPrefix, now: options.now, ...(options.progress ? { progress: options.progress } : {}) },
  );
}
