// GET /catalogue and /catalogue/:id as a client sees them: only PUBLISHED items, every field of the spec
// with the null rules of docs/contract.md, "Responses", ascending masterItemId, offset pagination, and the filters
// of "Parameters" (search, platform, category, upc) alone and combined.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import {
  body,
  CATALOGUE_KEYS,
  expectedCatalogueIds,
  expectedCatalogueItem,
  publishedItems,
  queryString,
  resourceDataset,
  SEARCH_CASES,
  type CatalogueItemBody,
  type DataBody,
  type ErrorBodyShape,
  type ListBody,
  type ReferenceFilters,
} from '../helpers/resource-fixtures.js';

const dataset = resourceDataset();
const published = publishedItems(dataset);
const PUBLISHED_COUNT = published.length;

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext({ dataset, env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' } });
});
after(async () => {
  await ctx.close();
});

async function list(params: Record<string, string | number | undefined> = {}): Promise<ListBody<CatalogueItemBody>> {
  const res = await ctx.get(`${V1}/catalogue${queryString(params)}`);
  assert.equal(res.statusCode, 200, `${res.statusCode} ${res.body}`);
  return body<ListBody<CatalogueItemBody>>(res);
}

async function ids(filters: ReferenceFilters): Promise<number[]> {
  const page = await list({ ...filters, limit: 100 });
  assert.equal(page.pagination.total, page.data.length, `total of ${JSON.stringify(filters)}`);
  return page.data.map((i) => i.masterItemId);
}

describe('GET /catalogue: visibility and fields', () => {
  it('lists exactly the PUBLISHED items, every field of each as the spec lists them, ascending masterItemId', async () => {
    const page = await list({ limit: 100 });
    assert.deepEqual(page.data, published.map(expectedCatalogueItem));
    assert.deepEqual(page.pagination, { total: PUBLISHED_COUNT, limit: 100, offset: 0, hasMore: false });
    for (const row of page.data) assert.deepEqual(Object.keys(row).sort(), [...CATALOGUE_KEYS].sort());
    const listed = new Set(page.data.map((i) => i.masterItemId));
    for (const unpublished of [5, 6, 17]) assert.ok(!listed.has(unpublished), `item ${unpublished} is not PUBLISHED`);
  });

  it('carries the nullable fields as JSON null (present, not omitted) and the never-null ones as strings', async () => {
    const page = await list({ limit: 100 });
    const byId = new Map(page.data.map((i) => [i.masterItemId, i]));
    // 13 was loaded with the required fields only: every optional field is null.
    assert.deepEqual(byId.get(13), {
      masterItemId: 13, name: 'Crash Bandicoot', slug: 'item-13', category: 'game', platform: 'PlayStation 2',
      subCategory: null, modelNumber: null, releaseYear: null, region: null, format: null, developer: null,
      publisher: null, genre: null, manufacturer: null, description: null, imageUrl: null,
    });
    // 18 has every field set, with non-ASCII text, which comes back unchanged.
    assert.deepEqual(byId.get(18), {
      masterItemId: 18, name: 'Ame\u0301lie Adventure', slug: 'item-18', category: 'Spiel', platform: 'Übersystem',
      subCategory: 'Collector', modelNumber: 'UB-18', releaseYear: 2010, region: 'PAL', format: 'Disc',
      developer: 'Studio Ü', publisher: 'Ü Publishing', genre: 'Adventure', manufacturer: 'Übermaker',
      description: 'Every field set.', imageUrl: 'https://images.example.com/18.jpg',
    });
    for (const row of page.data) {
      assert.equal(typeof row.masterItemId, 'number');
      assert.ok(Number.isInteger(row.masterItemId));
      for (const key of ['name', 'slug', 'category', 'platform'] as const) assert.equal(typeof row[key], 'string', `${key} of ${row.masterItemId}`);
      assert.ok(row.releaseYear === null || Number.isInteger(row.releaseYear));
    }
  });

  it('GET /catalogue/:id answers { data: item } for a PUBLISHED item', async () => {
    for (const item of published) {
      const res = await ctx.get(`${V1}/catalogue/${item.masterItemId}`);
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8$/);
      const got = body<DataBody<CatalogueItemBody>>(res);
      assert.deepEqual(Object.keys(got), ['data']);
      assert.deepEqual(got.data, expectedCatalogueItem(item));
    }
  });

  it('GET /catalogue/:id is 404 not_found for a DRAFT, an ARCHIVED (even with a price) and an unknown item', async () => {
    for (const id of [5, 6, 17, 27, 999999]) {
      const res = await ctx.get(`${V1}/catalogue/${id}`);
      assert.equal(res.statusCode, 404, `item ${id}`);
      const err = body<ErrorBodyShape>(res);
      assert.deepEqual(Object.keys(err).sort(), ['error', 'message']);
      assert.equal(err.error, 'not_found');
      assert.equal(typeof err.message, 'string');
    }
  });

  it('an id written with a leading zero is the same id (05 is 5), and still 404 for the DRAFT', async () => {
    assert.equal((await ctx.get(`${V1}/catalogue/03`)).statusCode, 200);
    assert.equal((await ctx.get(`${V1}/catalogue/05`)).statusCode, 404);
  });
});

