// The dataset loader behind `shelfapi load` and `seed` (docs/contract.md, "Operator command line"): a good
// file keeps its ids, fills in the defaults, and numbers rows without an id after the largest id of their
// table; the fields the service derives are checked but never stored; and a display is told how far the load
// is. Refused files are load-dataset-refusals.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadDataset } from '../../src/load/load-dataset.js';
import { BadRowsError } from '../../src/errors/bad-rows.js';
import type { ProgressSink } from '../../src/load/progress.js';
import { generateDemo } from '../../src/demo/index.js';
import { tableCounts } from '../helpers/cli-helpers.js';
import { TEST_STORE } from '../helpers/test-app.js';
import { extra, item, LOAD, newStore, NOW, NOW_ISO } from './load-dataset-fixtures.js';

describe('loadDataset: ids, defaults and generated values', () => {
  it('keeps ids as given and numbers rows without an id after the largest id of their table (store and file)', async () => {
    const store = await newStore();
    const dataset = extra();
    dataset.catalogue = [item(undefined, 'No Id One'), ...dataset.catalogue!, item(undefined, 'No Id Two')];
    for (const section of ['collection', 'listings', 'offers', 'transactions']) {
      for (const row of dataset[section]!) delete row.id;
    }
    // Kept as given: an id far above the others, in a table where the store's largest is 7.
    dataset.collection!.push({ id: 900, account: 'frank', masterItemId: 2, condition: 'CIB', status: 'SOLD', purchasePrice: 1, acquiredAt: '2024-01-01T00:00:00.000Z', location: 'gone', isFavorite: false });
    // Offers and transactions refer to listings by id: the ones this file's listings will get (store max 3).
    dataset.offers = [
      { account: 'frank', listingId: 4, amount: 35, tradeItemId: null, message: 'a', status: 'PENDING' },
      { id: 10, account: 'eve', listingId: 5, amount: 300, message: 'b', status: 'PENDING' },
      { account: 'eve', listingId: 1, amount: 45, message: 'c', status: 'PENDING' },
    ];
    dataset.transactions = [{ buyer: 'frank', seller: 'eve', listingId: 4, amount: 40, platformFee: 4, status: 'PAID', trackingNumber: 'T', shippingCarrier: 'UPS', estimatedDelivery: '2026-11-25T00:00:00.000Z' }];
    await loadDataset(store, dataset, LOAD);

    const bySlug = Object.fromEntries(
      (await store.db.selectFrom('catalogue_items').select(['master_item_id', 'slug']).where('master_item_id', '>', 10).execute()).map((r) => [r.slug, r.master_item_id]),
    );
    // The store's largest masterItemId is 10 and the file declares up to 103: rows without one get 104, 105.
    assert.deepEqual(bySlug, { 'no-id-one': 104, 'nights-into-dreams': 101, 'panzer-dragoon-saga': 102, 'guardian-heroes': 103, 'no-id-two': 105 });
    const collection = await store.db.selectFrom('collection_items').select(['id', 'location']).where('id', '>', 7).orderBy('id').execute();
    assert.deepEqual(collection.map((r) => [r.id, r.location]), [[900, 'gone'], [901, 'shelf B'], [902, 'safe'], [903, '']]);
    const listings = await store.db.selectFrom('listings').select(['id', 'title']).where('id', '>', 3).orderBy('id').execute();
    assert.deepEqual(listings.map((r) => [r.id, r.title]), [[4, 'NiGHTS CIB'], [5, 'PDS loose']]);
    const offers = await store.db.selectFrom('offers').select(['id', 'message']).where('id', '>', 2).orderBy('id').execute();
    assert.deepEqual(offers.map((r) => [r.id, r.message]), [[10, 'b'], [11, 'a'], [12, 'c']]);
    const transactions = await store.db.selectFrom('transactions').select('id').where('id', '>', 2).execute();
    assert.deepEqual(transactions.map((r) => r.id), [3]);
  });

  it('an empty store: rows without an id start at 1', async () => {
    const store = await newStore(false);
    await loadDataset(store, { catalogue: [item(undefined, 'First'), item(undefined, 'Second')] }, LOAD);
    const rows = await store.db.selectFrom('catalogue_items').select(['master_item_id', 'slug']).orderBy('master_item_id').execute();
    assert.deepEqual(rows.map((r) => [r.master_item_id, r.slug]), [[1, 'first'], [2, 'second']]);
  });

  it('a listing without publicToken gets a unique pub_<token>; a given one is kept', async () => {
    const store = await newStore();
    const dataset = extra();
    delete dataset.listings![0]!.publicToken;
    await loadDataset(store, dataset, LOAD);
    const tokens = await store.db.selectFrom('listings').select(['id', 'public_token']).orderBy('id').execute();
    const made = tokens.filter((t) => t.id === 101 || t.id === 102).map((t) => t.public_token);
    for (const token of made) assert.match(token, /^pub_[0-9A-Za-z_-]{4,}$/);
    assert.equal(new Set(tokens.map((t) => t.public_token)).size, tokens.length, 'every token is unique');
    assert.equal(tokens.find((t) => t.id === 1)?.public_token, 'pub_alice1');
  });

  it('planStatus defaults to active, is kept when given, and is absent with plan none', async () => {
    const store = await newStore(false);
    const result = await loadDataset(
      store,
      {
        accounts: [
          { ref: 'a', email: 'a@example.com', plan: 'enthusiast' },
          { ref: 'b', email: 'b@example.com', plan: 'addon', planStatus: 'lapsed' },
          { ref: 'c', email: 'c@example.com', plan: 'none' },
        ],
      },
      LOAD,
    );
    const rows = await store.db.selectFrom('accounts').selectAll().orderBy('id').execute();
    assert.deepEqual(
      rows.map((r) => [r.id, r.email, r.plan, r.plan_status, r.created_at]),
      [
        [result.accounts.a, 'a@example.com', 'enthusiast', 'active', NOW_ISO],
        [result.accounts.b, 'b@example.com', 'addon', 'lapsed', NOW_ISO],
        [result.accounts.c, 'c@example.com', 'none', null, NOW_ISO],
      ],
    );
  });

  it('createdAt/updatedAt default to the load time; given timestamps are kept in canonical form', async () => {
    const store = await newStore();
    const dataset = extra();
    Object.assign(dataset.collection![0]!, { createdAt: '2025-06-01T10:00:00+02:00', updatedAt: '2025-06-02T00:00Z' });
    Object.assign(dataset.listings![0]!, { createdAt: '2025-07-01T00:00:00.5Z' });
    Object.assign(dataset.transactions![0]!, { updatedAt: '2026-11-19T00:00:00.000Z' });
    Object.assign(dataset.keys![1]!, { expiresAt: '2027-01-01T00:00:00Z', revoked: true });
    await loadDataset(store, dataset, LOAD);

    const collection = await store.db.selectFrom('collection_items').select(['id', 'created_at', 'updated_at', 'acquired_at']).where('id', '>', 100).orderBy('id').execute();
    assert.deepEqual(collection.map((r) => [r.id, r.created_at, r.updated_at]), [
      [101, '2025-06-01T08:00:00.000Z', '2025-06-02T00:00:00.000Z'],
      [102, NOW_ISO, NOW_ISO],
      [103, NOW_ISO, NOW_ISO],
    ]);
    assert.equal(collection[0]!.acquired_at, '2024-01-01T00:00:00.000Z');
    const listings = await store.db.selectFrom('listings').select(['id', 'created_at', 'updated_at']).where('id', '>', 100).orderBy('id').execute();
    assert.deepEqual(listings.map((r) => [r.id, r.created_at, r.updated_at]), [
      [101, '2025-07-01T00:00:00.500Z', NOW_ISO],
      [102, NOW_ISO, NOW_ISO],
    ]);
    const offers = await store.db.selectFrom('offers').select(['created_at', 'updated_at']).where('id', '>', 100).execute();
    for (const r of offers) assert.deepEqual([r.created_at, r.updated_at], [NOW_ISO, NOW_ISO]);
    const transactions = await store.db.selectFrom('transactions').selectAll().where('id', '>', 100).orderBy('id').execute();
    assert.deepEqual(transactions.map((r) => [r.created_at, r.updated_at, r.actual_delivery]), [
      [NOW_ISO, '2026-11-19T00:00:00.000Z', null],
      [NOW_ISO, NOW_ISO, '2026-11-04T10:00:00.000Z'],
    ]);
    const prices = await store.db.selectFrom('price_records').selectAll().where('master_item_id', '=', 102).executeTakeFirstOrThrow();
    assert.equal(prices.scrape_date, '2026-11-01T00:00:00.000Z', 'scrapeDate in canonical form');
    assert.deepEqual([prices.box_only, prices.manual_only], [null, null], 'omitted price points are null');
    const keys = await store.db.selectFrom('api_keys').selectAll().where('name', '=', 'ci').orderBy('id').execute();
    assert.deepEqual(keys.map((k) => [k.created_at, k.expires_at, k.revoked_at]), [
      [NOW_ISO, null, null],
      [NOW_ISO, '2027-01-01T00:00:00.000Z', NOW_ISO],
    ]);
  });
});

