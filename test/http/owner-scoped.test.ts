// The owner-scoped routes (/collection, /collection/:id, /collection/value, /listings, /offers,
// /transactions) as a client sees them: each account sees its own rows only, whichever of its keys it uses
// (docs/contract.md, "Values and data rules"); the derived fields of that section (estimatedValue, the master
// item's name/category/platform/releaseYear whatever its publication state, listing category, role); no
// counterparty identity; ascending id and offset pagination.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Dataset } from '../../src/domain/dataset.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { body, queryString, type DataBody, type ErrorBodyShape, type ListBody } from '../helpers/resource-fixtures.js';

interface CollectionItemBody {
  id: number;
  masterItemId: number;
  name: string;
  category: string;
  condition: string;
  status: string;
  platform: string;
  releaseYear: number | null;
  estimatedValue: number;
  purchasePrice: number;
  acquiredAt: string;
  location: string;
  isFavorite: boolean;
  createdAt: string;
  updatedAt: string;
}

interface CollectionValueBody {
  ownedItems: number;
  estimatedValue: number;
}

interface ListingBody {
  id: number;
  publicToken: string;
  masterItemId: number;
  title: string;
  category: string;
  condition: string;
  status: string;
  price: number;
  currency: string;
  acceptsTrade: boolean;
  shippingCost: number;
  createdAt: string;
  updatedAt: string;
}

interface OfferBody {
  id: number;
  listingId: number;
  amount: number;
  tradeItemId: number | null;
  message: string;
  status: string;
  createdAt: string;
  updatedAt: string;
}

interface TransactionBody {
  id: number;
  listingId: number;
  amount: number;
  platformFee: number;
  status: string;
  trackingNumber: string;
  shippingCarrier: string;
  estimatedDelivery: string;
  actualDelivery: string | null;
  createdAt: string;
  updatedAt: string;
  role: 'buyer' | 'seller';
}

const COLLECTION_KEYS = [
  'id', 'masterItemId', 'name', 'category', 'condition', 'status', 'platform', 'releaseYear', 'estimatedValue',
  'purchasePrice', 'acquiredAt', 'location', 'isFavorite', 'createdAt', 'updatedAt',
].sort();
const LISTING_KEYS = [
  'id', 'publicToken', 'masterItemId', 'title', 'category', 'condition', 'status', 'price', 'currency',
  'acceptsTrade', 'shippingCost', 'createdAt', 'updatedAt',
].sort();
const OFFER_KEYS = ['id', 'listingId', 'amount', 'tradeItemId', 'message', 'status', 'createdAt', 'updatedAt'].sort();
const TRANSACTION_KEYS = [
  'id', 'listingId', 'amount', 'platformFee', 'status', 'trackingNumber', 'shippingCarrier', 'estimatedDelivery',
  'actualDelivery', 'createdAt', 'updatedAt', 'role',
].sort();

const OWNER_LISTS = ['/collection', '/listings', '/offers', '/transactions'] as const;

async function listAll<T>(ctx: TestContext, path: string, key: string, params: Record<string, number> = {}): Promise<ListBody<T>> {
  const res = await ctx.get(`${V1}${path}${queryString(params)}`, key);
  assert.equal(res.statusCode, 200, `${path} as ${key}: ${res.statusCode} ${res.body}`);
  return body<ListBody<T>>(res);
}

async function ids(ctx: TestContext, path: string, key: string): Promise<number[]> {
  const page = await listAll<{ id: number }>(ctx, path, key, { limit: 100 });
  assert.equal(page.pagination.total, page.data.length, `${path} total as ${key}`);
  return page.data.map((r) => r.id);
}

async function value(ctx: TestContext, key: string): Promise<CollectionValueBody> {
  const res = await ctx.get(`${V1}/collection/value`, key);
  assert.equal(res.statusCode, 200);
  const got = body<DataBody<CollectionValueBody>>(res);
  assert.deepEqual(Object.keys(got), ['data']);
  assert.deepEqual(Object.keys(got.data).sort(), ['estimatedValue', 'ownedItems']);
  return got.data;
}

// ---------------------------------------------------------------------------------------------------
// The shared fixture: every value below is worked out by hand from test/helpers/fixture.ts.

