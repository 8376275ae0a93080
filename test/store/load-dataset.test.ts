// The dataset loader behind `shelfapi load` and `seed` (docs/contract.md, "Operator command line"): a file that breaks a rule is
// refused whole, with a message naming the section and the row, and nothing of it is written (every table's
// row count is compared before and after); a good file keeps its ids, fills in the defaults, and numbers
// rows without an id after the largest id of their table.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '../../src/store/database.js';
import { DatasetError, loadDataset, type DatasetInput } from '../../src/load/load-dataset.js';
import { BadRowsError } from '../../src/errors/bad-rows.js';
import type { ProgressSink } from '../../src/load/progress.js';
import { generateDemo } from '../../src/demo/index.js';
import { FIXTURE_NOW, fixture } from '../helpers/fixture.js';
import { assertRefused, runCli, tableCounts, tempDir } from '../helpers/cli-helpers.js';
import { openTestStore, TEST_STORE } from '../helpers/test-app.js';

const NOW = Date.parse(FIXTURE_NOW);
const NOW_ISO = new Date(NOW).toISOString();
const LOAD = { keyPrefix: 'shelf', now: NOW };

const tmp = tempDir();
const stores: Array<{ store: Store; databaseUrl: string; close(): Promise<void> }> = [];
after(async () => {
  for (const opened of stores) await opened.close();
  tmp.cleanup();
});
const urlOf = (store: Store): string => stores.find((s) => s.store === store)!.databaseUrl;

/** A new SQLite store, with the shared fixture already loaded unless told otherwise. */
async function newStore(withFixture = true): Promise<Store> {
  const opened = await openTestStore();
  stores.push(opened);
  const store = opened.store;
  if (withFixture) await loadDataset(store, fixture(), LOAD);
  return store;
}

type Row = Record<string, unknown>;
type Rows = Record<string, Row[]>;

function item(masterItemId: number | undefined, name: string): Row {
  return {
    ...(masterItemId === undefined ? {} : { masterItemId }),
    name,
    slug: name.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
    category: 'game',
    platform: 'Sega Saturn',
    status: 'PUBLISHED',
    subCategory: null,
    modelNumber: 'MK-81086',
    releaseYear: 1996,
    region: 'NTSC-U',
    format: 'CD',
    developer: 'Sonic Team',
    publisher: 'Sega',
    genre: 'Action',
    manufacturer: null,
    description: `${name} for the Saturn.`,
    imageUrl: 'https://images.example.com/saturn.jpg',
  };
}

/**
 * A valid second file for a store that holds the fixture: two new accounts with data that points at rows of
 * this file and of the store. Each refusal case below breaks exactly one rule of it.
 */
function extra(): Rows {
  return {
    accounts: [
      { ref: 'eve', email: 'eve@example.com', plan: 'enthusiast' },
      { ref: 'frank', email: 'frank@example.com', plan: 'addon', planStatus: 'active' },
    ],
    keys: [
      { ref: 'eve-key', account: 'eve', name: 'ci', scopes: ['catalogue:read', 'prices:read'] },
      { ref: 'frank-key', account: 'frank', name: 'ci', scopes: [], expiresAt: null, revoked: false },
    ],
    catalogue: [item(101, 'NiGHTS into Dreams'), item(102, 'Panzer Dragoon Saga'), item(103, 'Guardian Heroes')],
    prices: [
      { masterItemId: 101, upc: '010086810118', loose: 20, cib: 35, new: null, boxOnly: 5, manualOnly: 4, scrapeDate: '2026-11-01T00:00:00.000Z' },
      { masterItemId: 102, upc: '010086810125', loose: 300, cib: 450, new: 1200, scrapeDate: '2026-11-01T00:00:00Z' },
      { masterItemId: 2, upc: '045496870027', loose: 16, scrapeDate: '2026-11-18T00:00:00.000Z' },
    ],
    collection: [
      { id: 101, account: 'eve', masterItemId: 101, condition: 'CIB', status: 'OWNED', purchasePrice: 25, acquiredAt: '2024-01-01T00:00:00.000Z', location: 'shelf B', isFavorite: true },
      { id: 102, account: 'frank', masterItemId: 102, condition: 'LOOSE', status: 'OWNED', purchasePrice: 250, acquiredAt: '2024-02-01T00:00:00.000Z', location: 'safe', isFavorite: false },
      { id: 103, account: 'eve', masterItemId: 1, condition: 'NEW', status: 'WISHLIST', purchasePrice: 0, acquiredAt: '2024-03-01T00:00:00.000Z', location: '', isFavorite: false },
    ],
    listings: [
      { id: 101, account: 'eve', masterItemId: 101, title: 'NiGHTS CIB', condition: 'CIB', status: 'ACTIVE', price: 40, currency: 'USD', acceptsTrade: true, shippingCost: 5, publicToken: 'pub_eve101' },
      { id: 102, account: 'frank', masterItemId: 102, title: 'PDS loose', condition: 'LOOSE', status: 'ACTIVE', price: 320, currency: 'USD', acceptsTrade: false, shippingCost: 0 },
    ],
    offers: [
      { id: 101, account: 'frank', listingId: 101, amount: 35, tradeItemId: 102, message: 'trade?', status: 'PENDING' },
      { id: 102, account: 'eve', listingId: 102, amount: 300, tradeItemId: null, message: 'cash', status: 'DECLINED' },
      // An offer on a listing of the store (alice's listing 1), made by an account of this file.
      { id: 103, account: 'eve', listingId: 1, amount: 45, message: 'hi alice', status: 'PENDING' },
    ],
    transactions: [
      { id: 101, buyer: 'frank', seller: 'eve', listingId: 101, amount: 40, platformFee: 4, status: 'PAID', trackingNumber: '', shippingCarrier: 'UPS', estimatedDelivery: '2026-11-25T00:00:00.000Z', actualDelivery: null },
      { id: 102, buyer: 'eve', seller: 'frank', listingId: 102, amount: 320, platformFee: 32, status: 'COMPLETED', trackingNumber: '1Z1', shippingCarrier: 'USPS', estimatedDelivery: '2026-11-05T00:00:00.000Z', actualDelivery: '2026-11-04T10:00:00.000Z' },
    ],
  };
}

