/**
 * List totals and collection values are kept per data version: a load or an import made anywhere (here: by
 * another store connection, as another process would) is seen by the very next request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { importPrices } from '../../src/services/price-import.service.js';
import { openStore, type Store } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

describe('cached totals and values follow every data write', () => {
  let ctx: TestContext;
  let other: Store;
  before(async () => {
    ctx = await createTestContext();
    other = openStore(ctx.config.database);
  });
  after(async () => {
    await other.close();
    await ctx.close();
  });

  const total = async (url: string) => (JSON.parse((await ctx.get(url)).body) as { pagination: { total: number } }).pagination.total;
  const value = async () => (JSON.parse((await ctx.get(`${V1}/collection/value`)).body) as { data: { ownedItems: number; estimatedValue: number } }).data;

  it('a load by another connection changes the next totals', async () => {
    const catalogue = await total(`${V1}/catalogue`);
    const n64 = await total(`${V1}/catalogue?platform=nintendo%2064`);
    const prices = await total(`${V1}/prices?platform=nintendo%2064`);
    assert.equal(await total(`${V1}/catalogue`), catalogue, 'a repeated request answers the same');
    await loadDataset(
      other,
      {
        catalogue: [{ masterItemId: 500, name: 'Mario Kart 64', slug: 'mario-kart-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
        prices: [{ masterItemId: 500, upc: '045496870500', loose: 30, scrapeDate: '2026-11-18T00:00:00.000Z' }],
      },
      { keyPrefix: 'shelf', now: ctx.clock.now() },
    );
    assert.equal(await total(`${V1}/catalogue`), catalogue + 1);
    assert.equal(await total(`${V1}/catalogue?platform=nintendo%2064`), n64 + 1);
    assert.equal(await total(`${V1}/prices?platform=nintendo%2064`), prices + 1);
  });

  it('an import by another connection changes the next collection value', async () => {
    const before = await value();
    assert.deepEqual(await value(), before);
    // Alice owns item 2 in CIB condition, whose cib price is unknown (null) in the fixture.
    const csv =
      'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate\r\n' +
      '2,Pokémon Snap,pokemon-snap-2,Nintendo 64,game,045496870027,15.1,40,90,,,2026-11-19T00:00:00.000Z\r\n';
    await importPrices(other, (async function* () {
      yield csv;
    })());
    const afterImport = await value();
    assert.equal(afterImport.ownedItems, before.ownedItems);
    assert.equal(afterImport.estimatedValue, Math.round((before.estimatedValue + 40) * 100) / 100);
  });
});

describe('one computation per total, however many ask at once', () => {
  it('shares a computation in flight, recomputes after a failure, and after the data version moves', async () => {
    const { ReadCache } = await import('../../src/store/read-cache.js');
    let version = 1;
    let computations = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const cache = new ReadCache(async () => version);
    const slow = async () => {
      computations++;
      await gate;
      return 42;
    };
    const answers = Promise.all(Array.from({ length: 50 }, () => cache.get('total', slow)));
    await new Promise((resolve) => setImmediate(resolve));
    release();
    assert.deepEqual(new Set(await answers), new Set([42]));
    assert.equal(computations, 1, 'fifty concurrent first hits ran the count once');

    let failures = 0;
    const failing = async (): Promise<number> => {
      failures++;
      throw new Error('store went away');
    };
    await assert.rejects(cache.get('other', failing));
    await assert.rejects(cache.get('other', failing));
    assert.equal(failures, 2, 'a failure is not kept');

    version = 2;
    assert.equal(await cache.get('total', async () => 43), 43, 'a new data version computes anew');
    assert.equal(await cache.get('total', async () => 44), 43);
  });
});

describe('a total asked for often stays while the limit evicts the others', () => {
  it('keeps the hot total computed once through tens of thousands of one-off totals, and drops the oldest one-off', async () => {
    const { ReadCache } = await import('../../src/store/read-cache.js');
    const cache = new ReadCache(async () => 1);
    const computed = new Map<string, number>();
    const count = (key: string) => async () => {
      computed.set(key, (computed.get(key) ?? 0) + 1);
      return key.length;
    };
    await cache.get('hot', count('hot'));
    // Far more one-off searches than the cache holds; the front page's total is asked for all along.
    for (let i = 0; i < 30_000; i++) {
      await cache.get(`cold-${i}`, count(`cold-${i}`));
      if (i % 1000 === 0) await cache.get('hot', count('hot'));
    }
    assert.equal(computed.get('hot'), 1, 'the hot total was never evicted');
    await cache.get('cold-0', count('cold-0'));
    assert.equal(computed.get('cold-0'), 2, 'the oldest one-off total was evicted and is computed again');
  });
});

describe('many first requests for the same totals at once', () => {
  it('all answer 200 with the same exact total', async () => {
    const ctx = await createTestContext({ env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' } });
    try {
      const urls = [`${V1}/catalogue?search=pok`, `${V1}/prices?platform=nintendo%2064`, `${V1}/collection/value`];
      const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => ctx.get(urls[i % urls.length]!)));
      for (const [i, res] of answers.entries()) assert.equal(res.statusCode, 200, `${urls[i % urls.length]}: ${res.body}`);
      for (const url of urls) {
        const bodies = new Set(answers.filter((_, i) => urls[i % urls.length] === url).map((res) => res.body));
        assert.equal(bodies.size, 1, `${url} answered differently under concurrency`);
      }
      const catalogueTotal = (JSON.parse(answers[0]!.body) as { pagination: { total: number } }).pagination.total;
      assert.equal(catalogueTotal, 2, 'Pokémon Snap and Pokemon Stadium');
    } finally {
      await ctx.close();
    }
  });
});
