/**
 * Collection rows: what the demo and trader accounts own, want and have sold, most of it priced so the
 * collection has a real value; and `largeCollection`, a big collection for the collector account and the
 * load benchmarks.
 */
import type { DatasetCollectionItem } from '../domain/dataset.js';
import type { Condition } from '../domain/values.js';
import { assignIds, type AccountBuilder, type ItemInfo } from './account-builder.js';
import { DEFAULT_DEMO_SEED, hashString, Rng, rowSeed, SALT_LARGE, weighted } from './random.js';
import { MARKETPLACE } from './reference-data.js';
import { checkItems } from './run-context.js';
import { DAY, HOUR, iso, round2 } from './units.js';

export interface Owned {
  row: DatasetCollectionItem;
  createdMs: number;
}

const WISHLIST_CONDITIONS = weighted<Condition>([['CIB', 60], ['NEW', 30], ['LOOSE', 10]]);
const LARGE_CONDITIONS = weighted<Condition>([['LOOSE', 45], ['CIB', 40], ['NEW', 10], ['BOX_ONLY', 3],
  ['MANUAL_ONLY', 2]]);
const LOCATIONS = MARKETPLACE.locations;

function accountCollection(b: AccountBuilder, account: string, owned: number, wishlist: number, sold: number,
  unpublished: number): Owned[] {
  const { r } = b;
  const now = b.ctx.nowMs;
  const rows: Owned[] = [];
  const add = (masterItemId: number, condition: Condition, status: DatasetCollectionItem['status']): void => {
    const acquiredMs = now - r.between(2 * DAY, 6 * 365 * DAY);
    const createdMs = status === 'WISHLIST' ? acquiredMs : b.past(acquiredMs + r.between(0, 30 * DAY));
    const updatedMs = status === 'SOLD' || r.chance(0.4) ? b.past(createdMs + r.between(HOUR, now - createdMs))
      : createdMs;
    const market = b.market(masterItemId, condition);
    const purchasePrice = status === 'WISHLIST' ? 0
      : market !== null ? round2(market * r.between(0.5, 1.3)) : round2(r.between(5, 80));
    rows.push({
      row: {
        account,
        masterItemId,
        condition,
        status,
        purchasePrice,
        acquiredAt: iso(acquiredMs),
        location: status === 'WISHLIST' ? 'Wishlist' : r.pick(LOCATIONS),
        isFavorite: r.chance(0.1),
        createdAt: iso(createdMs),
        updatedAt: iso(updatedMs),
      },
      createdMs,
    });
  };
  const publishedPriced = (i: ItemInfo): boolean => i.core.status === 'PUBLISHED' && i.latest !== null;
  for (let n = 0; n < owned; n++) {
    // Most owned rows get a known price at their condition so the collection value is substantial; a few do
    // not, as in real collections, and count as 0.
    const wantPrice = n % 10 !== 9;
    let id = b.pickMaster(publishedPriced);
    let condition = b.conditionFor(id);
    for (let t = 0; wantPrice && t < 8 && b.market(id, condition) === null; t++) {
      id = b.pickMaster(publishedPriced);
      condition = b.conditionFor(id);
    }
    add(id, condition, 'OWNED');
  }
  for (let n = 0; n < wishlist; n++) {
    const id = b.pickMaster((i) => i.core.status === 'PUBLISHED');
    add(id, b.conditionFor(id, WISHLIST_CONDITIONS), 'WISHLIST');
  }
  for (let n = 0; n < sold; n++) {
    const id = b.pickMaster(publishedPriced);
    add(id, b.conditionFor(id), 'SOLD');
  }
  // Rows whose master item is not published: they must still be listed, with an unknown (zero) value.
  for (let n = 0; n < unpublished; n++) {
    const id = b.pickMaster((i) => i.core.status !== 'PUBLISHED');
    if (b.lookup(id).core.status === 'PUBLISHED') break;
    add(id, b.conditionFor(id), n === 0 ? 'OWNED' : 'WISHLIST');
  }
  return rows;
}

/** The demo account's few hundred rows and the trader's smaller shelf, numbered in creation order. */
export function demoCollection(b: AccountBuilder): Owned[] {
  const collection = [
    ...accountCollection(b, 'demo', 200, 60, 30, 2),
    ...accountCollection(b, 'trader', 60, 10, 12, 0),
  ];
  assignIds(collection, (o, id) => (o.row.id = id));
  return collection;
}

/**
 * `count` OWNED rows for one account over master ids 1..items (distinct while count <= items), with ids
 * startId, startId + 1, ...; meant for load benchmarks, so it needs no catalogue lookups.
 */
export function largeCollection(accountRef: string, count: number, items: number, startId: number,
  opts: { seed?: number; now?: Date } = {}): DatasetCollectionItem[] {
  checkItems(items);
  const nowMs = (opts.now ?? new Date()).getTime();
  const r = new Rng(rowSeed((opts.seed ?? DEFAULT_DEMO_SEED) >>> 0, hashString(accountRef), SALT_LARGE));
  let stride = Math.max(1, Math.floor(items * 0.6180339887));
  while (gcd(stride, items) !== 1) stride++;
  const offset = r.int(items);
  const rows: DatasetCollectionItem[] = [];
  for (let i = 0; i < count; i++) {
    const acquiredMs = nowMs - r.between(DAY, 8 * 365 * DAY);
    const createdMs = Math.min(acquiredMs + r.between(0, 30 * DAY), nowMs - 1000);
    rows.push({
      id: startId + i,
      account: accountRef,
      masterItemId: 1 + ((offset + (i % items) * stride) % items),
      condition: LARGE_CONDITIONS.pick(r),
      status: 'OWNED',
      purchasePrice: round2(r.between(2, 150)),
      acquiredAt: iso(acquiredMs),
      location: r.pick(LOCATIONS),
      isFavorite: r.chance(0.05),
      createdAt: iso(createdMs),
      updatedAt: iso(createdMs),
    });
  }
  return rows;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