describe('loadDataset: fields the service derives', () => {
  it('are accepted when given, type-checked, and never stored: the service computes them', async () => {
    const store = await newStore();
    await loadDataset(
      store,
      {
        accounts: [{ ref: 'erin', email: 'erin@example.com', plan: 'addon' }, { ref: 'finn', email: 'finn@example.com', plan: 'addon' }],
        collection: [
          { id: 100, account: 'erin', masterItemId: 1, condition: 'CIB', status: 'OWNED', purchasePrice: 1, acquiredAt: NOW_ISO,
            location: 'x', isFavorite: false, name: 'A wrong name', category: 'wrong', platform: 'wrong', releaseYear: 1900, estimatedValue: 999 },
        ],
        listings: [
          { id: 100, account: 'erin', masterItemId: 1, title: 't', condition: 'CIB', status: 'SOLD', price: 1, currency: 'USD',
            acceptsTrade: false, shippingCost: 0, category: 'wrong' },
        ],
        transactions: [
          { id: 100, buyer: 'finn', seller: 'erin', listingId: 100, amount: 1, platformFee: 0, status: 'PAID', trackingNumber: 't',
            shippingCarrier: 'UPS', estimatedDelivery: NOW_ISO, role: 'buyer' },
        ],
      },
      LOAD,
    );
    const row = await store.db.selectFrom('collection_items').selectAll().where('id', '=', 100).executeTakeFirstOrThrow();
    assert.equal('name' in row, false);
    assert.equal('estimated_value' in row, false);
    await assert.rejects(
      loadDataset(store, { accounts: [{ ref: 'gil', email: 'gil@example.com', plan: 'addon' }], collection: [
        { account: 'gil', masterItemId: 1, condition: 'CIB', status: 'OWNED', purchasePrice: 1, acquiredAt: NOW_ISO, location: 'x', isFavorite: false, estimatedValue: 'lots' },
      ] }, LOAD),
      (error: unknown) => error instanceof BadRowsError && /^collection row 1: field 'estimatedValue'/.test(error.message),
    );
  });
});

