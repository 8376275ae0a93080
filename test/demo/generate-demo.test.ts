// What a user of `shelfapi seed --demo` relies on: the same data for the same seed, a catalogue of exactly N
// items with believable values, and account rows that only point at rows that exist and obey the contract.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import type {
  DatasetCollectionItem,
  DatasetListing,
  DatasetPrice,
} from '../../src/domain/dataset.js';
import { SCOPES } from '../../src/domain/scopes.js';
import {
  CATALOGUE_STATUSES,
  COLLECTION_STATUSES,
  CONDITIONS,
  LISTING_STATUSES,
  OFFER_STATUSES,
  PRICE_POINT_OF_CONDITION,
  TRANSACTION_STATUSES,
} from '../../src/domain/values.js';
import {
  DEMO_PLATFORM_YEARS,
  generateDemo,
  largeCollection,
  type DemoCatalogueItem,
  type DemoData,
} from '../../src/demo/index.js';

const NOW = new Date('2026-03-15T12:00:00.000Z');
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const NULLABLE = ['subCategory', 'modelNumber', 'releaseYear', 'region', 'format', 'developer', 'publisher',
  'genre', 'manufacturer', 'description', 'imageUrl'] as const;
const POINTS = ['loose', 'cib', 'new', 'boxOnly', 'manualOnly'] as const;

const fold = (s: string): string => s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
const isCents = (v: number): boolean => Math.round(v * 100) / 100 === v;

function upcCheckDigitOk(upc: string): boolean {
  let sum = 0;
  for (let i = 0; i < 11; i++) sum += Number(upc[i]) * (i % 2 === 0 ? 3 : 1);
  return (10 - (sum % 10)) % 10 === Number(upc[11]);
}

function materialise(d: DemoData): { catalogue: DemoCatalogueItem[]; prices: DatasetPrice[] } {
  return { catalogue: [...d.catalogue()], prices: [...d.prices()] };
}

/** The price the API would show: the latest record by scrapeDate of a published item. */
function latestPrices(catalogue: DemoCatalogueItem[], prices: DatasetPrice[]): Map<number, DatasetPrice> {
  const published = new Set(catalogue.filter((c) => c.status === 'PUBLISHED').map((c) => c.masterItemId));
  const latest = new Map<number, DatasetPrice>();
  for (const p of prices) {
    if (!published.has(p.masterItemId)) continue;
    const cur = latest.get(p.masterItemId);
    if (cur === undefined || p.scrapeDate > cur.scrapeDate) latest.set(p.masterItemId, p);
  }
  return latest;
}

