// `shelfapi import prices FILE.csv` (docs/contract.md, "Operator command line"): the aggregator's CSV with the export's
// columns, upserted by (masterItemId, scrapeDate). The latest record by scrapeDate is what /prices serves.
// A bad line refuses the whole file, which names every bad line (the first 100, then a count) with its
// column and the value refused, and nothing is written: not a new row, and not a changed value
// (price_records and current_prices are compared row by row before and after). A dry run checks the same
// way and writes nothing either.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BadRowsError } from '../../src/errors/bad-rows.js';
import { importPrices, type ImportResult } from '../../src/services/price-import.service.js';
import { EXPORT_COLUMNS as CSV_COLUMNS } from '../../src/store/repositories/price-export.js';
import type { Store } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { dataSeenBy } from '../helpers/held-principals.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { fixture } from '../helpers/fixture.js';
import { assertRefusedRows, chunks, parseJsonOutput, runCli, tableCounts, tempDir } from '../helpers/cli-helpers.js';

const HEADER = `${CSV_COLUMNS.join(',')}\r\n`;
const tmp = tempDir();
const contexts: TestContext[] = [];
after(async () => {
  for (const ctx of contexts) await ctx.close();
  tmp.cleanup();
});

async function context(): Promise<TestContext> {
  const ctx = await createTestContext();
  contexts.push(ctx);
  return ctx;
}

/** A data line of the export's shape; the name, slug, platform and category columns are not stored. */
function line(masterItemId: number | string, prices: Array<number | string | null>, scrapeDate: string, upc = '045496870010'): string {
  const cells = [masterItemId, 'Some Name', 'some-slug', 'Nintendo 64', 'game', upc, ...prices.map((p) => (p === null ? '' : p)), scrapeDate];
  return `${cells.join(',')}\r\n`;
}

function importText(store: Store, text: string): Promise<ImportResult> {
  return importPrices(store, chunks(text));
}

async function priceState(store: Store): Promise<unknown> {
  return {
    records: await store.db.selectFrom('price_records').selectAll().orderBy('id').execute(),
    current: await store.db.selectFrom('current_prices').selectAll().orderBy('master_item_id').execute(),
    counts: await tableCounts(store),
  };
}

/** Imports `text` (or checks it, `dryRun`) and expects a refusal naming `pattern`, with the prices exactly as they were. */
async function expectRefused(store: Store, text: string, pattern: RegExp, dryRun = false): Promise<BadRowsError> {
  const before = await priceState(store);
  const error = await importPrices(store, chunks(text), { dryRun }).then(
    () => assert.fail('the file was accepted'),
    (err: unknown) => err,
  );
  assert.ok(error instanceof BadRowsError, `a BadRowsError, got ${String(error)}`);
  assert.match(error.message, pattern);
  assert.deepEqual(await priceState(store), before, 'nothing of a refused file is written');
  return error;
}

interface PriceData {
  masterItemId: number;
  name: string;
  upc: string;
  loose: number | null;
  cib: number | null;
  new: number | null;
  boxOnly: number | null;
  manualOnly: number | null;
  scrapeDate: string;
}

async function currentPrice(ctx: TestContext, id: number): Promise<PriceData> {
  // PostgreSQL + Redis: an import is served within a second (docs/operations.md, "How a change reaches every server").
  await dataSeenBy(ctx);
  const response = await ctx.get(`${V1}/prices/${id}`);
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ data: PriceData }>().data;
}

