// The dataset's schema (src/domain/dataset.ts) is the one list of a row's fields: the loader's checks, its
// refusals and the columns it writes all come from it. These tests hold the schema to the store it is
// written into and to the wording of its refusals.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SECTION_NAMES } from '../../src/domain/dataset.js';
import { columnsOf, fieldPhrases, rowProblem, storedColumns } from '../../src/load/dataset-rows.js';
import type { Store } from '../../src/store/database.js';
import { openTestStore } from '../helpers/test-app.js';

const TABLES = {
  catalogue: 'catalogue_items',
  prices: 'price_records',
  collection: 'collection_items',
  listings: 'listings',
  offers: 'offers',
  transactions: 'transactions',
} as const;

describe('the dataset schema and the store', () => {
  let opened: { store: Store; close(): Promise<void> };
  before(async () => {
    opened = await openTestStore();
  });
  after(async () => opened.close());

  it('every column the loader derives from a section is a column of its table', async () => {
    const tables = await opened.store.db.introspection.getTables();
    for (const [section, table] of Object.entries(TABLES)) {
      const columns = new Set(tables.find((t) => t.name === table)?.columns.map((c) => c.name));
      assert.ok(columns.size > 0, `table ${table}`);
      for (const column of storedColumns(section as keyof typeof TABLES)) assert.ok(columns.has(column), `${section}: ${column} is a column of ${table}`);
    }
  });
});

describe('the dataset schema words its refusals', () => {
  it('every field of every section says what it expects', () => {
    for (const section of SECTION_NAMES) {
      for (const [field, expected] of fieldPhrases(section)) assert.match(expected, /^must /, `${section}.${field}`);
    }
  });

  it('names unknown fields, missing ones and bad values, in that order', () => {
    const price = { masterItemId: 1, upc: '010086810118', scrapeDate: '2026-11-01T00:00:00Z' };
    assert.equal(rowProblem('prices', price), null);
    assert.equal(rowProblem('prices', { ...price, colour: 'red', upc: 'x' }), "unknown field 'colour'");
    assert.equal(rowProblem('prices', { upc: 'x', scrapeDate: 'soon' }), "field 'masterItemId' is required");
    assert.equal(rowProblem('prices', { ...price, loose: -1 }), "field 'loose' must be a number >= 0");
    assert.equal(rowProblem('prices', { ...price, scrapeDate: '2026-02-30T00:00:00Z' }), "field 'scrapeDate' must be an ISO 8601 date-time such as 2026-11-01T00:00:00.000Z");
    assert.equal(rowProblem('prices', [price]), 'must be an object');
  });

  it('stores what it checked: canonical timestamps, flags as 1 or 0, account refs as ids, defaults filled in', () => {
    const now = '2026-11-20T00:00:00.000Z';
    const columns = columnsOf(
      'collection',
      { account: 'eve', masterItemId: 7, condition: 'CIB', status: 'OWNED', purchasePrice: 5, acquiredAt: '2024-01-01T02:00:00+02:00', location: '', isFavorite: true, estimatedValue: 9 },
      'collection row 1',
      now,
      (_where, field, ref) => (field === 'account' && ref === 'eve' ? 42 : assert.fail(`${field} ${String(ref)}`)),
    );
    assert.deepEqual(columns, {
      id: null,
      account_id: 42,
      master_item_id: 7,
      condition: 'CIB',
      status: 'OWNED',
      purchase_price: 5,
      acquired_at: '2024-01-01T00:00:00.000Z',
      location: '',
      is_favorite: 1,
      created_at: now,
      updated_at: now,
    });
  });
});