function assertReferentialRules(d: DemoData, items: number): void {
  const accounts = new Set(d.accounts.map((a) => a.ref));
  const uniqueIds = (rows: { id?: number }[], what: string): void => {
    const ids = rows.map((r) => r.id);
    assert.ok(ids.every((id) => Number.isInteger(id) && (id as number) > 0), `${what}: explicit positive ids`);
    assert.equal(new Set(ids).size, ids.length, `${what}: ids unique`);
  };
  uniqueIds(d.collection, 'collection');
  uniqueIds(d.listings, 'listings');
  uniqueIds(d.offers, 'offers');
  uniqueIds(d.transactions, 'transactions');

  const collectionById = new Map(d.collection.map((c) => [c.id as number, c]));
  const listingById = new Map(d.listings.map((l) => [l.id as number, l]));

  for (const c of d.collection) {
    assert.ok(accounts.has(c.account));
    assert.ok(c.masterItemId >= 1 && c.masterItemId <= items, `collection master ${c.masterItemId} in 1..${items}`);
    assert.ok((CONDITIONS as readonly string[]).includes(c.condition));
    assert.ok((COLLECTION_STATUSES as readonly string[]).includes(c.status));
    assert.ok(isCents(c.purchasePrice) && c.purchasePrice >= 0);
  }
  for (const l of d.listings) {
    assert.ok(accounts.has(l.account));
    assert.ok(l.masterItemId >= 1 && l.masterItemId <= items);
    assert.ok((CONDITIONS as readonly string[]).includes(l.condition));
    assert.ok((LISTING_STATUSES as readonly string[]).includes(l.status));
    assert.ok(l.price > 0 && isCents(l.price) && isCents(l.shippingCost));
    assert.match(l.publicToken ?? '', /^pub_[0-9A-Za-z]+$/);
    assert.match(l.currency, /^[A-Z]{3}$/);
  }
  assert.equal(new Set(d.listings.map((l) => l.publicToken)).size, d.listings.length, 'public tokens unique');

  for (const o of d.offers) {
    assert.ok(accounts.has(o.account));
    const l = listingById.get(o.listingId);
    assert.ok(l !== undefined, `offer ${o.id} refers to an existing listing`);
    assert.notEqual(l.account, o.account, 'nobody makes an offer on their own listing');
    assert.ok((OFFER_STATUSES as readonly string[]).includes(o.status));
    if (o.tradeItemId !== null && o.tradeItemId !== undefined) {
      const item = collectionById.get(o.tradeItemId);
      assert.ok(item !== undefined, `trade item ${o.tradeItemId} exists`);
      assert.equal(item.account, o.account, 'trade item belongs to the offerer');
    }
  }
  for (const t of d.transactions) {
    assert.ok(accounts.has(t.buyer) && accounts.has(t.seller));
    assert.notEqual(t.buyer, t.seller);
    const l = listingById.get(t.listingId);
    assert.ok(l !== undefined, `transaction ${t.id} refers to an existing listing`);
    assert.equal(l.account, t.seller, "the listing belongs to the transaction's seller");
    assert.ok((TRANSACTION_STATUSES as readonly string[]).includes(t.status));
    assert.ok(t.amount > 0 && isCents(t.amount) && isCents(t.platformFee));
    assert.ok(t.trackingNumber.length >= 10);
    const delivered = t.actualDelivery !== null && t.actualDelivery !== undefined;
    assert.equal(delivered, ['DELIVERED', 'COMPLETED', 'REFUNDED'].includes(t.status), `actualDelivery of ${t.status}`);
  }

  // Every timestamp: ISO 8601 UTC with milliseconds, strictly before `now`.
  const stamps: string[] = [];
  const push = (v: string | null | undefined): void => {
    if (v !== null && v !== undefined) stamps.push(v);
  };
  for (const c of d.collection) [c.acquiredAt, c.createdAt, c.updatedAt].forEach(push);
  for (const l of d.listings) [l.createdAt, l.updatedAt].forEach(push);
  for (const o of d.offers) [o.createdAt, o.updatedAt].forEach(push);
  for (const t of d.transactions) [t.createdAt, t.updatedAt, t.estimatedDelivery, t.actualDelivery].forEach(push);
  assert.ok(stamps.length > 0);
  for (const s of stamps) {
    assert.match(s, ISO_MS);
    assert.ok(Date.parse(s) < NOW.getTime(), `${s} is before now`);
  }
  const ordered = (rows: { createdAt?: string; updatedAt?: string }[], what: string): void => {
    for (const r of rows) assert.ok((r.createdAt ?? '') <= (r.updatedAt ?? ''), `${what}: createdAt <= updatedAt`);
  };
  ordered(d.collection, 'collection');
  ordered(d.listings, 'listings');
  ordered(d.offers, 'offers');
  ordered(d.transactions, 'transactions');
}

