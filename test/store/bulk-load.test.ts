// Bulk writes as the store receives them (PostgreSQL: COPY FROM STDIN inside the load's transaction): text
// holding COPY's own structure characters (tab, newline, carriage return, backslash, `\N`, `\.`) and empty
// strings against nulls arrive exactly as given; numbers in exponent form keep their value; the current price
// of every item is its latest record; and a load that fails after COPY has run leaves nothing behind.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { importPrices } from '../../src/services/price-import.service.js';
import type { Store } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { tableCounts } from '../helpers/cli-helpers.js';
import { openTestStore } from '../helpers/test-app.js';

const LOAD = { keyPrefix: 'shelf', now: Date.parse(FIXTURE_NOW) };
const opened: Array<{ close(): Promise<void> }> = [];
after(async () => {
  for (const o of opened) await o.close();
});

async function newStore(): Promise<Store> {
  const o = await openTestStore();
  opened.push(o);
  return o.store;
}

const AWKWARD = ['tab\there', 'line\nfeed', 'carriage\rreturn', 'crlf\r\nend', 'back\\slash', '\\N', '\\.', 'a\\tb', 'trailing\\', 'Ünïcødé ✓', ''];

function catalogueItem(masterItemId: number, name: string, description: string | null) {
  return {
    masterItemId,
    name,
    slug: `item-${masterItemId}`,
    category: 'game',
    platform: 'PC',
    status: 'PUBLISHED' as const,
    description,
    manufacturer: null,
  };
}

describe('bulk loads keep every value exactly', () => {
  it('text with COPY structure characters, empty strings and nulls', async () => {
    const store = await newStore();
    const catalogue = AWKWARD.map((text, i) => catalogueItem(i + 1, `name ${text}`, text));
    catalogue.push(catalogueItem(AWKWARD.length + 1, 'no description', null));
    await loadDataset(store, { catalogue }, LOAD);
    const rows = await store.db.selectFrom('catalogue_items').select(['master_item_id', 'name', 'description', 'manufacturer']).orderBy('master_item_id').execute();
    assert.deepEqual(
      rows.map((r) => [r.name, r.description, r.manufacturer]),
      catalogue.map((c) => [c.name, c.description, null]),
    );
  });

  it('prices in exponent form and the latest record as the current price', async () => {
    const store = await newStore();
    await loadDataset(
      store,
      {
        catalogue: [catalogueItem(1, 'one', null), catalogueItem(2, 'two', null)],
        prices: [
          { masterItemId: 1, upc: '000000000001', loose: 1e-7, cib: 1e21, new: 0.1 + 0.2, scrapeDate: '2026-11-01T00:00:00.000Z' },
          { masterItemId: 1, upc: '000000000001', loose: 2, scrapeDate: '2026-11-03T00:00:00.000Z' },
          { masterItemId: 1, upc: '000000000001', loose: 3, scrapeDate: '2026-11-02T00:00:00.000Z' },
          { masterItemId: 2, upc: '000000000002', loose: 123.45, cib: null, scrapeDate: '2026-11-01T00:00:00.000Z' },
        ],
      },
      LOAD,
    );
    const records = await store.db.selectFrom('price_records').select(['loose', 'cib', 'new']).where('master_item_id', '=', 1).orderBy('scrape_date').execute();
    assert.deepEqual(records[0], { loose: 1e-7, cib: 1e21, new: 0.1 + 0.2 });
    const current = await store.db.selectFrom('current_prices').select(['master_item_id', 'loose', 'cib', 'scrape_date']).orderBy('master_item_id').execute();
    assert.deepEqual(current, [
      { master_item_id: 1, loose: 2, cib: null, scrape_date: '2026-11-03T00:00:00.000Z' },
      { master_item_id: 2, loose: 123.45, cib: null, scrape_date: '2026-11-01T00:00:00.000Z' },
    ]);
  });
});

