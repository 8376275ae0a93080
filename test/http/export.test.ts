// GET /prices/export.csv as a client sees it (docs/contract.md, "Values and data rules"): RFC 4180 text/csv with CRLF line
// ends, the spec's header row, quoting only for `,` `"` CR LF with quotes doubled, null as an empty field,
// an attachment named prices.csv; the same rows as /prices for the same filters; one request against the
// quota; HEAD with headers only; a large export streams every row in order while the app keeps answering.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import type { LightMyRequestResponse } from 'fastify';
import { parseCsv, type CsvRecord } from '../../src/csv/csv.js';
import type { Dataset, DatasetCatalogueItem, DatasetPrice } from '../../src/domain/dataset.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import {
  AWKWARD_NAME,
  AWKWARD_PLATFORM,
  body,
  expectedPriceIds,
  expectedPriceRows,
  PRICE_KEYS,
  queryString,
  resourceDataset,
  type ErrorBodyShape,
  type ListBody,
  type PriceRowBody,
} from '../helpers/resource-fixtures.js';

const HEADER = 'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate';
const UNLIMITED_BURST = { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' };

async function records(text: string): Promise<CsvRecord[]> {
  const out: CsvRecord[] = [];
  for await (const record of parseCsv([text])) out.push(record);
  return out;
}

/** A price row as the CSV writes it: every value as text, null as an empty field. */
function asCsvFields(row: PriceRowBody): string[] {
  return PRICE_KEYS.map((k) => {
    const v = row[k];
    return v === null ? '' : String(v);
  });
}

/** Every row of /prices for the filters, by paging through it. */
async function allPrices(ctx: TestContext, filters: Record<string, string>, pageSize: number): Promise<PriceRowBody[]> {
  const rows: PriceRowBody[] = [];
  for (let offset = 0; ; offset += pageSize) {
    const res = await ctx.get(`${V1}/prices${queryString({ ...filters, limit: pageSize, offset })}`);
    assert.equal(res.statusCode, 200, res.body);
    const page = body<ListBody<PriceRowBody>>(res);
    rows.push(...page.data);
    if (!page.pagination.hasMore) return rows;
  }
}

/** The text with quoted fields removed, so line ends inside data do not count as record ends. */
function outsideQuotes(text: string): string {
  return text.replace(/"(?:[^"]|"")*"/g, 'Q');
}

function assertCrlfOnly(text: string): void {
  const bare = outsideQuotes(text);
  assert.ok(text.endsWith('\r\n'), 'the last record ends with CRLF');
  assert.doesNotMatch(bare, /[^\r]\n|^\n/, 'no bare LF line end');
  assert.doesNotMatch(bare, /\r(?!\n)/, 'no bare CR line end');
}

function remaining(res: LightMyRequestResponse): number {
  return Number(res.headers['x-ratelimit-remaining']);
}