describe('import prices: upserts and the current price', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await context();
  });

  it('re-importing a (masterItemId, scrapeDate) changes its values, never adds a duplicate', async () => {
    // Item 2 has one record, of 2026-11-10 (loose 15.1, new 90): it is its current price.
    const before = await tableCounts(ctx.store);
    const first = await importText(ctx.store, HEADER + line(2, [16, 30, 91, null, null], '2026-11-10T00:00:00.000Z', '045496870027'));
    assert.deepEqual(first, { rows: 1, items: 1 });
    assert.equal((await tableCounts(ctx.store)).price_records, before.price_records);
    const price = await currentPrice(ctx, 2);
    assert.deepEqual([price.loose, price.cib, price.new, price.scrapeDate], [16, 30, 91, '2026-11-10T00:00:00.000Z']);

    // The same instant written another way is the same record.
    await importText(ctx.store, HEADER + line(2, [17, 31, 92, 1, 2], '2026-11-10T01:00:00+01:00', '045496870027'));
    assert.equal((await tableCounts(ctx.store)).price_records, before.price_records);
    const again = await currentPrice(ctx, 2);
    assert.deepEqual([again.loose, again.cib, again.new, again.boxOnly, again.manualOnly], [17, 31, 92, 1, 2]);
    const records = await ctx.store.db.selectFrom('price_records').selectAll().where('master_item_id', '=', 2).execute();
    assert.equal(records.length, 1);
  });

  it('a newer scrapeDate becomes the current price served by /prices/:id; an older one is kept but does not', async () => {
    // Item 1's latest record is of 2026-11-15 (loose 25).
    const before = await tableCounts(ctx.store);
    await importText(ctx.store, HEADER + line(1, [1, 2, 3, 4, 5], '2026-10-01T00:00:00.000Z'));
    assert.equal((await tableCounts(ctx.store)).price_records, before.price_records! + 1, 'the older record is stored');
    const unchanged = await currentPrice(ctx, 1);
    assert.deepEqual([unchanged.loose, unchanged.scrapeDate], [25, '2026-11-15T00:00:00.000Z']);

    await importText(ctx.store, HEADER + line(1, [26.5, 51, 330, null, 9.99], '2026-11-19T06:30:00Z', '045496870099'));
    const newer = await currentPrice(ctx, 1);
    assert.deepEqual(newer, {
      ...newer,
      upc: '045496870099', loose: 26.5, cib: 51, new: 330, boxOnly: null, manualOnly: 9.99, scrapeDate: '2026-11-19T06:30:00.000Z',
    });
    const list = await ctx.get(`${V1}/prices?limit=1`);
    assert.equal(list.json<{ data: PriceData[] }>().data[0]!.loose, 26.5, '/prices serves the same current row');
  });

  it('upserting the current record itself changes what /prices/:id serves', async () => {
    await importText(ctx.store, HEADER + line(1, [27, 51, 330, null, 9.99], '2026-11-19T06:30:00.000Z', '045496870099'));
    assert.equal((await currentPrice(ctx, 1)).loose, 27);
  });

  it('empty price fields are null; the name, slug, platform and category columns are not stored', async () => {
    await importText(ctx.store, HEADER + line(3, [null, 61, null, null, null], '2026-11-19T00:00:00.000Z', '045496870034'));
    const price = await currentPrice(ctx, 3);
    assert.deepEqual([price.loose, price.cib, price.new, price.boxOnly, price.manualOnly], [null, 61, null, null, null]);
    assert.equal(price.name, 'Super Mario 64', 'the catalogue is the authority on the name');
  });

  it('quoted fields: commas, doubled quotes and line breaks inside quotes', async () => {
    const text =
      HEADER +
      '8,"100% Complete, ""Deluxe"" Edition_x","a,b",PlayStation,game,711719000089,6,"8.25",,,,2026-11-19T00:00:00.000Z\r\n' +
      '9,"Café\r\nRacer",cafe-racer-9,"Play,Station",game,711719000096,"4",,,,,2026-11-19T00:00:00.000Z\r\n';
    assert.deepEqual(await importText(ctx.store, text), { rows: 2, items: 2 });
    assert.deepEqual([(await currentPrice(ctx, 8)).loose, (await currentPrice(ctx, 8)).cib], [6, 8.25]);
    assert.equal((await currentPrice(ctx, 9)).loose, 4);
  });

  it('a header row alone imports nothing; bare LF line ends and a UTF-8 BOM are accepted', async () => {
    assert.deepEqual(await importText(ctx.store, HEADER), { rows: 0, items: 0 });
    const text = `\ufeff${CSV_COLUMNS.join(',')}\n${line(4, [11, 21, 151, null, null], '2026-11-19T00:00:00.000Z', '010086010046').replace('\r\n', '\n')}`;
    assert.deepEqual(await importText(ctx.store, text), { rows: 1, items: 1 });
    assert.equal((await currentPrice(ctx, 4)).loose, 11);
  });

  it('a price of an unpublished item is stored, and still not served', async () => {
    await importText(ctx.store, HEADER + line(5, [9, 9, 9, null, null], '2026-11-19T00:00:00.000Z', '000000000055'));
    const row = await ctx.store.db.selectFrom('current_prices').selectAll().where('master_item_id', '=', 5).executeTakeFirstOrThrow();
    assert.equal(row.loose, 9);
    assert.equal((await ctx.get(`${V1}/prices/5`)).statusCode, 404);
  });
});

