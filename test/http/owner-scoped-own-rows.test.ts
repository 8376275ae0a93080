// The owner-scoped routes (/collection, /collection/:id, /collection/value, /listings, /offers,
// /transactions) on the shared fixture, as a client sees them: each account sees its own rows only, every
// field as worked out by hand, whichever of its keys it uses (docs/contract.md, "Values and data rules"); no
// counterparty identity; no parameter that selects another account. The value rules and pagination are in
// owner-scoped-values-pagination.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { body, type DataBody, type ErrorBodyShape } from '../helpers/resource-fixtures.js';
import { listAll, OWNER_LISTS, value, type CollectionItemBody, type ListingBody, type OfferBody, type TransactionBody } from './owner-scoped-helpers.js';

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