describe('GET /catalogue: pagination', () => {
  it('defaults to limit 50, offset 0', async () => {
    const page = await list();
    assert.deepEqual(page.pagination, { total: PUBLISHED_COUNT, limit: 50, offset: 0, hasMore: false });
    assert.equal(page.data.length, PUBLISHED_COUNT);
  });

  it('pages through every item in order, hasMore = offset + data.length < total', async () => {
    const seen: number[] = [];
    for (let offset = 0; offset < PUBLISHED_COUNT; offset += 4) {
      const page = await list({ limit: 4, offset });
      assert.equal(page.pagination.total, PUBLISHED_COUNT);
      assert.equal(page.pagination.limit, 4);
      assert.equal(page.pagination.offset, offset);
      assert.equal(page.data.length, Math.min(4, PUBLISHED_COUNT - offset));
      assert.equal(page.pagination.hasMore, offset + page.data.length < PUBLISHED_COUNT);
      seen.push(...page.data.map((i) => i.masterItemId));
    }
    assert.deepEqual(seen, published.map((i) => i.masterItemId));
  });

  it('a page ending exactly at the last item has hasMore false', async () => {
    const page = await list({ limit: 3, offset: PUBLISHED_COUNT - 3 });
    assert.equal(page.data.length, 3);
    assert.equal(page.pagination.hasMore, false);
    const before = await list({ limit: 3, offset: PUBLISHED_COUNT - 4 });
    assert.equal(before.pagination.hasMore, true);
  });

  it('an offset at or past the end answers data [] and hasMore false, with the true total', async () => {
    for (const offset of [PUBLISHED_COUNT, PUBLISHED_COUNT + 1, 1_000_000_000]) {
      const page = await list({ offset, limit: 10 });
      assert.deepEqual(page, { data: [], pagination: { total: PUBLISHED_COUNT, limit: 10, offset, hasMore: false } });
    }
  });

  it('limit 1 and limit 100 are accepted', async () => {
    const one = await list({ limit: 1, offset: 2 });
    assert.deepEqual(one.data.map((i) => i.masterItemId), [published[2]!.masterItemId]);
    assert.equal(one.pagination.hasMore, true);
    assert.equal((await list({ limit: 100 })).data.length, PUBLISHED_COUNT);
  });

  it('paginates filtered results with the filtered total', async () => {
    const all = expectedCatalogueIds(dataset, { platform: 'nintendo 64' });
    assert.ok(all.length > 3);
    const first = await list({ platform: 'nintendo 64', limit: 2 });
    assert.deepEqual(first.data.map((i) => i.masterItemId), all.slice(0, 2));
    assert.deepEqual(first.pagination, { total: all.length, limit: 2, offset: 0, hasMore: true });
    const last = await list({ platform: 'nintendo 64', limit: 2, offset: all.length - 1 });
    assert.deepEqual(last.data.map((i) => i.masterItemId), all.slice(-1));
    assert.equal(last.pagination.hasMore, false);
  });
});