describe('GET /prices/export.csv: format', () => {
  const dataset = resourceDataset();
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ dataset, env: UNLIMITED_BURST });
  });
  after(async () => {
    await ctx.close();
  });

  it('is text/csv, an attachment named prices.csv, with the spec header row', async () => {
    const res = await ctx.get(`${V1}/prices/export.csv`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/csv(;|$)/);
    assert.equal(res.headers['content-disposition'], 'attachment; filename="prices.csv"');
    assert.equal(res.headers['cache-control'], 'private, no-store');
    assert.ok(res.body.startsWith(`${HEADER}\r\n`), res.body.slice(0, 120));
  });

  it('uses CRLF line ends everywhere, quotes only fields holding , " CR or LF, doubling quotes', async () => {
    const text = (await ctx.get(`${V1}/prices/export.csv`)).body;
    assertCrlfOnly(text);
    // Item 26: name with CR LF, CRLF, `,` and `"`; platform with `"` and `,`; a null cib as an empty field.
    const line26 =
      `26,"Line\r\nBreak, ""Quoted""\nEdition\rEnd",item-26,"Neo ""Geo"", AES",game,260000000026,26.5,,260,,,2026-11-10T00:00:00.000Z\r\n`;
    assert.ok(text.includes(line26), 'the awkward row is written as RFC 4180 says');
    // Item 8 (fixture): `,` and `"` in the name.
    assert.ok(
      text.includes(`\r\n8,"100% Complete, ""Deluxe"" Edition_x",100-complete-deluxe-edition-x-8,PlayStation,game,711719000089,5.5,7.25,,,,2026-11-12T00:00:00.000Z\r\n`),
    );
    // Nothing that needs no quoting is quoted: `%`, `_`, `\`, accents, spaces stay bare.
    assert.ok(text.includes(`\r\n11,Back\\Slash Game,item-11,PlayStation,game,111111000011,11,11.5,,,,2026-11-01T00:00:00.000Z\r\n`));
    assert.ok(text.includes(`\r\n18,Ame\u0301lie Adventure,item-18,Übersystem,Spiel,180000000018,18,18.18,180,1.8,0.18,2026-11-04T00:00:00.000Z\r\n`));
    for (const record of await records(text)) {
      record.fields.forEach((field, i) => {
        assert.equal(record.quoted[i], /[",\r\n]/.test(field), `field ${i} of record ${record.record}: ${JSON.stringify(field)}`);
      });
    }
    const parsed = (await records(text)).find((r) => r.fields[0] === '26');
    assert.equal(parsed?.fields[1], AWKWARD_NAME);
    assert.equal(parsed?.fields[3], AWKWARD_PLATFORM);
  });

  it('writes every null price point as an empty field (item 25 has none known)', async () => {
    const text = (await ctx.get(`${V1}/prices/export.csv`)).body;
    assert.ok(text.includes(`\r\n25,No Points Known,item-25,PC,game,250000000025,,,,,,2026-11-09T00:00:00.000Z\r\n`));
    // A zero price is a value, not an empty field.
    assert.ok(text.includes(`\r\n19,X_y Game,item-19,PC,game,190000000019,0,,,,,2026-11-05T00:00:00.000Z\r\n`));
  });

  it('holds the same rows as /prices, in the same order (no filter)', async () => {
    const parsed = await records((await ctx.get(`${V1}/prices/export.csv`)).body);
    assert.deepEqual(parsed[0]?.fields, HEADER.split(','));
    const json = await allPrices(ctx, {}, 4);
    assert.deepEqual(json, expectedPriceRows(dataset));
    assert.deepEqual(parsed.slice(1).map((r) => r.fields), json.map(asCsvFields));
  });

  const filterCases: Record<string, string>[] = [
    { search: 'pokemon' },
    { search: 'POKÉMON sn' },
    { search: '%' },
    { search: '_' },
    { search: '\\' },
    { search: 'game' },
    { search: 'line "quoted"' },
    { platform: 'playstation' },
    { platform: 'NINTENDO 64' },
    { upc: '777777777777' },
    { upc: '111111111111' },
    { upc: '000000000055' },
    { search: 'game', platform: 'PC' },
    { search: 'upc b', upc: '777777777777' },
    { search: 'deluxe', platform: 'playstation', upc: '711719000089' },
    { search: 'nothing matches this' },
  ];
  for (const filters of filterCases) {
    it(`holds the same rows as /prices for ${JSON.stringify(filters)}`, async () => {
      const res = await ctx.get(`${V1}/prices/export.csv${queryString(filters)}`);
      assert.equal(res.statusCode, 200, res.body);
      assertCrlfOnly(res.body);
      const parsed = await records(res.body);
      assert.deepEqual(parsed[0]?.fields, HEADER.split(','));
      const json = await allPrices(ctx, filters, 3);
      assert.deepEqual(json.map((r) => r.masterItemId), expectedPriceIds(dataset, filters));
      assert.deepEqual(parsed.slice(1).map((r) => r.fields), json.map(asCsvFields));
    });
  }

  it('a filter matching nothing gives the header row alone', async () => {
    const res = await ctx.get(`${V1}/prices/export.csv?search=qqqq`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, `${HEADER}\r\n`);
  });

  it('takes search, platform, upc and nothing else (limit, offset, category: 400)', async () => {
    for (const query of ['limit=10', 'offset=0', 'category=game']) {
      const res = await ctx.get(`${V1}/prices/export.csv?${query}`);
      assert.equal(res.statusCode, 400, query);
      assert.equal(body<ErrorBodyShape>(res).error, 'bad_request');
    }
  });

  it('counts as exactly one request against the monthly quota', async () => {
    const first = await ctx.get(`${V1}/catalogue?limit=1`);
    const exported = await ctx.get(`${V1}/prices/export.csv`);
    const next = await ctx.get(`${V1}/catalogue?limit=1`);
    assert.equal(exported.statusCode, 200);
    assert.equal(remaining(exported), remaining(first) - 1);
    assert.equal(remaining(next), remaining(first) - 2);
    assert.equal(exported.headers['x-ratelimit-limit'], '50000');

    const meBefore = body<{ usage: { used: number } }>(await ctx.get(`${V1}/me`));
    await ctx.get(`${V1}/prices/export.csv?platform=pc`);
    const meAfter = body<{ usage: { used: number } }>(await ctx.get(`${V1}/me`));
    assert.equal(meAfter.usage.used, meBefore.usage.used + 1);
  });

  it('HEAD answers the headers of the GET, metered the same, with no body', async () => {
    const get = await ctx.get(`${V1}/prices/export.csv?platform=pc`);
    const head = await ctx.get(`${V1}/prices/export.csv?platform=pc`, 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
    assert.equal(head.headers['content-type'], get.headers['content-type']);
    assert.equal(head.headers['content-disposition'], 'attachment; filename="prices.csv"');
    assert.equal(head.headers['cache-control'], 'private, no-store');
    assert.equal(remaining(head), remaining(get) - 1, 'HEAD is metered like GET');
    // The GET streams (no length known up front): HEAD must not announce an empty body either.
    assert.notEqual(head.headers['content-length'], '0');
    const perRequest = new Set(['x-request-id', 'date', 'x-ratelimit-remaining', 'ratelimit', 'transfer-encoding', 'content-length']);
    const names = (r: LightMyRequestResponse) => Object.keys(r.headers).filter((h) => !perRequest.has(h)).sort();
    assert.deepEqual(names(head), names(get));
  });

  it('needs the export scope (403 insufficient_scope) and a key (401)', async () => {
    const noScope = await ctx.get(`${V1}/prices/export.csv`, 'alice-noscope');
    assert.equal(noScope.statusCode, 403);
    assert.equal(body<ErrorBodyShape>(noScope).error, 'insufficient_scope');
    const noKey = await ctx.get(`${V1}/prices/export.csv`, null);
    assert.equal(noKey.statusCode, 401);
  });
});

// ---------------------------------------------------------------------------------------------------

const BIG = 5000;

/**
 * 5,000 published priced items (ids 1..5000, two price records each, the latest second on even ids and
 * first on odd ones), interleaved with 100 priced DRAFTs and 100 published items without a price
 * (ids 5001..5200), which the export must leave out.
 */
function bigDataset(): Dataset {
  const catalogue: DatasetCatalogueItem[] = [];
  const prices: DatasetPrice[] = [];
  const pad = (n: number) => String(n).padStart(5, '0');
  for (let id = 1; id <= BIG; id++) {
    catalogue.push({
      masterItemId: id,
      name: id % 500 === 0 ? `Item ${pad(id)}, "special"` : `Item ${pad(id)}`,
      slug: `item-${id}`,
      category: 'game',
      platform: id % 2 === 0 ? 'Even Box' : 'Odd Box',
      status: 'PUBLISHED',
    });
    const older: DatasetPrice = { masterItemId: id, upc: `9${pad(id)}000001`, loose: 1, scrapeDate: '2026-10-01T00:00:00.000Z' };
    const latest: DatasetPrice = {
      masterItemId: id,
      upc: `9${pad(id)}000002`,
      loose: id / 100,
      cib: id % 3 === 0 ? null : id + 0.5,
      scrapeDate: '2026-11-01T00:00:00.000Z',
    };
    prices.push(...(id % 2 === 0 ? [older, latest] : [latest, older]));
  }
  for (let id = BIG + 1; id <= BIG + 200; id++) {
    const draft = id % 2 === 0;
    catalogue.push({ masterItemId: id, name: `Hidden ${id}`, slug: `hidden-${id}`, category: 'game', platform: 'Even Box', status: draft ? 'DRAFT' : 'PUBLISHED' });
    if (draft) prices.push({ masterItemId: id, upc: `8${pad(id)}000001`, loose: 9, scrapeDate: '2026-11-01T00:00:00.000Z' });
  }
  return {
    accounts: [{ ref: 'alice', email: 'alice@example.com', plan: 'enthusiast' }],
    keys: [{ ref: 'alice', account: 'alice', name: 'all', scopes: [...SCOPES] }],
    catalogue,
    prices,
  };
}

/** Collects a stream's bytes as UTF-8 text. */
async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}

