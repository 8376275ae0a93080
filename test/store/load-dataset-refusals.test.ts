// The dataset loader behind `shelfapi load` and `seed` (docs/contract.md, "Operator command line"): a file that breaks a rule is
// refused whole, with a message naming the section and the row, and nothing of it is written (every table's
// row count is compared before and after), however far into the file the bad row is, and `shelfapi load`
// says so in one line or as JSON. What a good file writes is load-dataset-writes.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '../../src/store/database.js';
import { DatasetError, loadDataset, type DatasetInput } from '../../src/load/load-dataset.js';
import { BadRowsError } from '../../src/errors/bad-rows.js';
import { assertRefused, runCli, tableCounts, tempDir } from '../helpers/cli-helpers.js';
import { extra, LOAD, newStore, type Row, type Rows, urlOf } from './load-dataset-fixtures.js';

const tmp = tempDir();
after(() => tmp.cleanup());

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