describe('import prices: a bad line refuses the whole file, naming the line', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await context();
  });

  // Line 2 changes item 1's current record and line 3 adds a new one, so a partial write would show.
  const good = HEADER + line(1, [99, 99, 99, 99, 99], '2026-11-15T00:00:00.000Z') + line(2, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z', '045496870027');
  const cases: Array<[string, string, RegExp]> = [
    ['a price that is not a number', line(3, ['abc', 1, 1, 1, 1], '2026-11-19T00:00:00.000Z'), /^line 4: loose /],
    ['a negative price', line(3, [1, -1, 1, 1, 1], '2026-11-19T00:00:00.000Z'), /^line 4: cib /],
    ['a decimal comma', line(3, [1, 1, '"1,5"', 1, 1], '2026-11-19T00:00:00.000Z'), /^line 4: new /],
    ['a price too large for a number', line(3, [1, 1, '1e400', 1, 1], '2026-11-19T00:00:00.000Z'), /^line 4: new /],
    ['a price with spaces', line(3, [1, 1, 1, ' 2', 1], '2026-11-19T00:00:00.000Z'), /^line 4: boxOnly /],
    ['an unknown masterItemId', line(99999, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z'), /^line 4: masterItemId "99999" is not in the catalogue$/],
    ['a masterItemId that is not an integer', line('3.0', [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z'), /^line 4: masterItemId/],
    ['a masterItemId of 0', line(0, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z'), /^line 4: masterItemId/],
    ['a date that does not exist', line(3, [1, 1, 1, 1, 1], '2026-02-29T00:00:00.000Z'), /^line 4: scrapeDate/],
    ['a date that is not ISO 8601', line(3, [1, 1, 1, 1, 1], '11/19/2026'), /^line 4: scrapeDate/],
    ['an empty scrapeDate', line(3, [1, 1, 1, 1, 1], ''), /^line 4: scrapeDate/],
    ['a bad upc', line(3, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z', '12345'), /^line 4: upc/],
    ['too few fields', '3,n,s,p,c,045496870034,1,1,1,1,2026-11-19T00:00:00.000Z\r\n', /^line 4: expected 12 fields, found 11/],
    ['too many fields', '3,n,s,p,c,045496870034,1,1,1,1,1,2026-11-19T00:00:00.000Z,x\r\n', /^line 4: expected 12 fields, found 13/],
    ['an unterminated quote', '3,"n,s,p,c,045496870034,1,1,1,1,1,2026-11-19T00:00:00.000Z\r\n', /^line 4: /],
    ['a quote inside an unquoted field', '3,n"x,s,p,c,045496870034,1,1,1,1,1,2026-11-19T00:00:00.000Z\r\n', /^line 4: /],
    ['a duplicate row of the file', line(2, [2, 2, 2, 2, 2], '2026-11-19T00:00:00Z', '045496870027'), /^line 4: a second row for masterItemId 2/],
  ];
  for (const [name, bad, pattern] of cases) {
    it(name, async () => {
      const error = await expectRefused(ctx.store, good + bad + line(3, [1, 1, 1, 1, 1], '2026-11-20T00:00:00.000Z', '045496870034'), pattern);
      assert.equal(error.total, 1, `only the bad line is reported: ${error.message}`);
    });
  }

  it('a header that is not the export\'s columns: missing, reordered, renamed, extra column', async () => {
    const rows = line(1, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z');
    const cols = [...CSV_COLUMNS] as string[];
    for (const header of [
      cols.filter((c) => c !== 'name'),
      [cols[1]!, cols[0]!, ...cols.slice(2)],
      cols.map((c) => (c === 'boxOnly' ? 'box_only' : c)),
      cols.map((c) => c.toUpperCase()),
      [...cols, 'currency'],
    ]) {
      await expectRefused(ctx.store, `${header.join(',')}\r\n${rows}`, /^line 1: the header must be masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate/);
    }
    // A data line where the header should be.
    await expectRefused(ctx.store, rows + rows, /^line 1: /);
  });

  it('an empty file', async () => {
    await expectRefused(ctx.store, '', /^line 1: /);
  });

  it('line numbers are physical lines: a quoted field spanning lines counts them', async () => {
    const text = HEADER + '2,"two\r\nline name",s,p,c,045496870027,1,1,1,1,1,2026-11-19T00:00:00.000Z\r\n' + line(3, ['x', 1, 1, 1, 1], '2026-11-19T00:00:00.000Z');
    await expectRefused(ctx.store, text, /^line 4: loose /);
  });

  it('a bad value after 5,000 good lines (past the import\'s batches): still nothing written', async () => {
    let text = good;
    const start = Date.parse('2020-01-01T00:00:00.000Z');
    for (let i = 0; i < 5_100; i++) text += line(1 + (i % 4), [i, i, null, 1.5, 2], new Date(start + i * 3_600_000).toISOString());
    // Header, 2 good lines, 5,100 more: the bad one is line 5,104.
    await expectRefused(ctx.store, text + line(3, [1, 'x', 1, 1, 1], '2026-11-19T00:00:00.000Z'), /^line 5104: cib /);
    await expectRefused(ctx.store, text + line(77777, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z'), /^line 5104: masterItemId "77777" is not in the catalogue$/);
    await expectRefused(ctx.store, text + '3,"unterminated,s\r\n', /^line 5104: /);
    // Without the bad line the same file imports.
    assert.deepEqual(await importText(ctx.store, text), { rows: 5_102, items: 4 });
  });
});

describe('import prices: every bad line is reported, with its column and value', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await context();
  });

  it('three bad lines of different kinds (a price, an item not in the catalogue, a date): all three, nothing written', async () => {
    const text =
      HEADER +
      line(1, [99, 99, 99, 99, 99], '2026-11-15T00:00:00.000Z') +
      line(2, [1, 'abc', 1, 1, 1], '2026-11-19T00:00:00.000Z', '045496870027') +
      line(3, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z', '045496870034') +
      line(424242, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z') +
      line(4, [1, 1, 1, 1, 1], '19/11/2026', '010086010046');
    const error = await expectRefused(ctx.store, text, /^line 3: /);
    assert.deepEqual(error.rows, [
      { line: 3, column: 'cib', value: 'abc', message: 'cib must be a number >= 0 or empty, got "abc"' },
      { line: 5, column: 'masterItemId', value: '424242', message: 'masterItemId "424242" is not in the catalogue' },
      { line: 6, column: 'scrapeDate', value: '19/11/2026', message: 'scrapeDate must be an ISO 8601 date-time, got "19/11/2026"' },
    ]);
    assert.equal(error.more, 0);
    assert.equal(
      error.message,
      [
        'line 3: cib must be a number >= 0 or empty, got "abc"',
        'line 5: masterItemId "424242" is not in the catalogue',
        'line 6: scrapeDate must be an ISO 8601 date-time, got "19/11/2026"',
      ].join('\n'),
    );
  });

  it('150 bad lines: the first 100 in file order, then "and 50 more bad lines"', async () => {
    // Odd lines name items not in the catalogue (found when the batch is checked, after the lines are read),
    // even lines a bad price (found as the line is read): the report is still in file order.
    let text = HEADER;
    for (let i = 0; i < 150; i++) {
      text += i % 2 === 0 ? line(900_000 + i, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z') : line(1, [1, 1, 1, 1, '-1'], '2026-11-19T00:00:00.000Z');
    }
    const error = await expectRefused(ctx.store, text, /^line 2: masterItemId "900000" is not in the catalogue\n/);
    assert.equal(error.rows.length, 100);
    assert.deepEqual(error.rows.map((r) => r.line), Array.from({ length: 100 }, (_, i) => i + 2));
    assert.deepEqual(error.rows[1], { line: 3, column: 'manualOnly', value: '-1', message: 'manualOnly must be a number >= 0 or empty, got "-1"' });
    assert.equal(error.more, 50);
    assert.equal(error.total, 150);
    assert.match(error.message, /\nline 101: [^\n]+\nand 50 more bad lines$/);
  });

  it('a value too long to show is cut in the message, kept whole in the report', async () => {
    const long = 'x'.repeat(500);
    const error = await expectRefused(ctx.store, HEADER + line(1, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z', long), /^line 2: upc /);
    assert.equal(error.rows[0]!.value, long);
    assert.ok(error.message.length < 200, error.message);
  });
});

describe('import prices --dry-run', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await context();
  });
  const version = async () => (await ctx.store.db.selectFrom('data_version').select('version').executeTakeFirstOrThrow()).version;

  it('a good file: says what it would write, and writes nothing (rows, data version and ETag as they were)', async () => {
    const beforeState = await priceState(ctx.store);
    const versionBefore = await version();
    const item = await ctx.get(`${V1}/prices/1`);
    // Item 1's record of 2026-11-15 would be updated, item 2 would get a new one.
    const text = HEADER + line(1, [99, 99, 99, 99, 99], '2026-11-15T00:00:00.000Z') + line(2, [1, 1, 1, 1, 1], '2026-11-20T00:00:00.000Z', '045496870027');
    assert.deepEqual(await importPrices(ctx.store, chunks(text), { dryRun: true }), { rows: 2, items: 2 });
    assert.deepEqual(await priceState(ctx.store), beforeState, 'nothing written');
    assert.equal(await version(), versionBefore, 'the data version is unchanged');
    const again = await ctx.get(`${V1}/prices/1`);
    assert.equal(again.headers.etag, item.headers.etag, 'the ETag of the item is unchanged');
    assert.equal(again.body, item.body);
    // The same file, for real, then does change it: the dry run checked what an import does.
    assert.deepEqual(await importText(ctx.store, text), { rows: 2, items: 2 });
    assert.equal((await currentPrice(ctx, 1)).loose, 99);
    assert.notEqual((await ctx.get(`${V1}/prices/1`)).headers.etag, item.headers.etag);
  });

  it('a bad file: every bad line, as an import reports them, and nothing written', async () => {
    const text = HEADER + line(1, [1, 1, 1, 1, 1], 'soon') + line(777777, [1, 1, 1, 1, 1], '2026-11-19T00:00:00.000Z');
    const error = await expectRefused(ctx.store, text, /^line 2: scrapeDate /, true);
    assert.deepEqual(error.rows.map((r) => [r.line, r.column, r.value]), [[2, 'scrapeDate', 'soon'], [3, 'masterItemId', '777777']]);
  });
});

describe('import prices: round trip of the export', () => {
  it('the API\'s export CSV imports cleanly and changes nothing', async () => {
    const ctx = await context();
    const prices = (await ctx.get(`${V1}/prices?limit=100`)).json<{ data: PriceData[] }>().data;
    const exported = await ctx.get(`${V1}/prices/export.csv`);
    const before = await priceState(ctx.store); // after the requests: they write meter rows
    assert.equal(exported.statusCode, 200);
    const dataLines = exported.body.split('\r\n').filter((l) => l !== '').length - 1;
    assert.equal(dataLines, prices.length);
    assert.deepEqual(await importText(ctx.store, exported.body), { rows: prices.length, items: prices.length });
    assert.deepEqual(await priceState(ctx.store), before);
    assert.deepEqual((await ctx.get(`${V1}/prices?limit=100`)).json<{ data: PriceData[] }>().data, prices);
  });

  it('also with prices JavaScript writes in exponent form (1e-7, 1e21)', async () => {
    const ctx = await context();
    await loadDataset(
      ctx.store,
      { prices: [{ masterItemId: 4, upc: '010086010046', loose: 0.0000001, cib: 1e21, new: 0.1, scrapeDate: '2026-11-19T00:00:00.000Z' }] },
      { keyPrefix: ctx.config.keyPrefix, now: ctx.clock.now() },
    );
    const exported = await ctx.get(`${V1}/prices/export.csv`);
    assert.ok(exported.body.includes(',1e-7,1e+21,0.1,'), 'the export writes JavaScript number text');
    const before = await priceState(ctx.store);
    await importText(ctx.store, exported.body);
    assert.deepEqual(await priceState(ctx.store), before);
  });

  it('through the command line: export to a file, `shelfapi import prices FILE --json`', async () => {
    const ctx = await context();
    const exported = await ctx.get(`${V1}/prices/export.csv`);
    const file = join(tmp.dir, 'export.csv');
    writeFileSync(file, exported.body);
    const before = await priceState(ctx.store);
    const out = parseJsonOutput(await runCli(['import', 'prices', file, '--json'], { DATABASE_URL: ctx.databaseUrl }));
    const rows = exported.body.split('\r\n').filter((l) => l !== '').length - 1;
    assert.deepEqual(out, { rows, items: rows });
    assert.deepEqual(await priceState(ctx.store), before);
  });

  it('through the command line: a refused file exits 1 with a line for each bad line, nothing written', async () => {
    const ctx = await context();
    const file = join(tmp.dir, 'bad.csv');
    writeFileSync(file, HEADER + line(1, [500, 500, 500, 500, 500], '2026-11-15T00:00:00.000Z') + line(2, [1, 1, 1, 1, 1], 'yesterday'));
    const before = await priceState(ctx.store);
    const result = await runCli(['import', 'prices', file], { DATABASE_URL: ctx.databaseUrl });
    assert.deepEqual(assertRefusedRows(result, 1), ['line 3: scrapeDate must be an ISO 8601 date-time, got "yesterday"']);
    assert.deepEqual(await priceState(ctx.store), before);
    assert.equal(fixture().prices!.length, (await tableCounts(ctx.store)).price_records);
  });
});

describe('import prices: a file of only a header', () => {
  it('changes nothing: the data version and every ETag stay as they were', async () => {
    const ctx = await context();
    const version = async () => (await ctx.store.db.selectFrom('data_version').select('version').executeTakeFirstOrThrow()).version;
    const etags = async () =>
      Promise.all([`${V1}/prices`, `${V1}/prices/export.csv`, `${V1}/catalogue`].map(async (url) => (await ctx.get(url)).headers.etag));
    const versionBefore = await version();
    const etagsBefore = await etags();
    for (const text of [HEADER, CSV_COLUMNS.join(',')]) {
      assert.deepEqual(await importText(ctx.store, text), { rows: 0, items: 0 });
    }
    assert.equal(await version(), versionBefore, 'the data version is unchanged');
    assert.deepEqual(await etags(), etagsBefore, 'every ETag is unchanged');
  });
});