describe('GET /catalogue: search', () => {
  it('multi-term AND over the name, in any term order', async () => {
    assert.deepEqual(await ids({ search: 'zelda time' }), [1]);
    assert.deepEqual(await ids({ search: 'time zelda' }), [1]);
    assert.deepEqual(await ids({ search: 'zelda mario' }), []);
    assert.deepEqual(await ids({ search: 'ocarina of' }), [1]);
  });

  it('matches the name only, not the description or platform', async () => {
    // Every Nintendo 64 item's description says "for the Nintendo 64"; only item 7 has Nintendo in its name.
    assert.deepEqual(await ids({ search: 'nintendo' }), [7]);
  });

  it('ignores case and accents, both ways (pokemon finds Pokémon, POKÉMON finds Pokemon, cafe finds Café)', async () => {
    assert.deepEqual(await ids({ search: 'pokemon' }), [2, 10, 12]);
    assert.deepEqual(await ids({ search: 'POKÉMON' }), [2, 10, 12]);
    assert.deepEqual(await ids({ search: 'Poke\u0301mon' }), [2, 10, 12]);
    assert.deepEqual(await ids({ search: 'cafe' }), [9]);
    assert.deepEqual(await ids({ search: 'CAFÉ' }), [9]);
    // 18's name is stored decomposed (e + U+0301): composed and plain queries find it.
    assert.deepEqual(await ids({ search: 'amélie' }), [18]);
    assert.deepEqual(await ids({ search: 'AMELIE' }), [18]);
  });

  it('takes % _ and \\ literally, alone and inside longer terms', async () => {
    assert.deepEqual(await ids({ search: '%' }), [8, 21]);
    assert.deepEqual(await ids({ search: '100%' }), [8]);
    assert.deepEqual(await ids({ search: '%o' }), []);
    assert.deepEqual(await ids({ search: '_' }), [8, 19]);
    assert.deepEqual(await ids({ search: '_x' }), [8]);
    assert.deepEqual(await ids({ search: 'x_y' }), [19]); // not "Xay Game"
    assert.deepEqual(await ids({ search: '\\' }), [11]);
    assert.deepEqual(await ids({ search: '\\s' }), [11]);
    assert.deepEqual(await ids({ search: 'back\\slash' }), [11]);
  });

  it('1- and 2-character terms match exactly, alone and mixed with longer terms', async () => {
    assert.deepEqual(await ids({ search: 'sn' }), [2]);
    assert.deepEqual(await ids({ search: 'SN' }), [2]);
    assert.deepEqual(await ids({ search: 'z' }), [1, 12]); // Zelda, Puzzle
    assert.deepEqual(await ids({ search: 'pokemon sn' }), [2]);
    assert.deepEqual(await ids({ search: 'mario 6' }), [3]);
    assert.deepEqual(await ids({ search: 'zz' }), [12]); // Puzzle
    assert.deepEqual(await ids({ search: 'qz' }), []);
    assert.deepEqual(await ids({ search: 'game x' }), [19, 20]);
    assert.deepEqual(await ids({ search: 'x a' }), expectedCatalogueIds(dataset, { search: 'x a' }));
  });

  it('answers every search of the cross-check list exactly as the reference does, with the right total', async () => {
    for (const search of SEARCH_CASES) {
      const expected = expectedCatalogueIds(dataset, { search });
      const page = await list({ search, limit: 100 });
      assert.deepEqual(page.data.map((i) => i.masterItemId), expected, `search=${JSON.stringify(search)}`);
      assert.equal(page.pagination.total, expected.length, `total of search=${JSON.stringify(search)}`);
      // The count is right on a short page as well (it is a separate query).
      const short = await list({ search, limit: 1 });
      assert.equal(short.pagination.total, expected.length, `total (limit 1) of search=${JSON.stringify(search)}`);
      assert.equal(short.pagination.hasMore, expected.length > 1);
    }
  });

  it('pages through every search one item at a time with the same items as one long page', async () => {
    // Short pages of common terms are read in id order without the trigram index on SQLite (listCatalogue):
    // both ways must give the same items.
    for (const search of SEARCH_CASES) {
      const expected = expectedCatalogueIds(dataset, { search });
      const seen: number[] = [];
      for (let offset = 0; offset < expected.length; offset++) {
        const page = await list({ search, limit: 1, offset });
        seen.push(...page.data.map((i) => i.masterItemId));
      }
      assert.deepEqual(seen, expected, `search=${JSON.stringify(search)}, one item per page`);
    }
  });

  it('a search never shows an unpublished item', async () => {
    assert.deepEqual(await ids({ search: 'draft' }), []);
    assert.deepEqual(await ids({ search: 'archived' }), []);
  });
});