describe('generateDemo', () => {
  it('is deterministic for a seed and differs between seeds', () => {
    const a = generateDemo({ items: 500, seed: 42, now: NOW });
    const b = generateDemo({ items: 500, seed: 42, now: NOW });
    const c = generateDemo({ items: 500, seed: 43, now: NOW });
    const sa = JSON.stringify({ ...a, ...materialise(a) });
    assert.equal(sa, JSON.stringify({ ...b, ...materialise(b) }));
    assert.notEqual(sa, JSON.stringify({ ...c, ...materialise(c) }));
    // Iterating twice yields the same rows: the generators are restartable.
    assert.deepEqual([...a.catalogue()], [...a.catalogue()]);
  });

  it('has the demo and trader accounts and one demo key with every scope', () => {
    const d = generateDemo({ items: 100, now: NOW });
    const demo = d.accounts.find((a) => a.ref === 'demo');
    assert.deepEqual(demo, { ref: 'demo', email: 'demo@shelfapi.dev', plan: 'enthusiast', planStatus: 'active' });
    const trader = d.accounts.find((a) => a.ref === 'trader');
    assert.ok(trader !== undefined);
    assert.equal(trader.plan, 'addon');
    assert.equal(trader.planStatus, 'active');
    assert.equal(d.keys.length, 1);
    const key = d.keys[0];
    assert.ok(key !== undefined);
    assert.equal(key.ref, 'demo');
    assert.equal(key.account, 'demo');
    assert.equal(key.name, 'demo');
    assert.deepEqual([...key.scopes].sort(), [...SCOPES].sort());
  });

  it('generates a believable catalogue with ids exactly 1..N and unique slugs', () => {
    const items = 20_000;
    const { catalogue } = materialise(generateDemo({ items, now: NOW }));
    assert.deepEqual(catalogue.map((c) => c.masterItemId), Array.from({ length: items }, (_, i) => i + 1));
    assert.equal(new Set(catalogue.map((c) => c.slug)).size, items, 'slugs are unique');

    const count = (pred: (c: DemoCatalogueItem) => boolean): number => catalogue.filter(pred).length;
    const games = count((c) => c.category === 'game');
    assert.ok(games > items * 0.75, 'mostly games');
    assert.ok(count((c) => c.category === 'console') > 0 && count((c) => c.category === 'accessory') > 0);
    assert.ok(catalogue.every((c) => ['game', 'console', 'accessory'].includes(c.category)));
    const published = count((c) => c.status === 'PUBLISHED');
    assert.ok(published > items * 0.9 && published < items, 'about 95% published');
    for (const s of CATALOGUE_STATUSES) assert.ok(count((c) => c.status === s) > 0, `some ${s}`);

    const now = NOW.getUTCFullYear();
    for (const c of catalogue) {
      assert.ok(c.name.length > 0 && c.platform.length > 0);
      assert.match(c.slug, /^[a-z0-9]+(-[a-z0-9]+)*$/);
      assert.ok(c.slug.endsWith(`-${c.masterItemId}`));
      const span = DEMO_PLATFORM_YEARS[c.platform];
      assert.ok(span !== undefined, `known platform ${c.platform}`);
      if (c.releaseYear !== null && c.releaseYear !== undefined) {
        assert.ok(c.releaseYear >= span[0] && c.releaseYear <= Math.min(span[1], now),
          `${c.name} (${c.platform}) released ${c.releaseYear}, within ${span.join('-')}`);
      }
      if (c.imageUrl !== null && c.imageUrl !== undefined) {
        assert.equal(c.imageUrl, `https://images.shelfapi.dev/items/${c.masterItemId}.jpg`);
      }
      if (c.region !== null && c.region !== undefined) assert.ok(['NTSC-U', 'PAL', 'NTSC-J'].includes(c.region));
    }
    for (const f of NULLABLE) {
      assert.ok(count((c) => c[f] === null) > 0, `some ${f} are null`);
      assert.ok(count((c) => c[f] !== null && c[f] !== undefined) > items / 2, `most ${f} are set`);
    }
    assert.ok(new Set(catalogue.map((c) => c.platform)).size >= 25, 'many platforms');
  });

  it('has accented names and names with characters that need quoting or escaping, even with 50 items', () => {
    for (const items of [50, 5_000]) {
      const names = [...generateDemo({ items, now: NOW }).catalogue()]
        .filter((c) => c.status === 'PUBLISHED')
        .map((c) => c.name);
      assert.ok(names.some((n) => fold(n) !== n.toLowerCase()), `${items}: an accented name`);
      assert.ok(names.some((n) => n.includes('Pokémon') && fold(n).includes('pokemon')), `${items}: Pokémon`);
      for (const ch of ['%', '_', ',', '"', '\\']) assert.ok(names.some((n) => n.includes(ch)), `${items}: ${ch}`);
    }
  });

  it('prices: valid UPCs, cents, ordered points, nulls, and some items with two records', () => {
    const items = 20_000;
    const { catalogue, prices } = materialise(generateDemo({ items, now: NOW }));
    const byId = new Map(catalogue.map((c) => [c.masterItemId, c]));
    const records = new Map<number, DatasetPrice[]>();
    const nowMs = NOW.getTime();
    for (const p of prices) {
      const item = byId.get(p.masterItemId);
      assert.ok(item !== undefined, `price for existing item ${p.masterItemId}`);
      assert.match(p.upc, /^\d{12}$/);
      assert.ok(upcCheckDigitOk(p.upc), `UPC ${p.upc} has a valid check digit`);
      assert.match(p.scrapeDate, ISO_MS);
      const t = Date.parse(p.scrapeDate);
      assert.ok(t < nowMs && t >= nowMs - 30 * 86_400_000, 'scraped within the last 30 days');
      for (const k of POINTS) {
        const v = p[k];
        if (v !== null && v !== undefined) assert.ok(v > 0 && isCents(v), `${k}=${v} is dollars and cents`);
      }
      if (item.category !== 'game') assert.ok(p.boxOnly === null && p.manualOnly === null, 'box/manual: games only');
      const present = [p.loose, p.cib, p.new].filter((v): v is number => v !== null && v !== undefined);
      for (let i = 1; i < present.length; i++) assert.ok((present[i - 1] as number) < (present[i] as number));
      const list = records.get(p.masterItemId) ?? [];
      list.push(p);
      records.set(p.masterItemId, list);
    }
    for (const k of POINTS) assert.ok(prices.some((p) => p[k] === null), `some ${k} null`);
    for (const k of POINTS) assert.ok(prices.some((p) => typeof p[k] === 'number'), `some ${k} set`);

    const publishedIds = catalogue.filter((c) => c.status === 'PUBLISHED').map((c) => c.masterItemId);
    const priced = publishedIds.filter((id) => records.has(id)).length;
    assert.ok(priced < publishedIds.length, 'some published items have no price');
    assert.ok(priced > publishedIds.length * 0.9, 'most published items have a price');
    const twice = [...records.values()].filter((l) => l.length === 2);
    assert.ok(twice.length > 0, 'some items have two records');
    assert.ok([...records.values()].every((l) => l.length <= 2));
    for (const [a, b] of twice as [DatasetPrice, DatasetPrice][]) {
      assert.notEqual(a.scrapeDate, b.scrapeDate);
      assert.equal(a.upc, b.upc);
    }
    // Order of delivery must not reveal the latest one.
    assert.ok(twice.some(([a, b]) => (a as DatasetPrice).scrapeDate > (b as DatasetPrice).scrapeDate));
    assert.ok(twice.some(([a, b]) => (a as DatasetPrice).scrapeDate < (b as DatasetPrice).scrapeDate));

    const upcs = new Map<number, string>();
    for (const p of prices) upcs.set(p.masterItemId, p.upc);
    assert.ok(new Set(upcs.values()).size > upcs.size * 0.98, 'UPCs are mostly unique');
  });

  it('account rows reference existing rows and obey the contract', () => {
    for (const items of [50, 2_000]) assertReferentialRules(generateDemo({ items, now: NOW, seed: 7 }), items);
  });

  it('gives demo a few hundred collection items with a non-zero value, and activity on both sides', () => {
    for (const items of [50, 5_000]) {
      const d = generateDemo({ items, now: NOW });
      const { catalogue, prices } = materialise(d);
      const latest = latestPrices(catalogue, prices);
      const demoItems = d.collection.filter((c) => c.account === 'demo');
      assert.ok(demoItems.length >= 200 && demoItems.length <= 500, `${demoItems.length} demo items`);
      assert.ok(d.collection.some((c) => c.account === 'trader'));
      for (const s of COLLECTION_STATUSES) assert.ok(demoItems.some((c) => c.status === s), `demo has ${s}`);

      const owned = demoItems.filter((c: DatasetCollectionItem) => c.status === 'OWNED');
      let value = 0;
      let valued = 0;
      for (const c of owned) {
        const v = latest.get(c.masterItemId)?.[PRICE_POINT_OF_CONDITION[c.condition]];
        if (typeof v === 'number') {
          value += v;
          valued++;
        }
      }
      assert.ok(value > 0, `collection value ${value}`);
      assert.ok(valued > owned.length * 0.8, 'most owned items have a known price');

      const demoListings = d.listings.filter((l: DatasetListing) => l.account === 'demo');
      assert.ok(demoListings.length > 0 && d.listings.some((l) => l.account === 'trader'));
      assert.ok(d.offers.some((o) => o.account === 'demo') && d.offers.some((o) => o.account === 'trader'));
      assert.ok(d.offers.some((o) => o.tradeItemId !== null && o.tradeItemId !== undefined), 'some trade offers');
      assert.ok(d.transactions.some((t) => t.buyer === 'demo') && d.transactions.some((t) => t.seller === 'demo'));
      for (const s of ['ACTIVE', 'SOLD'] as const) assert.ok(d.listings.some((l) => l.status === s));
    }
  });

  it('keeps account rows the same size whatever the catalogue size', () => {
    const small = generateDemo({ items: 1_000, now: NOW });
    const large = generateDemo({ items: 500_000, now: NOW });
    for (const k of ['collection', 'listings', 'transactions'] as const) {
      assert.equal(small[k].length, large[k].length, k);
    }
  });

  it('streams 200,000 items with their prices', () => {
    const d = generateDemo({ items: 200_000, now: NOW });
    let n = 0;
    let last = 0;
    for (const c of d.catalogue()) {
      n++;
      last = c.masterItemId;
    }
    assert.equal(n, 200_000);
    assert.equal(last, 200_000);
    let p = 0;
    for (const row of d.prices()) if (row.masterItemId > 0) p++;
    assert.ok(p > 180_000 && p < 220_000, `${p} price records`);
  });

  it('refuses a non-positive or fractional item count', () => {
    assert.throws(() => generateDemo({ items: 0, now: NOW }), RangeError);
    assert.throws(() => generateDemo({ items: 2.5, now: NOW }), RangeError);
  });
});

