/**
 * The in-memory search index answers exactly what the store answers: the same rows, in the same order,
 * with the same total, for generated names (accents, case, %, _ and \, several spaces) and generated
 * searches (one- and two-character terms, several terms, terms found nowhere) combined with every filter
 * and offset; before and after a load changes the data version, and while it is being rebuilt.
 * Runs against the store TEST_STORE names (SQLite file or PostgreSQL).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Dataset, DatasetCatalogueItem, DatasetPrice } from '../../src/domain/dataset.js';
import type { Store } from '../../src/store/database.js';
import { hotQueries } from '../../src/store/hot-queries.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { listCatalogue, type ItemFilters } from '../../src/store/repositories/catalogue.repository.js';
import type { PageRequest } from '../../src/store/repositories/page.js';
import { listPrices } from '../../src/store/repositories/price.repository.js';
import { IndexedSearch } from '../../src/store/search/indexed-search.js';
import { openTestStore } from '../helpers/test-app.js';
import { seededRandom } from '../../src/demo/random.js';

const WORDS = [
  'Pokémon', 'POKEMON', 'Poke\u0301mon', 'Café', 'cafe', 'Amélie', 'Über', 'ueber', 'Zelda', 'zelda', 'Mario', 'MARIO',
  'Kart', '64', '100%', '50%', 'x_y', 'x', 'y', 'a', 'aa', 'back\\slash', '\\', '_', '%', 'Ocarina', 'of', 'Time',
  'ﬁnal', 'final', 'Fantasy', 'II', 'iii', 'Señor', 'naïve', 'ß', 'straße', 'Ω', 'Édition', 'deluxe', '"Quoted"', 'a,b',
];
const PLATFORMS = ['Nintendo 64', 'NES', 'Übersystem', 'PlayStation 2'];
const CATEGORIES = ['game', 'Console', 'Spiel'];
const UPCS = ['045496870005', '045496870012', '711719123456'];
const STATUSES = ['PUBLISHED', 'PUBLISHED', 'PUBLISHED', 'DRAFT', 'ARCHIVED'] as const;

function pick<T>(rnd: () => number, list: readonly T[]): T {
  return list[Math.floor(rnd() * list.length)]!;
}

function generatedDataset(rnd: () => number, firstId: number, items: number): Dataset {
  const catalogue: DatasetCatalogueItem[] = [];
  const prices: DatasetPrice[] = [];
  for (let i = 0; i < items; i++) {
    // Ids with gaps, as a real catalogue has them.
    const masterItemId = firstId + i * 3 + Math.floor(rnd() * 3);
    const words = Array.from({ length: 1 + Math.floor(rnd() * 5) }, () => pick(rnd, WORDS));
    const name = words.join(rnd() < 0.2 ? '  ' : ' ');
    catalogue.push({
      masterItemId,
      name,
      slug: `item-${masterItemId}`,
      category: pick(rnd, CATEGORIES),
      platform: rnd() < 0.5 ? pick(rnd, PLATFORMS) : pick(rnd, PLATFORMS).toUpperCase(),
      status: pick(rnd, STATUSES),
    });
    if (rnd() < 0.6) prices.push({ masterItemId, upc: pick(rnd, UPCS), loose: Math.round(rnd() * 10000) / 100, scrapeDate: '2026-11-18T00:00:00.000Z' });
  }
  return { catalogue, prices };
}

/** Searches drawn from the names: whole words, parts of one to three characters, case changed, and noise. */
function generatedSearch(rnd: () => number, names: readonly string[]): string {
  const terms = 1 + Math.floor(rnd() * 3);
  return Array.from({ length: terms }, () => {
    const roll = rnd();
    if (roll < 0.1) return pick(rnd, ['%', '_', '\\', 'zz', 'q', 'é', 'E\u0301', 'FI', 'ss', '%o', 'x_', '\u0301']);
    const word = pick(rnd, pick(rnd, names).split(' ').filter((w) => w !== '').concat(['x']));
    if (roll < 0.6) return rnd() < 0.5 ? word : word.toUpperCase();
    const length = 1 + Math.floor(rnd() * 3);
    const start = Math.floor(rnd() * Math.max(1, word.length - length + 1));
    return word.slice(start, start + length);
  }).join(' ');
}

function generatedFilters(rnd: () => number, search: string): ItemFilters {
  const filters: ItemFilters = { search };
  if (rnd() < 0.3) filters.platform = rnd() < 0.5 ? pick(rnd, PLATFORMS) : pick(rnd, PLATFORMS).toLowerCase();
  if (rnd() < 0.2) filters.category = pick(rnd, CATEGORIES).toUpperCase();
  if (rnd() < 0.15) filters.upc = rnd() < 0.8 ? pick(rnd, UPCS) : '999999999999';
  return filters;
}

const quiet = { info: () => {}, warn: () => {} };

