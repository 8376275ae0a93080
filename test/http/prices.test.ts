// GET /prices and /prices/:masterItemId as a client sees them: one row per PUBLISHED item that has a price
// record, the latest by scrapeDate (docs/contract.md, "Values and data rules"); unpriced and unpublished items absent; null
// price points as JSON null; the search, platform and upc filters as on the catalogue ("Parameters").
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import {
  body,
  expectedPriceIds,
  expectedPriceRows,
  PRICE_KEYS,
  queryString,
  resourceDataset,
  SEARCH_CASES,
  type DataBody,
  type ErrorBodyShape,
  type ListBody,
  type PriceRowBody,
  type ReferenceFilters,
} from '../helpers/resource-fixtures.js';

const dataset = resourceDataset();
const expectedRows = expectedPriceRows(dataset);
const ROWS = expectedRows.length;

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext({ dataset, env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' } });
});
after(async () => {
  await ctx.close();
});

async function list(params: Record<string, string | number | undefined> = {}): Promise<ListBody<PriceRowBody>> {
  const res = await ctx.get(`${V1}/prices${queryString(params)}`);
  assert.equal(res.statusCode, 200, `${res.statusCode} ${res.body}`);
  return body<ListBody<PriceRowBody>>(res);
}

async function ids(filters: Omit<ReferenceFilters, 'category'>): Promise<number[]> {
  const page = await list({ ...filters, limit: 100 });
  assert.equal(page.pagination.total, page.data.length, `total of ${JSON.stringify(filters)}`);
  return page.data.map((r) => r.masterItemId);
}