describe('largeCollection', () => {
  it('makes count OWNED rows with consecutive ids over existing master items', () => {
    const rows = largeCollection('bench', 10_000, 200_000, 5_001, { now: NOW });
    assert.equal(rows.length, 10_000);
    rows.forEach((r, i) => {
      assert.equal(r.id, 5_001 + i);
      assert.equal(r.account, 'bench');
      assert.equal(r.status, 'OWNED');
      assert.ok(r.masterItemId >= 1 && r.masterItemId <= 200_000);
      assert.ok((CONDITIONS as readonly string[]).includes(r.condition));
      assert.match(r.acquiredAt, ISO_MS);
      assert.ok(Date.parse(r.acquiredAt) < NOW.getTime());
    });
    assert.equal(new Set(rows.map((r) => r.masterItemId)).size, 10_000, 'distinct master items');
    assert.deepEqual(largeCollection('bench', 100, 200_000, 1, { now: NOW }),
      largeCollection('bench', 100, 200_000, 1, { now: NOW }));
  });

  it('works when count exceeds the catalogue', () => {
    const rows = largeCollection('bench', 300, 50, 1, { now: NOW });
    assert.equal(rows.length, 300);
    assert.ok(rows.every((r) => r.masterItemId >= 1 && r.masterItemId <= 50));
  });
});