/**
 * Loads `input` into `store` (or checks it, `dryRun`) and expects a refusal naming `pattern`, with every
 * table unchanged: a BadRowsError naming rows, or a DatasetError for a file that is wrong as a whole.
 */
async function expectRefused(store: Store, input: unknown, pattern: RegExp, dryRun = false): Promise<string> {
  const before = await tableCounts(store);
  const error = await loadDataset(store, input as DatasetInput, { ...LOAD, dryRun }).then(
    () => assert.fail('the dataset was accepted'),
    (err: unknown) => err,
  );
  assert.ok(error instanceof BadRowsError || error instanceof DatasetError, `a BadRowsError or a DatasetError, got ${String(error)}`);
  assert.match(error.message, pattern);
  assert.deepEqual(await tableCounts(store), before, 'nothing of a refused dataset is written');
  return error.message;
}

const set = (section: string, index: number, changes: Row) => (d: Rows) => {
  d[section]![index] = { ...d[section]![index], ...changes };
};
const drop = (section: string, index: number, field: string) => (d: Rows) => {
  delete d[section]![index]![field];
};

describe('loadDataset refuses a file that breaks a rule, naming the section and row, writing nothing', () => {
  let store: Store;
  before(async () => {
    store = await newStore();
  });

  const cases: Array<[string, (d: Rows) => void, RegExp]> = [
    // Shape of the file
    ['an unknown field', set('catalogue', 1, { colour: 'red' }), /^catalogue row 2: unknown field 'colour'/],
    ['a missing required field', drop('listings', 0, 'currency'), /^listings row 1: field 'currency' is required/],
    // A field named after an Object.prototype member is unknown like any other (JSON.parse makes it an own field).
    ['a __proto__ field', set('catalogue', 1, JSON.parse('{"__proto__": {"status": "PUBLISHED"}}') as Row), /^catalogue row 2: unknown field '__proto__'/],
    ['a __proto__ field on an account', set('accounts', 0, JSON.parse('{"__proto__": null}') as Row), /^accounts row 1: unknown field '__proto__'/],
    ['a constructor field on a key', set('keys', 0, { constructor: 'x' }), /^keys row 1: unknown field 'constructor'/],
    ['a toString field on a price', set('prices', 0, { toString: 1 }), /^prices row 1: unknown field 'toString'/],
    // Key names: 1 to 64 characters once trimmed.
    ['a key name of 65 characters', set('keys', 1, { name: 'k'.repeat(65) }), /^keys row 2: .*64 characters/],
    ['a key name of 100 kB', set('keys', 0, { name: 'k'.repeat(100_000) }), /^keys row 1: .*64 characters/],
    ['an empty key name', set('keys', 1, { name: '' }), /^keys row 2: .*name/],
    ['a key name of spaces', set('keys', 1, { name: '   ' }), /^keys row 2: .*name/],
    ['a row that is not an object', (d) => void (d.offers![1] = [] as unknown as Row), /^offers row 2: /],
    // Bad values
    ['a bad catalogue status', set('catalogue', 2, { status: 'LIVE' }), /^catalogue row 3: field 'status'/],
    ['a bad collection status', set('collection', 2, { status: 'owned' }), /^collection row 3: field 'status'/],
    ['a bad listing status', set('listings', 1, { status: 'OPEN' }), /^listings row 2: field 'status'/],
    ['a bad offer status', set('offers', 0, { status: 'REJECTED' }), /^offers row 1: field 'status'/],
    ['a bad transaction status', set('transactions', 1, { status: 'LOST' }), /^transactions row 2: field 'status'/],
    ['a bad condition', set('collection', 1, { condition: 'MINT' }), /^collection row 2: field 'condition'/],
    ['a bad listing condition', set('listings', 0, { condition: 'cib' }), /^listings row 1: field 'condition'/],
    ['a negative price point', set('prices', 2, { loose: -1 }), /^prices row 3: field 'loose'/],
    ['a negative listing price', set('listings', 1, { price: -5 }), /^listings row 2: field 'price'/],
    ['a price given as a string', set('prices', 0, { cib: '35' }), /^prices row 1: field 'cib'/],
    ['a date that does not exist', set('prices', 1, { scrapeDate: '2026-02-30T00:00:00Z' }), /^prices row 2: field 'scrapeDate'/],
    ['a timestamp that is not ISO 8601', set('transactions', 0, { estimatedDelivery: 'next week' }), /^transactions row 1: field 'estimatedDelivery'/],
    ['a date without a time', set('collection', 0, { acquiredAt: '2024-01-01' }), /^collection row 1: field 'acquiredAt'/],
    ['a bad expiresAt', set('keys', 1, { expiresAt: 'never' }), /^keys row 2: field 'expiresAt'/],
    ['a short upc', set('prices', 0, { upc: '12345' }), /^prices row 1: field 'upc'/],
    ['a upc given as a number', set('prices', 0, { upc: 10086810118 }), /^prices row 1: field 'upc'/],
    ['a upc with letters', set('prices', 1, { upc: '01008681012X' }), /^prices row 2: field 'upc'/],
    ['a bad plan', set('accounts', 1, { plan: 'gold' }), /^accounts row 2: field 'plan'/],
    ['a bad email', set('accounts', 0, { email: 'eve' }), /^accounts row 1: field 'email'/],
    ['an unknown scope', set('keys', 0, { scopes: ['catalogue:read', 'catalogue:write'] }), /^keys row 1: field 'scopes'/],
    ['a fractional id', set('collection', 2, { id: 1.5 }), /^collection row 3: field 'id'/],
    ['a bad currency', set('listings', 0, { currency: 'usd' }), /^listings row 1: field 'currency'/],
    ['a bad publicToken', set('listings', 0, { publicToken: 'eve101' }), /^listings row 1: field 'publicToken'/],
    ['planStatus given with plan none', set('accounts', 1, { plan: 'none', planStatus: 'active' }), /^accounts row 2: planStatus/],
    // References to missing or wrong rows
    ['a price of an unknown masterItemId', set('prices', 2, { masterItemId: 99999 }), /^prices row 3: masterItemId 99999 is not in the catalogue/],
    ['a collection item of an unknown item', set('collection', 0, { masterItemId: 99999 }), /^collection row 1: masterItemId 99999 is not in the catalogue/],
    ['a listing of an unknown item', set('listings', 1, { masterItemId: 99999 }), /^listings row 2: masterItemId 99999 is not in the catalogue/],
    ['an offer on a missing listing', set('offers', 1, { listingId: 99999 }), /^offers row 2: listingId 99999 does not exist/],
    ['an offer trading an item of someone else in the file', set('offers', 0, { tradeItemId: 101 }), /^offers row 1: tradeItemId 101 is not a collection item of the offerer/],
    ['an offer trading an item of someone else in the store', set('offers', 0, { tradeItemId: 1 }), /^offers row 1: tradeItemId 1 is not a collection item of the offerer/],
    ['an offer trading a missing item', set('offers', 0, { tradeItemId: 99999 }), /^offers row 1: tradeItemId 99999 does not exist/],
    ['an offer on its own listing', set('offers', 1, { listingId: 101 }), /^offers row 2: .*own listing/],
    ['a transaction whose listing is not the seller\'s', set('transactions', 1, { listingId: 101 }), /^transactions row 2: listing 101 is not the seller's/],
    ['a transaction on a store listing of another seller', set('transactions', 0, { listingId: 1 }), /^transactions row 1: listing 1 is not the seller's/],
    ['a transaction on a missing listing', set('transactions', 0, { listingId: 99999 }), /^transactions row 1: listingId 99999 does not exist/],
    ['a transaction where buyer is seller', set('transactions', 0, { buyer: 'eve' }), /^transactions row 1: buyer and seller/],
    ['a key of an unknown account ref', set('keys', 1, { account: 'zed' }), /^keys row 2: account 'zed' is not an account of this file/],
    // ref names are local to the file: 'alice' exists in the store, but not in this file.
    ['an account ref of another file', set('collection', 2, { account: 'alice' }), /^collection row 3: account 'alice' is not an account of this file/],
    ['a transaction with an unknown buyer ref', set('transactions', 1, { buyer: 'zed' }), /^transactions row 2: buyer 'zed'/],
    // Duplicates in the file
    ['a masterItemId twice in the file', set('catalogue', 2, { masterItemId: 101 }), /^catalogue row 3: id 101 appears twice/],
    ['a collection id twice in the file', set('collection', 2, { id: 101 }), /^collection row 3: id 101 appears twice/],
    ['a listing id twice in the file', set('listings', 1, { id: 101 }), /^listings row 2: id 101 appears twice/],
    ['an offer id twice in the file', set('offers', 2, { id: 101 }), /^offers row 3: id 101 appears twice/],
    ['a transaction id twice in the file', set('transactions', 1, { id: 101 }), /^transactions row 2: id 101 appears twice/],
    ['an account ref twice', set('accounts', 1, { ref: 'eve' }), /^accounts row 2: ref 'eve'/],
    ['a key ref twice', set('keys', 1, { ref: 'eve-key' }), /^keys row 2: ref 'eve-key'/],
    ['an email twice in the file', set('accounts', 1, { email: 'eve@example.com' }), /^accounts row 2: .*eve@example\.com/],
    ['an email twice in the file, in another case', set('accounts', 1, { email: 'EVE@Example.com' }), /^accounts row 2: .*EVE@Example\.com/],
    ['two price records of one item at one scrapeDate', set('prices', 1, { masterItemId: 101, scrapeDate: '2026-11-01T00:00:00+00:00' }), /^prices row 2: /],
    ['a publicToken twice in the file', set('listings', 1, { publicToken: 'pub_eve101' }), /^listings row 2: publicToken/],
    // Rows that already exist in the store
    ['a masterItemId of the store', set('catalogue', 1, { masterItemId: 1 }), /^catalogue row 2: masterItemId 1 already exists in the store/],
    ['a collection id of the store', set('collection', 0, { id: 1 }), /^collection row 1: id 1 already exists in the store/],
    ['a listing id of the store', set('listings', 1, { id: 2 }), /^listings row 2: id 2 already exists in the store/],
    ['an offer id of the store', set('offers', 2, { id: 1 }), /^offers row 3: id 1 already exists in the store/],
    ['a transaction id of the store', set('transactions', 0, { id: 2 }), /^transactions row 1: id 2 already exists in the store/],
    ['an email of the store', set('accounts', 1, { email: 'alice@example.com' }), /^accounts row 2: .*alice@example\.com already exists/],
    ['an email of the store, in another case', set('accounts', 1, { email: 'Alice@EXAMPLE.com' }), /^accounts row 2: .*Alice@EXAMPLE\.com already exists/],
    ['a publicToken of the store', set('listings', 0, { publicToken: 'pub_alice1' }), /^listings row 1: publicToken/],
    // Pinned: `load` adds price records, it does not upsert them (that is `import prices`).
    ['a price record the store already holds', set('prices', 2, { masterItemId: 1, scrapeDate: '2026-11-15T00:00:00.000Z' }), /^prices row 3: /],
  ];

  for (const [name, mutate, pattern] of cases) {
    it(name, async () => {
      const dataset = extra();
      mutate(dataset);
      await expectRefused(store, dataset, pattern);
    });
  }

  it('an unknown section', async () => {
    await expectRefused(store, { ...extra(), widgets: [] }, /unknown section 'widgets'/);
  });

  it('a section that is not a list', async () => {
    await expectRefused(store, { ...extra(), offers: { id: 1 } }, /^offers: must be a list/);
  });

  it('a dataset that is not an object', async () => {
    await expectRefused(store, [extra()], /must be a JSON object/);
  });

  it('the unbroken file loads (so every refusal above is due to its one change)', async () => {
    const before = await tableCounts(store);
    const result = await loadDataset(store, extra(), LOAD);
    assert.deepEqual(result.counts, { accounts: 2, keys: 2, catalogue: 3, prices: 3, collection: 3, listings: 2, offers: 3, transactions: 2 });
    const after = await tableCounts(store);
    assert.equal(after.accounts, before.accounts! + 2);
    assert.equal(after.api_keys, before.api_keys! + 2);
    assert.equal(after.catalogue_items, before.catalogue_items! + 3);
    assert.equal(after.price_records, before.price_records! + 3);
    assert.equal(after.current_prices, before.current_prices! + 2, 'item 2 already had a current price');
    assert.equal(after.collection_items, before.collection_items! + 3);
    assert.equal(after.listings, before.listings! + 2);
    assert.equal(after.offers, before.offers! + 3);
    assert.equal(after.transactions, before.transactions! + 2);
    const current = await store.db.selectFrom('current_prices').selectAll().where('master_item_id', '=', 2).executeTakeFirstOrThrow();
    assert.equal(current.scrape_date, '2026-11-18T00:00:00.000Z', 'a newer record of a store item becomes its current price');
    assert.equal(current.loose, 16);
  });
});

describe('loadDataset reports every bad row, with its field and value', () => {
  let store: Store;
  before(async () => {
    store = await newStore();
  });

  it('three bad rows of different kinds (a value, an item not in the catalogue, an id of the store): all three, nothing written', async () => {
    const dataset = extra();
    dataset.catalogue![2]!.status = 'LIVE';
    dataset.prices![2]!.masterItemId = 99999;
    dataset.collection![0]!.id = 1;
    await expectRefused(store, dataset, /^catalogue row 3: /);
    const error = await loadDataset(store, dataset, LOAD).then(() => assert.fail('accepted'), (err: unknown) => err);
    assert.ok(error instanceof BadRowsError);
    assert.deepEqual(
      error.rows.map((r) => [r.section, r.line, r.column, r.value]),
      [['catalogue', 3, 'status', 'LIVE'], ['prices', 3, 'masterItemId', 99999], ['collection', 1, 'id', 1]],
    );
    assert.match(error.rows[0]!.message, /^field 'status' .*, got "LIVE"$/);
    assert.deepEqual(error.message.split('\n').slice(1), ['prices row 3: masterItemId 99999 is not in the catalogue', 'collection row 1: id 1 already exists in the store']);
    assert.equal(error.more, 0);
  });

  it('150 bad rows: the first 100 in file order, then "and 50 more bad lines"', async () => {
    // Even rows name items not in the catalogue (found when their batch is checked against the store), odd
    // rows a bad upc (found as the row is read): the report is in file order all the same.
    const prices = Array.from({ length: 150 }, (_, i) =>
      i % 2 === 0
        ? { masterItemId: 900_000 + i, upc: '000000000017', loose: 1, scrapeDate: '2026-11-01T00:00:00.000Z' }
        : { masterItemId: 1, upc: 'x', loose: 1, scrapeDate: '2026-11-01T00:00:00.000Z' },
    );
    await expectRefused(store, { prices }, /^prices row 1: masterItemId 900000 is not in the catalogue\nprices row 2: field 'upc' .*, got "x"\n/);
    const error = await loadDataset(store, { prices }, LOAD).then(() => assert.fail('accepted'), (err: unknown) => err);
    assert.ok(error instanceof BadRowsError);
    assert.deepEqual(error.rows.map((r) => r.line), Array.from({ length: 100 }, (_, i) => i + 1));
    assert.equal(error.more, 50);
    assert.match(error.message, /\nprices row 100: [^\n]+\nand 50 more bad lines$/);
  });

  it('--dry-run of a good file: the counts it would write, and nothing written (rows, data version)', async () => {
    const version = async () => (await store.db.selectFrom('data_version').select('version').executeTakeFirstOrThrow()).version;
    const before = await tableCounts(store);
    const versionBefore = await version();
    const result = await loadDataset(store, extra(), { ...LOAD, dryRun: true });
    assert.deepEqual(result.counts, { accounts: 2, keys: 2, catalogue: 3, prices: 3, collection: 3, listings: 2, offers: 3, transactions: 2 });
    assert.deepEqual(await tableCounts(store), before, 'nothing written');
    assert.equal(await version(), versionBefore, 'the data version is unchanged');
  });

  it('--dry-run of a bad file: every bad row, as a load reports them', async () => {
    const dataset = extra();
    dataset.listings![1]!.currency = 'usd';
    dataset.offers![1]!.listingId = 99999;
    // Transaction 2 sells listing 102, refused: it is named as such, not as a listing that does not exist.
    await expectRefused(
      store,
      dataset,
      /^listings row 2: field 'currency' .*, got "usd"\noffers row 2: listingId 99999 does not exist\ntransactions row 2: listingId 102 is listings row 2 of this file, which is refused$/,
      true,
    );
  });
});

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

describe('loadDataset: a bad row after many good ones (crossing the 5000-row batches) still writes nothing', () => {
  let store: Store;
  before(async () => {
    store = await newStore();
  });

  const bigCatalogue = (n: number): Row[] =>
    Array.from({ length: n }, (_, i) => ({
      masterItemId: 100_001 + i,
      name: `Item ${i + 1}`,
      slug: `item-${i + 1}`,
      category: 'game',
      platform: 'Game Boy',
      status: 'PUBLISHED',
    }));

  it('a bad value in catalogue row 12000', async () => {
    const catalogue = bigCatalogue(12_000);
    catalogue[11_999]!.status = 'LIVE';
    await expectRefused(store, { catalogue }, /^catalogue row 12000: field 'status'/);
  });

  it('a masterItemId of the store in catalogue row 12000', async () => {
    const catalogue = bigCatalogue(12_000);
    catalogue[11_999]!.masterItemId = 3;
    await expectRefused(store, { catalogue }, /^catalogue row 12000: masterItemId 3 already exists in the store/);
  });

  it('a masterItemId of the store in catalogue row 10001 (first row of the third batch)', async () => {
    const catalogue = bigCatalogue(12_000);
    catalogue[10_000]!.masterItemId = 3;
    await expectRefused(store, { catalogue }, /^catalogue row 10001: masterItemId 3 already exists in the store/);
  });

  it('price row 12000 of an unknown item, after 12000 catalogue rows and 11999 good prices of this file', async () => {
    const catalogue = bigCatalogue(12_000);
    const prices: Row[] = catalogue.map((c) => ({ masterItemId: c.masterItemId, upc: '000000000017', loose: 1, scrapeDate: '2026-11-01T00:00:00.000Z' }));
    prices[11_999]!.masterItemId = 999_999;
    await expectRefused(store, { accounts: [{ ref: 'zoe', email: 'zoe@example.com', plan: 'addon' }], catalogue, prices }, /^prices row 12000: masterItemId 999999 is not in the catalogue/);
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

describe('shelfapi load (command line)', () => {
  let store: Store;
  before(async () => {
    store = await newStore();
  });

  it('a refused file with --json: exit 1, the bad rows as JSON on stdout, one line on stderr, nothing written', async () => {
    const dataset = extra();
    dataset.prices![2]!.masterItemId = 424242;
    const file = join(tmp.dir, 'bad.json');
    writeFileSync(file, JSON.stringify(dataset));
    const before = await tableCounts(store);
    const result = await runCli(['load', file, '--json'], { DATABASE_URL: urlOf(store) });
    assert.equal(result.code, 1);
    assert.equal(result.stderr, 'shelfapi: 1 bad line; nothing written (listed on standard output)\n');
    assert.deepEqual(JSON.parse(result.stdout), {
      errors: [{ line: 3, section: 'prices', column: 'masterItemId', value: 424242, message: 'masterItemId 424242 is not in the catalogue' }],
      more: 0,
    });
    assert.deepEqual(await tableCounts(store), before);
  });

  it('a file that is not JSON, and a missing file: one line each, nothing written', async () => {
    const file = join(tmp.dir, 'broken.json');
    writeFileSync(file, '{"accounts": [');
    const before = await tableCounts(store);
    const [broken, missing] = await Promise.all([
      runCli(['load', file], { DATABASE_URL: urlOf(store) }),
      runCli(['load', join(tmp.dir, 'nope.json')], { DATABASE_URL: urlOf(store) }),
    ]);
    assertRefused(broken, /not valid JSON/);
    assertRefused(missing, /cannot read .*nope\.json/);
    assert.deepEqual(await tableCounts(store), before);
  });
});