describe('owner-scoped routes on the shared fixture', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  const loaded = { createdAt: FIXTURE_NOW, updatedAt: FIXTURE_NOW };
  const zelda = { masterItemId: 1, name: 'The Legend of Zelda: Ocarina of Time', category: 'game', platform: 'Nintendo 64', releaseYear: 1998 };
  const aliceCollection: CollectionItemBody[] = [
    // Latest price of item 1 (2026-11-15) at CIB: 50.25, not the older 45.5.
    { id: 1, ...zelda, condition: 'CIB', status: 'OWNED', estimatedValue: 50.25, purchasePrice: 40, acquiredAt: '2025-01-02T03:04:05.006Z', location: 'shelf A', isFavorite: true, ...loaded },
    // Item 2 has no CIB price: 0.
    { id: 2, masterItemId: 2, name: 'Pokémon Snap', category: 'game', platform: 'Nintendo 64', releaseYear: 1998, condition: 'CIB', status: 'OWNED', estimatedValue: 0, purchasePrice: 10, acquiredAt: '2025-02-02T00:00:00.000Z', location: 'shelf A', isFavorite: false, ...loaded },
    { id: 3, masterItemId: 3, name: 'Super Mario 64', category: 'game', platform: 'Nintendo 64', releaseYear: 1998, condition: 'NEW', status: 'WISHLIST', estimatedValue: 500, purchasePrice: 0, acquiredAt: '2025-03-02T00:00:00.000Z', location: '', isFavorite: false, ...loaded },
    // Item 5 is a DRAFT with a LOOSE price of 1: its price does not exist for the API (0), but its name shows.
    { id: 4, masterItemId: 5, name: 'Draft Game', category: 'game', platform: 'Nintendo 64', releaseYear: 1998, condition: 'LOOSE', status: 'OWNED', estimatedValue: 0, purchasePrice: 1, acquiredAt: '2025-03-02T00:00:00.000Z', location: 'box', isFavorite: false, ...loaded },
    { id: 5, masterItemId: 4, name: 'Sonic the Hedgehog', category: 'game', platform: 'Sega Genesis', releaseYear: 1991, condition: 'LOOSE', status: 'OWNED', estimatedValue: 10, purchasePrice: 5, acquiredAt: '2025-03-02T00:00:00.000Z', location: 'box', isFavorite: false, ...loaded },
  ];
  const bobCollection: CollectionItemBody[] = [
    { id: 6, masterItemId: 3, name: 'Super Mario 64', category: 'game', platform: 'Nintendo 64', releaseYear: 1998, condition: 'NEW', status: 'OWNED', estimatedValue: 500, purchasePrice: 450, acquiredAt: '2025-04-02T00:00:00.000Z', location: 'safe', isFavorite: true, ...loaded },
    { id: 7, ...zelda, condition: 'LOOSE', status: 'SOLD', estimatedValue: 25, purchasePrice: 15, acquiredAt: '2025-05-02T00:00:00.000Z', location: 'gone', isFavorite: false, ...loaded },
  ];

  it('/collection: each account sees exactly its own items, every field as worked out by hand', async () => {
    const alice = await listAll<CollectionItemBody>(ctx, '/collection', 'alice');
    assert.deepEqual(alice.data, aliceCollection);
    assert.deepEqual(alice.pagination, { total: 5, limit: 50, offset: 0, hasMore: false });
    const bob = await listAll<CollectionItemBody>(ctx, '/collection', 'bob');
    assert.deepEqual(bob.data, bobCollection);
    assert.deepEqual(bob.pagination, { total: 2, limit: 50, offset: 0, hasMore: false });
    for (const row of [...alice.data, ...bob.data]) assert.deepEqual(Object.keys(row).sort(), COLLECTION_KEYS);
  });

  it('/collection/:id answers the own item, and 404 not_found for the other account\'s item as for a missing one', async () => {
    for (const item of aliceCollection) {
      const res = await ctx.get(`${V1}/collection/${item.id}`, 'alice');
      assert.equal(res.statusCode, 200);
      assert.deepEqual(body<DataBody<CollectionItemBody>>(res), { data: item });
    }
    for (const item of bobCollection) {
      const res = await ctx.get(`${V1}/collection/${item.id}`, 'bob');
      assert.deepEqual(body<DataBody<CollectionItemBody>>(res), { data: item });
    }
    const probes: Array<[string, number]> = [['alice', 6], ['alice', 7], ['bob', 1], ['bob', 4], ['alice', 999], ['bob', 999]];
    const messages: string[] = [];
    for (const [key, id] of probes) {
      const res = await ctx.get(`${V1}/collection/${id}`, key);
      assert.equal(res.statusCode, 404, `${key} /collection/${id}`);
      const err = body<ErrorBodyShape>(res);
      assert.deepEqual(Object.keys(err).sort(), ['error', 'message']);
      assert.equal(err.error, 'not_found');
      messages.push(err.message.replaceAll(String(id), '<id>'));
    }
    // Someone else's item is indistinguishable from a missing one.
    assert.equal(new Set(messages).size, 1, messages.join(' | '));
  });

  it('/collection/value: ownedItems counts OWNED only; estimatedValue sums them (50.25 + 0 + 0 + 10 = 60.25)', async () => {
    assert.deepEqual(await value(ctx, 'alice'), { ownedItems: 4, estimatedValue: 60.25 });
    // Bob: item 6 OWNED NEW at 500; item 7 is SOLD and does not count.
    assert.deepEqual(await value(ctx, 'bob'), { ownedItems: 1, estimatedValue: 500 });
  });

  it('/listings: own listings only, category from the catalogue, publicToken pub_...', async () => {
    const alice = await listAll<ListingBody>(ctx, '/listings', 'alice');
    assert.deepEqual(alice.data, [
      { id: 1, publicToken: 'pub_alice1', masterItemId: 1, title: 'Zelda OoT, complete', category: 'game', condition: 'CIB', status: 'ACTIVE', price: 55, currency: 'USD', acceptsTrade: true, shippingCost: 5, ...loaded },
    ]);
    assert.equal(alice.pagination.total, 1);
    const bob = await listAll<ListingBody>(ctx, '/listings', 'bob');
    assert.deepEqual(bob.data.map((l) => l.id), [2, 3]);
    assert.deepEqual(bob.data.map(({ publicToken: _token, ...rest }) => rest), [
      { id: 2, masterItemId: 3, title: 'Sealed Mario 64', category: 'game', condition: 'NEW', status: 'ACTIVE', price: 520, currency: 'USD', acceptsTrade: false, shippingCost: 0, ...loaded },
      { id: 3, masterItemId: 1, title: 'Loose Zelda', category: 'game', condition: 'LOOSE', status: 'SOLD', price: 25, currency: 'USD', acceptsTrade: false, shippingCost: 4.5, ...loaded },
    ]);
    const tokens = bob.data.map((l) => l.publicToken);
    for (const token of tokens) assert.match(token, /^pub_.+/);
    assert.notEqual(tokens[0], tokens[1]);
    for (const row of [...alice.data, ...bob.data]) assert.deepEqual(Object.keys(row).sort(), LISTING_KEYS);
  });

  it('/offers: only the offers made BY the key owner, not those received on its listings', async () => {
    const alice = await listAll<OfferBody>(ctx, '/offers', 'alice');
    assert.deepEqual(alice.data, [
      { id: 1, listingId: 2, amount: 480, tradeItemId: 1, message: 'Would you take my Zelda?', status: 'PENDING', ...loaded },
    ]);
    assert.equal(alice.pagination.total, 1);
    // Bob's offer 2 is on alice's listing 1: it is bob's, not alice's.
    const bob = await listAll<OfferBody>(ctx, '/offers', 'bob');
    assert.deepEqual(bob.data, [
      { id: 2, listingId: 1, amount: 50, tradeItemId: null, message: 'Offer from bob', status: 'DECLINED', ...loaded },
    ]);
    for (const row of [...alice.data, ...bob.data]) assert.deepEqual(Object.keys(row).sort(), OFFER_KEYS);
  });

  it('/transactions: those where the owner is buyer or seller, role set from the owner\'s side, no counterparty', async () => {
    const t1 = { id: 1, listingId: 3, amount: 25, platformFee: 2.5, status: 'SHIPPED', trackingNumber: '1Z999', shippingCarrier: 'UPS', estimatedDelivery: '2026-11-25T00:00:00.000Z', actualDelivery: null, ...loaded };
    const t2 = { id: 2, listingId: 1, amount: 55, platformFee: 5.5, status: 'DELIVERED', trackingNumber: '9400', shippingCarrier: 'USPS', estimatedDelivery: '2026-11-10T00:00:00.000Z', actualDelivery: '2026-11-09T15:00:00.000Z', ...loaded };
    const alice = await listAll<TransactionBody>(ctx, '/transactions', 'alice');
    assert.deepEqual(alice.data, [{ ...t1, role: 'buyer' }, { ...t2, role: 'seller' }]);
    const bob = await listAll<TransactionBody>(ctx, '/transactions', 'bob');
    assert.deepEqual(bob.data, [{ ...t1, role: 'seller' }, { ...t2, role: 'buyer' }]);
    for (const row of [...alice.data, ...bob.data]) {
      assert.deepEqual(Object.keys(row).sort(), TRANSACTION_KEYS);
      for (const key of Object.keys(row)) assert.doesNotMatch(key, /buyer|seller|account|user|counterpart|email/i);
    }
    const raw = (await ctx.get(`${V1}/transactions`, 'alice')).body;
    assert.doesNotMatch(raw, /bob@example\.com|alice@example\.com/);
  });

  it('another key of the same account sees the same rows (ownership is the account\'s, not the key\'s)', async () => {
    for (const path of [...OWNER_LISTS, '/collection/value']) {
      const first = await ctx.get(`${V1}${path}`, 'alice');
      const second = await ctx.get(`${V1}${path}`, 'alice-second');
      assert.equal(second.statusCode, 200);
      assert.deepEqual(second.json(), first.json(), path);
    }
    assert.equal((await ctx.get(`${V1}/collection/1`, 'alice-second')).statusCode, 200);
  });

  it('no parameter selects another account: unknown parameters are 400 bad_request', async () => {
    for (const path of [...OWNER_LISTS, '/collection/value', '/collection/6']) {
      for (const query of ['account=bob', 'accountId=2', 'userId=2']) {
        const res = await ctx.get(`${V1}${path}?${query}`, 'alice');
        assert.equal(res.statusCode, 400, `${path}?${query}`);
        assert.equal(body<ErrorBodyShape>(res).error, 'bad_request');
      }
    }
  });
});

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
