/**
 * Searches through the API while the in-memory index is current, stale and being rebuilt: a load made by
 * another connection (as another process would) shows in the very next search, in /prices and in the CSV
 * export, and stays right once the index has caught up.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore, type Store } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { body, expectedCatalogueIds, publishedItems, resourceDataset, type CatalogueItemBody, type ListBody, type PriceRowBody } from '../helpers/resource-fixtures.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

const dataset = resourceDataset();

describe('searches while the index is current, stale and rebuilt', () => {
  let ctx: TestContext;
  let other: Store;
  before(async () => {
    ctx = await createTestContext({ dataset, env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' } });
    other = openStore(ctx.config.database);
  });
  after(async () => {
    await other.close();
    await ctx.close();
  });

  const builds = () => ctx.logs.lines().filter((line) => line.msg === 'search index built');
  const catalogueIds = async (search: string) => {
    const res = await ctx.get(`${V1}/catalogue?search=${encodeURIComponent(search)}&limit=100`);
    assert.equal(res.statusCode, 200, res.body);
    const page = body<ListBody<CatalogueItemBody>>(res);
    assert.equal(page.pagination.total, page.data.length);
    return page.data.map((item) => item.masterItemId);
  };
  const priceIds = async (search: string) => body<ListBody<PriceRowBody>>(await ctx.get(`${V1}/prices?search=${encodeURIComponent(search)}&limit=100`)).data.map((row) => row.masterItemId);
  const exportIds = async (search: string) => {
    const res = await ctx.get(`${V1}/prices/export.csv?search=${encodeURIComponent(search)}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.body.split('\r\n').slice(1, -1).map((line) => Number(line.split(',')[0]));
  };

  it('is built before the app is ready, over every published item', async () => {
    const [built] = builds();
    assert.ok(built !== undefined, 'the index was built before the first request');
    assert.equal(built.items, publishedItems(dataset).length);
    for (const search of ['pokemon', 'zelda time', 'z', '%', 'sn']) assert.deepEqual(await catalogueIds(search), expectedCatalogueIds(dataset, { search }), search);
  });

  it('shows a load made elsewhere in the very next search, and after the rebuild', async () => {
    const before = await catalogueIds('kart');
    const buildsBefore = builds().length;
    await loadDataset(
      other,
      {
        catalogue: [
          { masterItemId: 900, name: 'Mario Kart 64', slug: 'mario-kart-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' },
          { masterItemId: 901, name: 'Kart Qwyxracer (draft)', slug: 'kart-racer', category: 'game', platform: 'Nintendo 64', status: 'DRAFT' },
        ],
        prices: [{ masterItemId: 900, upc: '045496870900', loose: 30, scrapeDate: '2026-11-18T00:00:00.000Z' }],
      },
      { keyPrefix: 'shelf', now: ctx.clock.now() },
    );
    const expected = [...before, 900];
    // Whichever answers (the store while the index is stale or rebuilding, the index after), the answer is the same.
    assert.deepEqual(await catalogueIds('kart'), expected);
    assert.deepEqual(await priceIds('kart 64'), [900]);
    assert.deepEqual(await exportIds('kart 64'), [900]);
    const deadline = Date.now() + 60_000;
    while (builds().length === buildsBefore && Date.now() < deadline) await sleep(20);
    assert.ok(builds().length > buildsBefore, 'the index was rebuilt for the new data version');
    assert.deepEqual(await catalogueIds('kart'), expected);
    assert.deepEqual(await priceIds('kart 64'), [900]);
    assert.deepEqual(await exportIds('kart 64'), [900]);
    assert.deepEqual(await catalogueIds('qwyx'), [], 'a draft is never found');
  });
});
