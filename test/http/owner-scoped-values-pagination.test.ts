// The owner-scoped routes on a dataset of their own (docs/contract.md, "Values and data rules"): estimatedValue and
// /collection/value, the master item's name, category, platform and releaseYear whatever its publication state,
// listing category, the owner's role on a transaction; each account's own rows on every list route, in ascending id,
// with offset pagination. The rows of the shared fixture are in owner-scoped-own-rows.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Dataset } from '../../src/domain/dataset.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { body, type DataBody, type ErrorBodyShape } from '../helpers/resource-fixtures.js';
import { ids, listAll, OWNER_LISTS, value, type CollectionItemBody, type ListingBody, type OfferBody, type TransactionBody } from './owner-scoped-helpers.js';

// ---------------------------------------------------------------------------------------------------
// A dataset for pagination and the value rules: rows of alice, bob and frank interleaved by id.

function ownerDataset(): Dataset {
  const at = '2025-06-01T00:00:00.000Z';
  const collection: NonNullable<Dataset['collection']> = [];
  const conditions = ['LOOSE', 'CIB', 'NEW', 'BOX_ONLY', 'MANUAL_ONLY'] as const;
  // Alice: odd ids 1..15; bob: even ids 2..14.
  const aliceRows: Array<[number, (typeof conditions)[number], 'OWNED' | 'WISHLIST' | 'SOLD']> = [
    [1, 'LOOSE', 'OWNED'], // 10.1
    [1, 'CIB', 'OWNED'], // 20.2
    [1, 'NEW', 'WISHLIST'], // 30.3, not counted
    [1, 'BOX_ONLY', 'OWNED'], // 4.4
    [1, 'MANUAL_ONLY', 'SOLD'], // 5.5, not counted
    [2, 'LOOSE', 'OWNED'], // ARCHIVED item with a price: 0
    [3, 'CIB', 'OWNED'], // console without release year: 0.1
    [4, 'NEW', 'OWNED'], // published, no price record: 0
  ];
  aliceRows.forEach(([masterItemId, condition, status], i) => {
    collection.push({
      id: 2 * i + 1, account: 'alice', masterItemId, condition, status, purchasePrice: i, acquiredAt: at, location: `a${i}`,
      isFavorite: i % 2 === 0, ...(i === 0 ? { createdAt: '2024-01-01T00:00:00Z', updatedAt: '2024-02-01T10:20:30.5Z' } : {}),
    });
  });
  for (let i = 0; i < 7; i++) {
    collection.push({
      id: 2 * i + 2, account: 'bob', masterItemId: 1, condition: conditions[i % 5]!, status: 'OWNED', purchasePrice: 100 + i,
      acquiredAt: at, location: `b${i}`, isFavorite: false,
    });
  }
  const listing = (id: number, account: string, masterItemId: number) => ({
    id, account, masterItemId, title: `Listing ${id}`, condition: 'LOOSE' as const, status: 'ACTIVE' as const, price: id,
    currency: 'USD', acceptsTrade: id % 2 === 0, shippingCost: 1,
  });
  const listings = [
    listing(1, 'alice', 1), listing(2, 'bob', 1), listing(3, 'alice', 3), listing(4, 'bob', 1), listing(5, 'alice', 5),
    listing(6, 'bob', 1), listing(7, 'alice', 2), listing(8, 'bob', 1), listing(9, 'alice', 1), listing(10, 'frank', 4),
  ];
  // A transaction's listing is one of its seller's.
  const sellerListing: Record<string, number> = { alice: 1, bob: 2, frank: 10 };
  // Alice offers on bob's listings (odd ids), bob on alice's (even ids).
  const offers = [1, 2, 3, 4, 5, 6, 7].map((id) => ({
    id,
    account: id % 2 === 1 ? 'alice' : 'bob',
    listingId: id % 2 === 1 ? 2 : 1,
    amount: id * 10,
    tradeItemId: id === 3 ? 1 : id === 4 ? 2 : null,
    message: `offer ${id}`,
    status: 'PENDING' as const,
  }));
  const parties: Array<[string, string]> = [
    ['alice', 'bob'], ['bob', 'alice'], ['bob', 'frank'], ['alice', 'frank'], ['frank', 'alice'],
    ['frank', 'bob'], ['alice', 'bob'], ['bob', 'alice'], ['bob', 'frank'],
  ];
  const transactions = parties.map(([buyer, seller], i) => ({
    id: i + 1, buyer, seller, listingId: sellerListing[seller]!, amount: 10 + i, platformFee: 1, status: 'PAID' as const,
    trackingNumber: `T${i + 1}`, shippingCarrier: 'UPS', estimatedDelivery: '2026-12-01T00:00:00.000Z', actualDelivery: null,
  }));
  return {
    accounts: [
      { ref: 'alice', email: 'alice@example.com', plan: 'enthusiast' },
      { ref: 'bob', email: 'bob@example.com', plan: 'enthusiast' },
      { ref: 'erin', email: 'erin@example.com', plan: 'addon' },
      { ref: 'frank', email: 'frank@example.com', plan: 'addon' },
    ],
    keys: ['alice', 'bob', 'erin', 'frank'].map((ref) => ({ ref, account: ref, name: 'all', scopes: [...SCOPES] })),
    catalogue: [
      { masterItemId: 1, name: 'Priced Game', slug: 'priced', category: 'game', platform: 'PC', status: 'PUBLISHED', releaseYear: 2000 },
      { masterItemId: 2, name: 'Archived Game', slug: 'archived', category: 'game', platform: 'PC', status: 'ARCHIVED', releaseYear: 1999 },
      { masterItemId: 3, name: 'Some Console', slug: 'console', category: 'console', platform: 'Box', status: 'PUBLISHED' },
      { masterItemId: 4, name: 'Unpriced Game', slug: 'unpriced', category: 'game', platform: 'PC', status: 'PUBLISHED', releaseYear: 2004 },
      { masterItemId: 5, name: 'Draft Thing', slug: 'draft', category: 'accessory', platform: 'PC', status: 'DRAFT', releaseYear: 2005 },
    ],
    prices: [
      { masterItemId: 1, upc: '100000000001', loose: 1, cib: 2, new: 3, boxOnly: 4, manualOnly: 5, scrapeDate: '2026-10-01T00:00:00.000Z' },
      { masterItemId: 1, upc: '100000000001', loose: 10.1, cib: 20.2, new: 30.3, boxOnly: 4.4, manualOnly: 5.5, scrapeDate: '2026-11-01T00:00:00.000Z' },
      { masterItemId: 2, upc: '200000000002', loose: 99, scrapeDate: '2026-11-01T00:00:00.000Z' },
      { masterItemId: 3, upc: '300000000003', cib: 0.1, scrapeDate: '2026-11-01T00:00:00.000Z' },
    ],
    collection,
    listings,
    offers,
    transactions,
  };
}

