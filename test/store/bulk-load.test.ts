// Bulk writes as the store receives them (PostgreSQL: COPY FROM STDIN inside the load's transaction): text
// holding COPY's own structure characters (tab, newline, carriage return, backslash, `\N`, `\.`) and empty
// strings against nulls arrive exactly as given; numbers in exponent form keep their value; the current price
// of every item is its latest record; and a load that fails after COPY has run leaves nothing behind, with
// the catalogue's search index and foreign keys as they were.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { importPrices } from '../../src/services/price-import.service.js';
import type { Store } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { tableCounts } from '../helpers/cli-helpers.js';
import { openTestStore, TEST_STORE } from '../helpers/test-app.js';

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

/** The foreign keys of the tables a load fills in bulk, by table and definition. */
async function catalogueKeys(store: Store): Promise<string[]> {
  const rows =
    store.dialect === 'postgres'
      ? (
          await sql<{ d: string }>`select conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) as d from pg_constraint
            where contype = 'f' and confrelid = 'catalogue_items'::regclass`.execute(store.db)
        ).rows
      : (
          await sql<{ d: string }>`select m.name || ' ' || f."from" || ' ' || f."table" || '.' || f."to" as d
            from sqlite_master m, pragma_foreign_key_list(m.name) f where f."table" = 'catalogue_items'`.execute(store.db)
        ).rows;
  return rows.map((r) => r.d).sort();
}

describe('a load into an empty catalogue checks its price rows against it in one go', () => {
  // On PostgreSQL the keys from price_records and current_prices to the catalogue are dropped while the
  // rows are copied in, and added back (checking every row at once) before the load commits.
  const items = Array.from({ length: 12_000 }, (_, i) => catalogueItem(i * 3 + 1, `item ${i}`, null));
  const dates = ['2026-10-01T00:00:00.000Z', '2026-11-03T00:00:00.000Z', '2026-10-20T00:00:00.000Z'];
  // Every other item priced, some with three records in no order of date: more than one batch of rows.
  const prices = items.flatMap((c, i) =>
    i % 2 === 1 ? [] : (i % 10 === 0 ? dates : dates.slice(0, 1)).map((scrapeDate, d) => ({ masterItemId: c.masterItemId, upc: '000000000001', loose: i + d, scrapeDate })),
  );

  it('the keys are back after a load and after a refused one, and every current price is the latest record', async () => {
    const store = await newStore();
    const keys = await catalogueKeys(store);
    const before = await tableCounts(store);
    assert.ok(keys.some((k) => k.startsWith('price_records ')) && keys.some((k) => k.startsWith('current_prices ')), keys.join('\n'));
    // Refused after more than a batch of price rows was written: a record twice in the file.
    const refused = [...prices, prices[0]!];
    await assert.rejects(loadDataset(store, { catalogue: items, prices: refused }, LOAD), new RegExp(`prices row ${refused.length}: masterItemId 1 has two records`));
    assert.deepEqual(await catalogueKeys(store), keys);
    assert.deepEqual(await tableCounts(store), before);

    await loadDataset(store, { catalogue: items, prices }, LOAD);
    assert.deepEqual(await catalogueKeys(store), keys);
    const expected = new Map<number, { loose: number; scrape_date: string }>();
    for (const p of prices) {
      const known = expected.get(p.masterItemId);
      if (known === undefined || p.scrapeDate > known.scrape_date) expected.set(p.masterItemId, { loose: p.loose, scrape_date: p.scrapeDate });
    }
    const current = await store.db.selectFrom('current_prices').select(['master_item_id', 'loose', 'scrape_date']).orderBy('master_item_id').execute();
    assert.deepEqual(
      current,
      [...expected].map(([id, p]) => ({ master_item_id: id, ...p })),
    );
  });
});

describe('a COPY the store refuses part way through a section', { skip: TEST_STORE !== 'postgres' && 'PostgreSQL only' }, () => {
  it('fails the load with the store\'s reason, leaves nothing, and the store takes the next load', async () => {
    const store = await newStore();
    // A NUL character: a string to the dataset's schema, but not text to PostgreSQL (SQLite keeps it).
    const catalogue = Array.from({ length: 12_000 }, (_, i) => catalogueItem(i + 1, i === 7000 ? 'nul\u0000name' : `item ${i + 1}`, null));
    await assert.rejects(loadDataset(store, { catalogue }, LOAD), /invalid byte sequence for encoding "UTF8": 0x00/);
    assert.equal((await tableCounts(store)).catalogue_items, 0);
    await loadDataset(store, { catalogue: catalogue.slice(0, 7000) }, LOAD);
    assert.equal((await tableCounts(store)).catalogue_items, 7000);
  });
});