describe('GET /prices: rows', () => {
  it('one row per published item with a price record, the latest by scrapeDate, ascending masterItemId', async () => {
    const page = await list({ limit: 100 });
    assert.deepEqual(page.data, expectedRows);
    assert.deepEqual(page.pagination, { total: ROWS, limit: 100, offset: 0, hasMore: false });
    for (const row of page.data) assert.deepEqual(Object.keys(row).sort(), [...PRICE_KEYS].sort());
  });

  it('items without a price record and unpublished items (even priced) are absent', async () => {
    const listed = new Set((await list({ limit: 100 })).data.map((r) => r.masterItemId));
    for (const unpriced of [7, 10, 20]) assert.ok(!listed.has(unpriced), `published item ${unpriced} has no price`);
    for (const unpublished of [5, 6, 17]) assert.ok(!listed.has(unpublished), `item ${unpublished} is not published`);
    for (const priced of [1, 2, 3, 4, 8, 9, 25]) assert.ok(listed.has(priced), `item ${priced}`);
  });

  it('takes the latest record whatever its position in the load (older first or newest first)', async () => {
    const byId = new Map((await list({ limit: 100 })).data.map((r) => [r.masterItemId, r]));
    // Item 1: the 2026-11-15 record (loaded second) wins over 2026-11-01.
    assert.deepEqual(byId.get(1), {
      masterItemId: 1, name: 'The Legend of Zelda: Ocarina of Time', slug: 'the-legend-of-zelda-ocarina-of-time-1',
      platform: 'Nintendo 64', category: 'game', upc: '045496870010',
      loose: 25, cib: 50.25, new: 320, boxOnly: null, manualOnly: 9, scrapeDate: '2026-11-15T00:00:00.000Z',
    });
    // Item 15: the newest record was loaded first.
    const r15 = byId.get(15)!;
    assert.equal(r15.upc, '222222222222');
    assert.equal(r15.loose, 15);
    assert.equal(r15.scrapeDate, '2026-11-01T00:00:00.000Z');
    // Item 16: the newest record was loaded last.
    assert.equal(byId.get(16)!.upc, '555555555555');
    assert.equal(byId.get(16)!.manualOnly, 1.6);
  });

  it('null price points are serialized as null (present, not omitted); known ones as numbers', async () => {
    const byId = new Map((await list({ limit: 100 })).data.map((r) => [r.masterItemId, r]));
    const none = byId.get(25)!;
    assert.deepEqual(
      { loose: none.loose, cib: none.cib, new: none.new, boxOnly: none.boxOnly, manualOnly: none.manualOnly },
      { loose: null, cib: null, new: null, boxOnly: null, manualOnly: null },
    );
    const nine = byId.get(9)!;
    assert.deepEqual([nine.loose, nine.cib, nine.new, nine.boxOnly, nine.manualOnly], [3, null, null, null, null]);
    assert.equal(byId.get(2)!.loose, 15.1);
    assert.equal(byId.get(19)!.loose, 0); // a zero price is a known price, not null
    const raw = (await ctx.get(`${V1}/prices/25`)).body;
    assert.match(raw, /"loose":null,"cib":null,"new":null,"boxOnly":null,"manualOnly":null/);
  });

  it('scrapeDate is an ISO 8601 UTC timestamp with milliseconds', async () => {
    for (const row of (await list({ limit: 100 })).data) {
      assert.match(row.scrapeDate, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
  });
});

describe('GET /prices/:masterItemId', () => {
  it('answers { data: row } with the same row as the list', async () => {
    for (const expected of expectedRows) {
      const res = await ctx.get(`${V1}/prices/${expected.masterItemId}`);
      assert.equal(res.statusCode, 200);
      const got = body<DataBody<PriceRowBody>>(res);
      assert.deepEqual(Object.keys(got), ['data']);
      assert.deepEqual(got.data, expected);
    }
  });

  it('is 404 not_found for an unpublished item with a price, a published item without one, and an unknown id', async () => {
    // 5 is a DRAFT with a price, 17 a DRAFT with a price, 6 ARCHIVED with a price; 7 and 10 have no price.
    for (const id of [5, 17, 6, 7, 10, 999999]) {
      const res = await ctx.get(`${V1}/prices/${id}`);
      assert.equal(res.statusCode, 404, `item ${id}`);
      const err = body<ErrorBodyShape>(res);
      assert.deepEqual(Object.keys(err).sort(), ['error', 'message']);
      assert.equal(err.error, 'not_found');
    }
  });
});

describe('GET /prices: pagination', () => {
  it('pages in order with total and hasMore = offset + data.length < total', async () => {
    const seen: PriceRowBody[] = [];
    for (let offset = 0; offset < ROWS; offset += 5) {
      const page = await list({ limit: 5, offset });
      assert.deepEqual(page.pagination, { total: ROWS, limit: 5, offset, hasMore: offset + page.data.length < ROWS });
      seen.push(...page.data);
    }
    assert.deepEqual(seen, expectedRows);
  });

  it('defaults to limit 50 offset 0; an offset past the end is an empty page', async () => {
    assert.deepEqual((await list()).pagination, { total: ROWS, limit: 50, offset: 0, hasMore: false });
    assert.deepEqual(await list({ offset: ROWS }), { data: [], pagination: { total: ROWS, limit: 50, offset: ROWS, hasMore: false } });
    assert.deepEqual(await list({ offset: 5000, limit: 7 }), { data: [], pagination: { total: ROWS, limit: 7, offset: 5000, hasMore: false } });
  });
});

describe('GET /prices: filters', () => {
  it('search: multi-term, case and accent folding, literal % _ \\, short and long terms', async () => {
    assert.deepEqual(await ids({ search: 'pokemon' }), [2, 12]); // 10 has no price
    assert.deepEqual(await ids({ search: 'POKÉMON sn' }), [2]);
    assert.deepEqual(await ids({ search: 'cafe' }), [9]);
    assert.deepEqual(await ids({ search: '%' }), [8, 21]);
    assert.deepEqual(await ids({ search: '_' }), [8, 19]);
    assert.deepEqual(await ids({ search: '\\' }), [11]);
    assert.deepEqual(await ids({ search: 'draft' }), []); // priced DRAFT items stay invisible
    for (const search of SEARCH_CASES) {
      const expected = expectedPriceIds(dataset, { search });
      const page = await list({ search, limit: 100 });
      assert.deepEqual(page.data.map((r) => r.masterItemId), expected, `search=${JSON.stringify(search)}`);
      assert.equal(page.pagination.total, expected.length, `total of search=${JSON.stringify(search)}`);
    }
  });

  it('platform: case-insensitive equality', async () => {
    assert.deepEqual(await ids({ platform: 'NINTENDO 64' }), [1, 2, 3, 12]);
    assert.deepEqual(await ids({ platform: 'playstation' }), [8, 9, 11]);
    assert.deepEqual(await ids({ platform: 'playstation 2' }), [13]);
    assert.deepEqual(await ids({ platform: 'nintendo' }), []);
  });

  it("upc: exact, against the latest record's UPC", async () => {
    assert.deepEqual(await ids({ upc: '222222222222' }), [15]);
    assert.deepEqual(await ids({ upc: '111111111111' }), []);
    assert.deepEqual(await ids({ upc: '777777777777' }), [22, 23]);
    assert.deepEqual(await ids({ upc: '888888888888' }), [24]);
    assert.deepEqual(await ids({ upc: '000000000055' }), []); // DRAFT 5
    assert.deepEqual(await ids({ upc: '666666666666' }), []); // ARCHIVED 6
    const [row] = (await list({ upc: '888888888888' })).data;
    assert.equal(row!.loose, 24);
  });

  it('combinations: every filter given must hold', async () => {
    const cases: Omit<ReferenceFilters, 'category'>[] = [
      { search: 'game', platform: 'pc' },
      { search: 'upc', upc: '777777777777' },
      { search: 'b', upc: '777777777777' },
      { platform: 'PLAYSTATION', upc: '711719000096' },
      { platform: 'PLAYSTATION', upc: '711719000089', search: 'deluxe "deluxe"' },
      { platform: 'nintendo 64', upc: '711719000096' },
    ];
    assert.deepEqual(await ids({ search: 'b', upc: '777777777777' }), [23]);
    assert.deepEqual(await ids({ platform: 'nintendo 64', upc: '711719000096' }), []);
    for (const filters of cases) assert.deepEqual(await ids(filters), expectedPriceIds(dataset, filters), JSON.stringify(filters));
  });

  it('category is not a /prices filter: 400 bad_request', async () => {
    const res = await ctx.get(`${V1}/prices?category=game`);
    assert.equal(res.statusCode, 400);
    assert.equal(body<ErrorBodyShape>(res).error, 'bad_request');
  });
});