describe('owner-scoped routes: values, derived fields and pagination', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ dataset: ownerDataset(), env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000},"addon":{"perMinute":100000}}' } });
  });
  after(async () => {
    await ctx.close();
  });

  it('estimatedValue is the latest price at the item\'s condition, one point per condition; 0 where unknown or unpublished', async () => {
    const rows = (await listAll<CollectionItemBody>(ctx, '/collection', 'alice')).data;
    assert.deepEqual(
      rows.map((r) => [r.id, r.condition, r.estimatedValue]),
      [
        [1, 'LOOSE', 10.1], [3, 'CIB', 20.2], [5, 'NEW', 30.3], [7, 'BOX_ONLY', 4.4], [9, 'MANUAL_ONLY', 5.5],
        [11, 'LOOSE', 0], [13, 'CIB', 0.1], [15, 'NEW', 0],
      ],
    );
  });

  it('shows the master item\'s name, category, platform and releaseYear (null where none) whatever its state', async () => {
    const byId = new Map((await listAll<CollectionItemBody>(ctx, '/collection', 'alice')).data.map((r) => [r.id, r]));
    const pick = (r: CollectionItemBody | undefined) => r && { name: r.name, category: r.category, platform: r.platform, releaseYear: r.releaseYear };
    assert.deepEqual(pick(byId.get(11)), { name: 'Archived Game', category: 'game', platform: 'PC', releaseYear: 1999 });
    assert.deepEqual(pick(byId.get(13)), { name: 'Some Console', category: 'console', platform: 'Box', releaseYear: null });
    assert.deepEqual(pick(byId.get(1)), { name: 'Priced Game', category: 'game', platform: 'PC', releaseYear: 2000 });
    const single = body<DataBody<CollectionItemBody>>(await ctx.get(`${V1}/collection/11`, 'alice')).data;
    assert.equal(single.name, 'Archived Game');
    assert.equal(single.estimatedValue, 0);
  });

  it('timestamps come back in UTC with milliseconds; isFavorite is a boolean', async () => {
    const [first] = (await listAll<CollectionItemBody>(ctx, '/collection', 'alice', { limit: 1 })).data;
    assert.equal(first!.createdAt, '2024-01-01T00:00:00.000Z');
    assert.equal(first!.updatedAt, '2024-02-01T10:20:30.500Z');
    assert.equal(first!.acquiredAt, '2025-06-01T00:00:00.000Z');
    assert.equal(first!.isFavorite, true);
  });

  it('/collection/value counts OWNED items only and sums them rounded to cents', async () => {
    // OWNED: 10.1 + 20.2 + 4.4 + 0 (archived) + 0.1 + 0 (unpriced) = 34.8 (a float sum that is not exact).
    assert.deepEqual(await value(ctx, 'alice'), { ownedItems: 6, estimatedValue: 34.8 });
    // Bob: 7 OWNED items on item 1 at conditions LOOSE, CIB, NEW, BOX_ONLY, MANUAL_ONLY, LOOSE, CIB.
    assert.deepEqual(await value(ctx, 'bob'), { ownedItems: 7, estimatedValue: 100.8 });
    assert.deepEqual(await value(ctx, 'erin'), { ownedItems: 0, estimatedValue: 0 });
  });

  it('listings: category from the catalogue (also of an unpublished item), generated publicToken pub_...', async () => {
    const rows = (await listAll<ListingBody>(ctx, '/listings', 'alice')).data;
    assert.deepEqual(rows.map((l) => [l.id, l.masterItemId, l.category]), [[1, 1, 'game'], [3, 3, 'console'], [5, 5, 'accessory'], [7, 2, 'game'], [9, 1, 'game']]);
    for (const l of rows) assert.match(l.publicToken, /^pub_[A-Za-z0-9_-]+$/);
    assert.equal(new Set(rows.map((l) => l.publicToken)).size, rows.length);
  });

  it('each account sees only its own rows on every list route', async () => {
    const expected: Record<string, Record<(typeof OWNER_LISTS)[number], number[]>> = {
      alice: { '/collection': [1, 3, 5, 7, 9, 11, 13, 15], '/listings': [1, 3, 5, 7, 9], '/offers': [1, 3, 5, 7], '/transactions': [1, 2, 4, 5, 7, 8] },
      bob: { '/collection': [2, 4, 6, 8, 10, 12, 14], '/listings': [2, 4, 6, 8], '/offers': [2, 4, 6], '/transactions': [1, 2, 3, 6, 7, 8, 9] },
      frank: { '/collection': [], '/listings': [10], '/offers': [], '/transactions': [3, 4, 5, 6, 9] },
      erin: { '/collection': [], '/listings': [], '/offers': [], '/transactions': [] },
    };
    for (const [key, routes] of Object.entries(expected)) {
      for (const path of OWNER_LISTS) assert.deepEqual(await ids(ctx, path, key), routes[path], `${path} as ${key}`);
    }
  });

  it('transactions carry the owner\'s role on each row', async () => {
    const roles = async (key: string) => (await listAll<TransactionBody>(ctx, '/transactions', key)).data.map((t) => [t.id, t.role]);
    assert.deepEqual(await roles('alice'), [[1, 'buyer'], [2, 'seller'], [4, 'buyer'], [5, 'seller'], [7, 'buyer'], [8, 'seller']]);
    assert.deepEqual(await roles('bob'), [[1, 'seller'], [2, 'buyer'], [3, 'buyer'], [6, 'seller'], [7, 'seller'], [8, 'buyer'], [9, 'buyer']]);
    assert.deepEqual(await roles('frank'), [[3, 'seller'], [4, 'seller'], [5, 'buyer'], [6, 'buyer'], [9, 'seller']]);
  });

  it("an offer's tradeItemId is null or one of the offerer's collection items", async () => {
    for (const key of ['alice', 'bob']) {
      const own = new Set(await ids(ctx, '/collection', key));
      for (const offer of (await listAll<OfferBody>(ctx, '/offers', key)).data) {
        assert.ok(offer.tradeItemId === null || own.has(offer.tradeItemId), `${key} offer ${offer.id}`);
      }
    }
  });

  it('paginates every owner route in ascending id, totals counting own rows only', async () => {
    for (const key of ['alice', 'bob', 'frank']) {
      for (const path of OWNER_LISTS) {
        const all = await ids(ctx, path, key);
        const total = all.length;
        for (const limit of [1, 2, 3]) {
          const seen: number[] = [];
          for (let offset = 0; offset < total; offset += limit) {
            const page = await listAll<{ id: number }>(ctx, path, key, { limit, offset });
            assert.deepEqual(page.pagination, { total, limit, offset, hasMore: offset + page.data.length < total }, `${path} as ${key}`);
            seen.push(...page.data.map((r) => r.id));
          }
          assert.deepEqual(seen, all, `${path} as ${key}, limit ${limit}`);
        }
        assert.deepEqual(all, [...all].sort((a, b) => a - b), `${path} ascending id`);
        const past = await listAll<{ id: number }>(ctx, path, key, { offset: total + 5, limit: 2 });
        assert.deepEqual(past, { data: [], pagination: { total, limit: 2, offset: total + 5, hasMore: false } });
      }
    }
  });

  it('/collection/:id of another account\'s item is 404 not_found, of an own item 200', async () => {
    for (const id of [2, 4, 14]) {
      const res = await ctx.get(`${V1}/collection/${id}`, 'alice');
      assert.equal(res.statusCode, 404);
      assert.equal(body<ErrorBodyShape>(res).error, 'not_found');
    }
    for (const id of [1, 15]) {
      const res = await ctx.get(`${V1}/collection/${id}`, 'alice');
      assert.equal(res.statusCode, 200);
      assert.equal(body<DataBody<CollectionItemBody>>(res).data.id, id);
    }
    assert.equal((await ctx.get(`${V1}/collection/1`, 'erin')).statusCode, 404);
  });
});
