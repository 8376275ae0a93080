// Filtered exports copied from the price guide file (src/export/guide-rows.ts): for every filter the export
// takes (search terms, platform, upc, and their combinations), the bytes are those the store streams, byte
// for byte, over rows with quotes, commas and line breaks and over a file larger than one read window;
// after an import, the first requests get the new data from the store until both the file and the search
// index are at the new version, and the copy is used again after that.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { csvChunks } from '../../src/csv/csv-chunks.js';
import type { Dataset, DatasetCatalogueItem, DatasetPrice } from '../../src/domain/dataset.js';
import { PriceGuide } from '../../src/export/price-guide.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { importPrices } from '../../src/services/price-import.service.js';
import { hotQueries } from '../../src/store/hot-queries.js';
import { EXPORT_COLUMNS, exportPriceBatches } from '../../src/store/repositories/price-export.js';
import type { PriceFilters } from '../../src/store/repositories/price.repository.js';
import { IndexedSearch } from '../../src/store/search/indexed-search.js';
import { AWKWARD_NAME, AWKWARD_PLATFORM, queryString, resourceDataset } from '../helpers/resource-fixtures.js';
import { waitFor } from '../helpers/server-process.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { seededRandom } from '../../src/demo/random.js';

const UNLIMITED_BURST = { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' };

function pick<T>(rnd: () => number, list: readonly T[]): T {
  return list[Math.floor(rnd() * list.length)]!;
}

const WORDS = ['Pokémon', 'POKEMON', 'Café', 'Zelda', 'Mario', 'Kart', '64', '100%', 'x_y', 'a', 'Ocarina', 'of', 'Time', 'Fantasy', 'II', 'Señor', '"Quoted"', 'a,b', 'Line\r\nBreak'];
const PLATFORMS = ['Nintendo 64', 'NES', 'PlayStation 2', AWKWARD_PLATFORM];
const UPCS = ['045496870005', '045496870012', '711719123456'];

/** Items after the resource fixture's ids, enough rows that the file spans several read windows (512 KB). */
function generatedDataset(rnd: () => number, firstId: number, items: number): Dataset {
  const catalogue: DatasetCatalogueItem[] = [];
  const prices: DatasetPrice[] = [];
  for (let i = 0; i < items; i++) {
    const masterItemId = firstId + i * 2 + Math.floor(rnd() * 2);
    const name = Array.from({ length: 1 + Math.floor(rnd() * 6) }, () => pick(rnd, WORDS)).join(' ');
    catalogue.push({
      masterItemId,
      name: `${name} ${'Deluxe Edition '.repeat(Math.floor(rnd() * 4))}`.trim(),
      slug: `gen-${masterItemId}`,
      category: pick(rnd, ['game', 'Console']),
      platform: pick(rnd, PLATFORMS),
      status: rnd() < 0.85 ? 'PUBLISHED' : 'DRAFT',
    });
    if (rnd() < 0.7) prices.push({ masterItemId, upc: pick(rnd, UPCS), loose: Math.round(rnd() * 10000) / 100, scrapeDate: '2026-11-18T00:00:00.000Z' });
  }
  return { catalogue, prices };
}

/** The export as the store streams it for these filters: what every filtered export sent before the file. */
async function storeBytes(ctx: TestContext, filters: PriceFilters): Promise<Buffer> {
  let text = '';
  for await (const chunk of csvChunks(EXPORT_COLUMNS, exportPriceBatches(ctx.store, filters))) text += chunk;
  return Buffer.from(text, 'utf8');
}

async function dataVersion(ctx: TestContext): Promise<number> {
  const row = await ctx.store.db.selectFrom('data_version').select('version').where('id', '=', 1).executeTakeFirstOrThrow();
  return Number(row.version);
}

const HAND_PICKED: PriceFilters[] = [
  { platform: 'NES' },
  { platform: 'nintendo 64' },
  { platform: AWKWARD_PLATFORM },
  { platform: 'No Such Platform' },
  { search: 'mario' },
  { search: 'Mario Kart' },
  { search: 'a' },
  { search: '"quoted"' },
  { search: 'a,b' },
  { search: 'line' },
  { search: 'break' },
  { search: 'pokemon' },
  { search: 'POKÉMON' },
  { search: '100%' },
  { search: 'x_' },
  { search: 'zzzz' },
  { search: 'Deluxe' },
  { upc: '777777777777' },
  { upc: '045496870005' },
  { upc: '999999999999' },
  { search: 'zelda', platform: 'NES' },
  { search: 'edition', platform: AWKWARD_PLATFORM },
  { search: 'game', upc: '777777777777' },
  { platform: 'Nintendo 64', upc: '711719123456' },
  { search: 'time of', platform: 'PlayStation 2', upc: '045496870012' },
  // Folds to a term holding white space: the index cannot answer it, the store does.
  { search: 'a\u00a8b' },
];

describe('filtered exports from the price guide file', () => {
  let ctx: TestContext;
  let guide: PriceGuide;
  let search: IndexedSearch;
  const rnd = seededRandom(20261124);
  const names: string[] = [];

  before(async () => {
    ctx = await createTestContext({ dataset: resourceDataset(), env: UNLIMITED_BURST });
    const more = generatedDataset(rnd, 1000, 14_000);
    names.push(AWKWARD_NAME, ...(more.catalogue ?? []).map((i) => i.name));
    await loadDataset(ctx.store, more, { keyPrefix: ctx.config.keyPrefix, now: Date.parse('2026-11-20T00:00:00.000Z') });
    // A guide and an index of the test's own beside the app's (servers may share the directory), so that
    // the test can tell the copy from the store's stream.
    const { dataVersion: version } = hotQueries(ctx.store);
    guide = new PriceGuide({ dir: ctx.config.exportDir, store: ctx.store, dataVersion: version, log: ctx.app.log, pollMs: 200 });
    search = new IndexedSearch(ctx.store, version, ctx.app.log);
    guide.start();
    await search.start();
  });
  after(async () => {
    search.close();
    await guide.close();
    await ctx.close();
  });

  /** Waits until the file's rows and the index are at the current version. */
  async function bothCurrent(): Promise<number> {
    const version = await dataVersion(ctx);
    await waitFor(async () => guide.rowsOf(version) !== null, `the guide's rows at version ${version}`, 180_000);
    await search.refresh();
    assert.equal(search.status().version, version);
    return version;
  }

  /** The filtered export copied from the file; fails when the copy cannot be made. */
  async function copied(filters: PriceFilters, version: number): Promise<Buffer> {
    const runs = await search.pricedRuns(filters, version);
    assert.ok(runs !== null, `the index answers ${JSON.stringify(filters)}`);
    const fromFile = await guide.filtered(version, runs);
    assert.ok(fromFile !== null, `the file serves ${JSON.stringify(filters)}`);
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of fromFile.chunks) chunks.push(Buffer.from(chunk));
    } finally {
      await fromFile.close();
    }
    return Buffer.concat(chunks);
  }

  async function served(filters: PriceFilters): Promise<Buffer> {
    const res = await ctx.get(`${V1}/prices/export.csv${queryString({ ...filters })}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.rawPayload;
  }

  /** Both paths, and the route, give the store's bytes for `filters`. */
  async function compare(filters: PriceFilters, version: number): Promise<void> {
    const label = JSON.stringify(filters);
    const expected = await storeBytes(ctx, filters);
    if (filters.search !== 'a\u00a8b') assert.deepEqual(await copied(filters, version), expected, `copied ${label}`);
    assert.deepEqual(await served(filters), expected, `served ${label}`);
  }

  it('spans several read windows, and holds the awkward rows', async () => {
    const version = await bothCurrent();
    const whole = await storeBytes(ctx, {});
    assert.ok(whole.length > 2 * 512 * 1024, `the file is ${whole.length} bytes`);
    assert.ok(whole.includes('"Line\r\nBreak, ""Quoted""'));
    // Every row: the header and one run covering them all.
    assert.deepEqual(await copied({ search: '' }, version), whole);
  });

  it('gives the store’s bytes for hand-picked filters and their combinations', async () => {
    const version = await bothCurrent();
    for (const filters of HAND_PICKED) await compare(filters, version);
    assert.equal(await search.pricedRuns({ search: 'a\u00a8b' }, version), null);
  });

  it('gives the store’s bytes for 150 generated filters', async () => {
    const version = await bothCurrent();
    for (let i = 0; i < 150; i++) {
      const filters: PriceFilters = {};
      if (rnd() < 0.8) {
        const words = pick(rnd, names).split(/\s+/).filter((w) => w !== '');
        filters.search = Array.from({ length: 1 + Math.floor(rnd() * 2) }, () => {
          const word = pick(rnd, words);
          const at = Math.floor(rnd() * word.length);
          return rnd() < 0.5 ? word : word.slice(at, at + 1 + Math.floor(rnd() * 3));
        }).join(' ');
      }
      if (rnd() < 0.4) filters.platform = pick(rnd, PLATFORMS);
      if (rnd() < 0.2 || Object.keys(filters).length === 0) filters.upc = pick(rnd, [...UPCS, '777777777777']);
      await compare(filters, version);
    }
  });

  it('after an import: the store answers at once, then the copy again, never the old rows', async () => {
    const before = await bothCurrent();
    const filters = { platform: 'NES' };
    const oldBytes = await copied(filters, before);
    // A later price for an NES item, as `shelfapi import prices` would bring it.
    const line = oldBytes.toString('utf8').split('\r\n')[1] as string;
    const fields = line.split(',');
    fields[6] = '4321.5';
    fields[11] = '2026-11-19T00:00:00.000Z';
    await importPrices(ctx.store, Readable.from([`${EXPORT_COLUMNS.join(',')}\r\n${fields.join(',')}\r\n`]));
    const version = await dataVersion(ctx);
    assert.equal(version, before + 1);
    const expected = await storeBytes(ctx, filters);
    assert.ok(expected.includes(`\r\n${fields.join(',')}\r\n`), 'the imported price is current');
    // Neither the old file's rows nor the old index serve the new version.
    assert.equal(guide.rowsOf(version), null);
    assert.equal(await search.pricedRuns(filters, version), null, 'a stale index never answers');
    assert.deepEqual(await served(filters), expected, 'the first request after the import');
    assert.deepEqual(await served({ search: 'mario', upc: '045496870005' }), await storeBytes(ctx, { search: 'mario', upc: '045496870005' }));
    assert.equal(await bothCurrent(), version);
    assert.equal(guide.rowsOf(before), null, 'the old version’s rows are let go');
    await compare(filters, version);
    for (const more of HAND_PICKED.slice(0, 10)) await compare(more, version);
  });
});