describe('GET /prices/export.csv: a large catalogue', () => {
  const dataset = bigDataset();
  const expected = expectedPriceRows(dataset);
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ dataset, env: UNLIMITED_BURST });
  });
  after(async () => {
    await ctx.close();
  });

  /** The whole export as a stream the test reads when it chooses: until then, back-pressure holds it open. */
  const streamedExport = (): Promise<LightMyRequestResponse> =>
    ctx.app.inject({
      method: 'GET',
      url: `${V1}/prices/export.csv`,
      headers: { 'x-api-key': ctx.loaded.keys.alice! },
      payloadAsStream: true,
    });

  it('exports every one of the 5,000 rows, in ascending masterItemId, each from the latest record', async () => {
    assert.equal(expected.length, BIG);
    const res = await ctx.get(`${V1}/prices/export.csv`);
    assert.equal(res.statusCode, 200);
    assertCrlfOnly(res.body);
    const parsed = await records(res.body);
    assert.equal(parsed.length, BIG + 1);
    assert.deepEqual(parsed.slice(1).map((r) => Number(r.fields[0])), expected.map((r) => r.masterItemId));
    assert.deepEqual(parsed.slice(1).map((r) => r.fields), expected.map(asCsvFields));
  });

  it('is the same as paging through /prices', async () => {
    const json = await allPrices(ctx, {}, 100);
    assert.equal(json.length, BIG);
    const parsed = await records((await ctx.get(`${V1}/prices/export.csv`)).body);
    assert.deepEqual(parsed.slice(1).map((r) => r.fields), json.map(asCsvFields));
  });

  it('applies the filters on a large set', async () => {
    const res = await ctx.get(`${V1}/prices/export.csv?platform=even%20box&search=ITEM%20042`);
    const parsed = await records(res.body);
    // Two terms: names containing both "item" and "042" (Item 00042, Item 00420..00429, Item 0042x, ...).
    const want = expected.filter((r) => r.platform === 'Even Box' && r.name.includes('042')).map(asCsvFields);
    assert.deepEqual(want.map((f) => f[0]), expectedPriceIds(dataset, { platform: 'even box', search: 'ITEM 042' }).map(String));
    assert.ok(want.length > 50);
    assert.deepEqual(parsed.slice(1).map((r) => r.fields), want);
    const byUpc = await records((await ctx.get(`${V1}/prices/export.csv?upc=904242000002`)).body);
    assert.deepEqual(byUpc.slice(1).map((r) => r.fields[0]), ['4242']);
    const olderUpc = await records((await ctx.get(`${V1}/prices/export.csv?upc=904242000001`)).body);
    assert.equal(olderUpc.length, 1, 'the older record\'s UPC matches nothing');
  });

  it('counts one request however many rows it streams', async () => {
    const before = body<{ usage: { used: number } }>(await ctx.get(`${V1}/me`)).usage.used;
    const res = await ctx.get(`${V1}/prices/export.csv`);
    assert.equal(res.statusCode, 200);
    const afterUsed = body<{ usage: { used: number } }>(await ctx.get(`${V1}/me`)).usage.used;
    assert.equal(afterUsed, before + 1);
  });

  it('another request is answered while an export is still streaming', async () => {
    // The export's body is not read until /me has been answered: under back-pressure it cannot finish
    // before that, so /me is provably served in the middle of the export.
    const exportRes = await streamedExport();
    assert.equal(exportRes.statusCode, 200);
    const stream = exportRes.stream();
    const me = await ctx.get(`${V1}/me`);
    assert.equal(me.statusCode, 200);
    const catalogue = await ctx.get(`${V1}/catalogue?limit=1&offset=4999`);
    assert.equal(catalogue.statusCode, 200);
    assert.equal(body<ListBody<{ masterItemId: number }>>(catalogue).data[0]?.masterItemId, 5000);
    // The server has not finished writing the export: it was answered in the middle of it.
    assert.equal(exportRes.raw.res.writableEnded, false, 'the export was still in progress');
    const text = await readAll(stream);
    const parsed = await records(text);
    assert.equal(parsed.length, BIG + 1);
    assert.deepEqual(parsed.slice(1).map((r) => r.fields), expected.map(asCsvFields));
  });

  it('an export still streaming at the request deadline (1.2 s) is streamed to its end, not cut off', async () => {
    const exportRes = await streamedExport();
    assert.equal(exportRes.statusCode, 200);
    // A slow reader: nothing is read until well past the deadline, so back-pressure holds the export open.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    assert.equal(exportRes.raw.res.writableEnded, false, 'the export was still in progress at the deadline');
    const parsed = await records(await readAll(exportRes.stream()));
    assert.equal(parsed.length, BIG + 1);
    assert.deepEqual(parsed.slice(1).map((r) => r.fields), expected.map(asCsvFields));
    const troubles = ctx.logs.lines().filter((line) => Number(line.level) >= 40);
    assert.deepEqual(troubles, [], 'the export logged a warning or an error');
  });

  it('an export and a /me request started together both succeed', async () => {
    const [exported, me] = await Promise.all([ctx.get(`${V1}/prices/export.csv`), ctx.get(`${V1}/me`)]);
    assert.equal(me.statusCode, 200);
    assert.equal(exported.statusCode, 200);
    assert.equal((await records(exported.body)).length, BIG + 1);
  });
});