/** The indexes and triggers on the catalogue, by name and definition. */
async function catalogueSchema(store: Store): Promise<string[]> {
  const rows =
    store.dialect === 'postgres'
      ? (await sql<{ d: string }>`select indexdef as d from pg_indexes where schemaname = current_schema() and tablename = 'catalogue_items'`.execute(store.db)).rows
      : (await sql<{ d: string }>`select type || ' ' || name || ' ' || coalesce(sql, '') as d from sqlite_master where tbl_name = 'catalogue_items'`.execute(store.db)).rows;
  return rows.map((r) => r.d).sort();
}

describe('a load into an empty catalogue sets its search index aside and puts it back', () => {
  it('after a load, and after a refused one, the catalogue has the same indexes and triggers, and search finds the names', async () => {
    const store = await newStore();
    const schema = await catalogueSchema(store);
    assert.ok(schema.length >= 3, schema.join('\n'));
    // Refused after its first batch of 5,000 was written (and the search index set aside on PostgreSQL).
    const refused = [...Array.from({ length: 5001 }, (_, i) => catalogueItem(i + 1, `Refused ${i + 1}`, null)), { name: 'no slug' }];
    await assert.rejects(loadDataset(store, { catalogue: refused }, LOAD), /catalogue row 5002/);
    assert.deepEqual(await catalogueSchema(store), schema);
    await loadDataset(store, { catalogue: Array.from({ length: 6000 }, (_, i) => catalogueItem(i + 1, `Chrono Name ${i + 1}`, null)) }, LOAD);
    assert.deepEqual(await catalogueSchema(store), schema);
    const found =
      store.dialect === 'postgres'
        ? await sql<{ n: number }>`select count(*)::int as n from catalogue_items where search_name like '%name 5999%'`.execute(store.db)
        : await sql<{ n: number }>`select count(*) as n from catalogue_fts where catalogue_fts match '"name 5999"'`.execute(store.db);
    assert.equal(Number(found.rows[0]?.n), 1);
  });
});

describe('a load refused after its rows were written leaves nothing', () => {
  it('a bad collection row after 12,000 catalogue rows and their prices (written by COPY on PostgreSQL)', async () => {
    const store = await newStore();
    const catalogue = Array.from({ length: 12_000 }, (_, i) => catalogueItem(i + 1, `item ${i + 1}`, null));
    const prices = catalogue.map((c) => ({ masterItemId: c.masterItemId, upc: '000000000001', loose: 1, scrapeDate: '2026-11-01T00:00:00.000Z' }));
    const before = await tableCounts(store);
    await assert.rejects(
      loadDataset(
        store,
        {
          accounts: [{ ref: 'a', email: 'a@example.com', plan: 'enthusiast' }],
          catalogue,
          prices,
          collection: [{ account: 'a', masterItemId: 99_999, condition: 'CIB', status: 'OWNED', purchasePrice: 1, acquiredAt: '2024-01-01T00:00:00.000Z', location: '', isFavorite: false }],
        },
        LOAD,
      ),
      /collection row 1/,
    );
    assert.deepEqual(await tableCounts(store), before);
  });

  it('an import refused on its last line after a full batch was upserted', async () => {
    const store = await newStore();
    const catalogue = Array.from({ length: 3000 }, (_, i) => catalogueItem(i + 1, `item ${i + 1}`, null));
    await loadDataset(store, { catalogue }, LOAD);
    const before = await tableCounts(store);
    const lines = catalogue.map((c) => `${c.masterItemId},x,y,PC,game,000000000001,1,,,,,2026-11-01T00:00:00.000Z`);
    lines.push('99999,x,y,PC,game,000000000001,1,,,,,2026-11-01T00:00:00.000Z');
    const csv = `masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate\r\n${lines.join('\r\n')}\r\n`;
    await assert.rejects(importPrices(store, Readable.from([csv])), /line 3002/);
    assert.deepEqual(await tableCounts(store), before);
  });
});