describe('loadDataset: a large catalogue with its ids', () => {
  it('loads 130,000 catalogue rows that give their masterItemId', async () => {
    // More ids than a function call takes arguments: the loader must not spread them into Math.max.
    const store = await newStore(false);
    const catalogue = Array.from({ length: 130_000 }, (_, i) => ({
      masterItemId: i + 1, name: `Item ${i + 1}`, slug: `item-${i + 1}`, category: 'game', platform: 'Game Boy', status: 'PUBLISHED',
    }));
    const result = await loadDataset(store, { catalogue }, LOAD);
    assert.equal(result.counts.catalogue, 130_000);
    assert.equal((await tableCounts(store)).catalogue_items, 130_000);
  });
});

describe('loadDataset: progress for a display', () => {
  /** A sink that records what it is told, in order. */
  function recorder(): { sink: ProgressSink; events: string[] } {
    const events: string[] = [];
    let current = '';
    return {
      events,
      sink: {
        start: (section, total) => {
          current = section;
          events.push(`start ${section} ${String(total)}`);
        },
        update: (done, fraction) => events.push(`update ${current} ${done}${fraction === undefined ? '' : ` ${fraction.toFixed(2)}`}`),
        end: (done) => events.push(`end ${current} ${String(done)}`),
      },
    };
  }

  it('a start with the row count and an end for each section the input has; batches in between', async () => {
    const store = await newStore(false);
    const catalogue = Array.from({ length: 12_000 }, (_, i) => item(undefined, `Item ${i + 1}`));
    const prices = [{ masterItemId: 1, upc: '000000000017', loose: 1, scrapeDate: '2026-11-01T00:00:00.000Z' }];
    const { sink, events } = recorder();
    await loadDataset(store, { accounts: [{ ref: 'p', email: 'p@example.com', plan: 'addon' }], catalogue, prices }, { ...LOAD, progress: sink });
    assert.deepEqual(events, [
      'start accounts 1', 'end accounts 1',
      'start catalogue 12000', 'update catalogue 5000', 'update catalogue 10000', 'update catalogue 12000', 'end catalogue 12000',
      // PostgreSQL builds the search index of an empty catalogue once its rows are in (bulk-insert.ts).
      ...(TEST_STORE === 'postgres' ? ['start search index null', 'end search index null'] : []),
      'start prices 1', 'update prices 1', 'end prices 1',
      'start current prices 1', 'update current prices 1', 'end current prices 1',
      'start statistics null', 'end statistics null',
    ]);
  });

  it('the demo generator: the catalogue says its size, the prices how far through the items they are', async () => {
    const store = await newStore(false);
    const demo = generateDemo({ items: 12_000, now: new Date(NOW) });
    const { sink, events } = recorder();
    await loadDataset(store, { catalogue: demo.catalogue(), prices: demo.prices() }, { ...LOAD, progress: sink });
    assert.equal(events[0], 'start catalogue 12000');
    assert.ok(events.includes('start prices null'), 'the record count is not known up front');
    const fractions = events.filter((e) => e.startsWith('update prices ')).map((e) => Number(e.split(' ')[3]));
    assert.ok(fractions.length >= 2, events.join('\n'));
    for (let i = 1; i < fractions.length; i++) assert.ok(fractions[i]! >= fractions[i - 1]!, 'the fraction only grows');
    assert.ok(fractions.every((f) => f > 0 && f <= 1));
  });
});