describe('the search index answers exactly what the store answers', () => {
  let store: Store;
  let close: () => Promise<void>;
  let search: IndexedSearch;
  const rnd = seededRandom(20261124);
  const names: string[] = [];

  before(async () => {
    ({ store, close } = await openTestStore());
    const dataset = generatedDataset(rnd, 1, 400);
    names.push(...(dataset.catalogue ?? []).map((i) => i.name));
    await loadDataset(store, dataset, { keyPrefix: 'shelf', now: Date.parse('2026-11-20T00:00:00.000Z') });
    search = new IndexedSearch(store, hotQueries(store).dataVersion, quiet);
    await search.start();
  });
  after(async () => {
    search.close();
    await close();
  });

  /** Compares the index's catalogue and prices pages with the store's for many generated searches. */
  async function compareMany(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const text = generatedSearch(rnd, names);
      const filters = generatedFilters(rnd, text);
      const storeAll = await listCatalogue(store.db, store.dialect, filters, { limit: 100, offset: 0 });
      const page: PageRequest = { limit: 1 + Math.floor(rnd() * 100), offset: rnd() < 0.5 ? 0 : Math.floor(rnd() * (storeAll.pagination.total + 3)) };
      const label = `${JSON.stringify(filters)} ${JSON.stringify(page)}`;
      const indexed = await search.listCatalogue(filters, page);
      assert.ok(indexed !== null, `the index answers ${label}`);
      assert.deepEqual(indexed, await listCatalogue(store.db, store.dialect, filters, page), `catalogue ${label}`);
      const { category: _category, ...priceFilters } = filters;
      const indexedPrices = await search.listPrices(priceFilters, page);
      assert.ok(indexedPrices !== null, `the index answers prices ${label}`);
      assert.deepEqual(indexedPrices, await listPrices(store.db, store.dialect, priceFilters, page), `prices ${label}`);
    }
  }

  it('for 400 generated searches with filters and offsets', async () => {
    assert.equal(search.status().state, 'ready');
    await compareMany(400);
  });

  it('for the hand-picked awkward ones', async () => {
    for (const text of ['%', '_', '\\', 'back\\slash', 'x_y', '100%', 'pokemon', 'POKÉMON', 'e\u0301', 'fi', 'ss', 'ß', 'ω', 'a a a', '  x  ', '"quoted"', 'a,b', 'zzz', '\u0301']) {
      const page = { limit: 100, offset: 0 };
      assert.deepEqual(await search.listCatalogue({ search: text }, page), await listCatalogue(store.db, store.dialect, { search: text }, page), text);
      assert.deepEqual(await search.listPrices({ search: text }, page), await listPrices(store.db, store.dialect, { search: text }, page), `prices ${text}`);
    }
  });

  it('for list pages without a search: no filter, platform, category, UPC, deep offsets', async () => {
    const all = await listCatalogue(store.db, store.dialect, {}, { limit: 1, offset: 0 });
    for (let i = 0; i < 120; i++) {
      const { search: _search, ...filters } = generatedFilters(rnd, '');
      const page: PageRequest = { limit: 1 + Math.floor(rnd() * 100), offset: rnd() < 0.4 ? 0 : Math.floor(rnd() * (all.pagination.total + 3)) };
      const label = `${JSON.stringify(filters)} ${JSON.stringify(page)}`;
      const indexed = await search.listCatalogue(filters, page);
      assert.ok(indexed !== null, `the index answers ${label}`);
      assert.deepEqual(indexed, await listCatalogue(store.db, store.dialect, filters, page), `catalogue ${label}`);
      const { category: _category, ...priceFilters } = filters;
      assert.deepEqual(await search.listPrices(priceFilters, page), await listPrices(store.db, store.dialect, priceFilters, page), `prices ${label}`);
    }
  });

  it('leaves to the store what it cannot answer: terms that fold to white space', async () => {
    const page = { limit: 10, offset: 0 };
    // U+00A8 (diaeresis) folds to a space followed by a combining mark: the folded term holds white space.
    assert.equal(await search.listCatalogue({ search: 'a\u00a8b' }, page), null);
  });

  it('after a load changes the data version: the store answers until the index is rebuilt, then the index again', async () => {
    const more = generatedDataset(rnd, 5000, 150);
    names.push(...(more.catalogue ?? []).map((i) => i.name));
    await loadDataset(store, more, { keyPrefix: 'shelf', now: Date.parse('2026-11-21T00:00:00.000Z') });
    const filters = { search: pick(rnd, names).split(' ')[0]! };
    const page = { limit: 100, offset: 0 };
    // The index is for the old version: it must not answer (and starts its rebuild).
    assert.equal(await search.listCatalogue(filters, page), null, 'a stale index never answers');
    const rebuilt = search.refresh();
    // Asked while the rebuild runs: the index does not answer, and the store does; unless the rebuild ended
    // while the version was being read (a fast store, or a slow machine), and then it answers the new rows.
    const meanwhile = await search.listCatalogue(filters, page);
    if (meanwhile !== null) assert.deepEqual(meanwhile, await listCatalogue(store.db, store.dialect, filters, page), 'only the new version');
    await rebuilt;
    assert.equal(search.status().state, 'ready');
    const answer = await search.listCatalogue(filters, page);
    assert.ok(answer !== null, 'the rebuilt index answers');
    assert.deepEqual(answer, await listCatalogue(store.db, store.dialect, filters, page));
    await compareMany(200);
  });
});