describe('GET /catalogue: platform and category', () => {
  it('platform is case-insensitive equality, not a substring match', async () => {
    const n64 = [1, 2, 3, 7, 10, 12, 14];
    assert.deepEqual(await ids({ platform: 'Nintendo 64' }), n64);
    assert.deepEqual(await ids({ platform: 'nintendo 64' }), n64);
    assert.deepEqual(await ids({ platform: 'NINTENDO 64' }), n64);
    assert.deepEqual(await ids({ platform: 'nintendo' }), []);
    assert.deepEqual(await ids({ platform: 'playstation' }), [8, 9, 11]); // not "PlayStation 2"
    assert.deepEqual(await ids({ platform: 'PLAYSTATION 2' }), [13]);
    assert.deepEqual(await ids({ platform: 'ÜBERSYSTEM' }), [18]); // case folding beyond ASCII
    assert.deepEqual(await ids({ platform: 'nintendo 64 ' }), []); // equality: no trimming
  });

  it('category is case-insensitive equality, not a substring match', async () => {
    assert.deepEqual(await ids({ category: 'console' }), [7]);
    assert.deepEqual(await ids({ category: 'CONSOLE' }), [7]);
    assert.deepEqual(await ids({ category: 'cons' }), []);
    assert.deepEqual(await ids({ category: 'game accessory' }), [14]);
    assert.deepEqual(await ids({ category: 'spiel' }), [18]);
    const games = await ids({ category: 'GAME' });
    assert.deepEqual(games, expectedCatalogueIds(dataset, { category: 'game' }));
    assert.ok(!games.includes(14), '"game" does not match "Game Accessory"');
    assert.ok(!games.includes(7));
  });
});

describe('GET /catalogue: upc', () => {
  it("matches the UPC of the item's LATEST price record only", async () => {
    assert.deepEqual(await ids({ upc: '222222222222' }), [15]); // 15's newest record (listed first)
    assert.deepEqual(await ids({ upc: '111111111111' }), []); // 15's older record
    assert.deepEqual(await ids({ upc: '555555555555' }), [16]); // 16's newest record (listed last)
    assert.deepEqual(await ids({ upc: '444444444444' }), []);
    assert.deepEqual(await ids({ upc: '777777777777' }), [22, 23]); // 24 carried it before its latest record
    assert.deepEqual(await ids({ upc: '888888888888' }), [24]);
    assert.deepEqual(await ids({ upc: '045496870010' }), [1]);
  });

  it('is exact equality (no prefix match) and never shows an unpublished item', async () => {
    assert.deepEqual(await ids({ upc: '045496' }), []);
    assert.deepEqual(await ids({ upc: '0454968700100' }), []);
    assert.deepEqual(await ids({ upc: '333333333333' }), []); // DRAFT 17
    assert.deepEqual(await ids({ upc: '000000000055' }), []); // DRAFT 5
    assert.deepEqual(await ids({ upc: '666666666666' }), []); // ARCHIVED 6
  });
});

describe('GET /catalogue: combined filters', () => {
  const cases: ReferenceFilters[] = [
    { search: 'game', platform: 'pc' },
    { search: 'game', platform: 'PlayStation' },
    { platform: 'nintendo 64', category: 'CONSOLE' },
    { platform: 'nintendo 64', category: 'game', search: 'pokemon' },
    { upc: '777777777777', search: 'b' },
    { upc: '777777777777', platform: 'playstation' },
    { upc: '222222222222', category: 'game', platform: 'PC', search: 'two price' },
    { upc: '180000000018', category: 'spiel', platform: 'übersystem', search: 'AMÉLIE ad' },
    { search: '%', platform: 'pc' },
  ];
  it('every filter given must hold (AND)', async () => {
    assert.deepEqual(await ids({ search: 'game', platform: 'pc' }), [15, 19, 20]);
    assert.deepEqual(await ids({ search: 'game', platform: 'PlayStation' }), [11]);
    assert.deepEqual(await ids({ platform: 'nintendo 64', category: 'CONSOLE' }), [7]);
    assert.deepEqual(await ids({ upc: '777777777777', search: 'b' }), [23]);
    assert.deepEqual(await ids({ upc: '777777777777', platform: 'playstation' }), []);
    for (const filters of cases) assert.deepEqual(await ids(filters), expectedCatalogueIds(dataset, filters), JSON.stringify(filters));
  });
});
