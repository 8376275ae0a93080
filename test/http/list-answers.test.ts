/**
 * The filtered lists' answers are kept per data version (src/http/api/routes/list-answers.ts): a page asked
 * again is the same bytes with the same ETag, and an import or a load made by another connection (as
 * another process would) shows in the very next request, on the index's path and on the store's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ListAnswers } from '../../src/http/api/routes/list-answers.js';
import type { SerializedBody } from '../../src/http/api/routes/define-route.js';
import { importPrices } from '../../src/services/price-import.service.js';
import { openStore, type Store } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

interface PriceList {
  data: Array<{ masterItemId: number; cib: number | null }>;
  pagination: { total: number };
}

const CSV_HEADER = 'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate\r\n';

describe('kept list answers follow every data write', () => {
  let ctx: TestContext;
  let other: Store;
  before(async () => {
    ctx = await createTestContext({ env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' } });
    other = openStore(ctx.config.database);
  });
  after(async () => {
    await other.close();
    await ctx.close();
  });

  const cibOf = (res: { body: string }, id: number) => (JSON.parse(res.body) as PriceList).data.find((row) => row.masterItemId === id)?.cib;

  for (const [path, kind] of [
    [`${V1}/prices?search=snap`, 'a search (from the index)'],
    [`${V1}/prices?platform=nintendo%2064`, 'a platform page (from the store)'],
  ] as const) {
    it(`${kind}: the same bytes and tag again, and an import shows in the next request`, async () => {
      const first = await ctx.get(path);
      assert.equal(first.statusCode, 200, first.body);
      const tag = String(first.headers['etag']);
      assert.match(String(first.headers['content-type']), /^application\/json; charset=utf-8$/);
      const again = await ctx.get(path);
      assert.equal(again.body, first.body);
      assert.equal(again.headers['etag'], tag);
      const notModified = await ctx.get(path, 'alice', { headers: { 'if-none-match': tag } });
      assert.equal(notModified.statusCode, 304);
      const head = await ctx.get(path, 'alice', { method: 'HEAD' });
      assert.equal(head.statusCode, 200);
      assert.equal(head.headers['etag'], tag);
      assert.equal(head.body, '');
      assert.equal(head.headers['content-length'], String(Buffer.byteLength(first.body)));

      // Item 2 (Pokémon Snap, Nintendo 64): a new CIB price by another connection.
      const cib = (cibOf(first, 2) ?? 0) + 7;
      await importPrices(other, (async function* () {
        yield `${CSV_HEADER}2,Pokémon Snap,pokemon-snap-2,Nintendo 64,game,045496870027,15.1,${cib},90,,,2026-11-19T00:00:00.000Z\r\n`;
      })());
      const changed = await ctx.get(path, 'alice', { headers: { 'if-none-match': tag } });
      assert.equal(changed.statusCode, 200, 'the old tag no longer matches');
      assert.equal(cibOf(changed, 2), cib);
      assert.notEqual(changed.headers['etag'], tag);
      assert.equal((await ctx.get(path, 'alice', { headers: { 'if-none-match': String(changed.headers['etag']) } })).statusCode, 304);
    });
  }

  it('a load adds to the next page of a kept search and of a kept list', async () => {
    const total = async (path: string) => (JSON.parse((await ctx.get(path)).body) as PriceList).pagination.total;
    const search = `${V1}/catalogue?search=kart`;
    const list = `${V1}/catalogue?platform=nintendo%2064&limit=1`;
    const [searchBefore, listBefore] = [await total(search), await total(list)];
    assert.equal(await total(search), searchBefore);
    await loadDataset(
      other,
      {
        catalogue: [{ masterItemId: 600, name: 'Mario Kart 64', slug: 'mario-kart-64-600', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
        prices: [{ masterItemId: 600, upc: '045496870600', loose: 30, scrapeDate: '2026-11-18T00:00:00.000Z' }],
      },
      { keyPrefix: 'shelf', now: ctx.clock.now() },
    );
    assert.equal(await total(search), searchBefore + 1);
    assert.equal(await total(list), listBefore + 1);
  });

  it('many first requests for one page at once get the same answer', async () => {
    const path = `${V1}/catalogue?search=o&limit=3&offset=1`;
    const answers = await Promise.all(Array.from({ length: 20 }, () => ctx.get(path)));
    assert.deepEqual(new Set(answers.map((res) => res.statusCode)), new Set([200]));
    assert.equal(new Set(answers.map((res) => res.body)).size, 1);
    assert.equal(new Set(answers.map((res) => String(res.headers['etag']))).size, 1);
  });
});

describe('ListAnswers', () => {
  const answer = (text: string) => ({ body: text as SerializedBody, etag: `"${text}"` });
  const computed = (text: string) => async () => answer(text);
  const never = async (): Promise<{ body: SerializedBody; etag: string }> => assert.fail('computed again');

  it('answers only for the version an answer was kept at, and drops older versions', async () => {
    const answers = new ListAnswers();
    assert.equal((await answers.answer(3, 'page', computed('three'))).body, 'three');
    assert.equal((await answers.answer(3, 'page', never)).body, 'three', 'kept');
    assert.equal((await answers.answer(4, 'page', computed('four'))).body, 'four', 'a newer version computes again');
    assert.equal((await answers.answer(3, 'page', computed('late'))).body, 'late', 'an older version computes for itself');
    assert.equal((await answers.answer(4, 'page', never)).body, 'four', '...and keeps nothing');
  });

  it('shares a computation in flight, and keeps no failure', async () => {
    const answers = new ListAnswers();
    let computations = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = async () => {
      computations++;
      await gate;
      return answer('slow');
    };
    const all = Promise.all(Array.from({ length: 20 }, () => answers.answer(1, 'page', slow)));
    await new Promise((resolve) => setImmediate(resolve));
    release();
    assert.deepEqual(new Set((await all).map((a) => a.body)), new Set(['slow']));
    assert.equal(computations, 1);
    await assert.rejects(answers.answer(1, 'broken', async () => Promise.reject(new Error('store away'))), /store away/);
    assert.equal((await answers.answer(1, 'broken', computed('back'))).body, 'back', 'tried again after a failure');
  });

  it('keeps a bounded number of characters', async () => {
    const answers = new ListAnswers();
    const big = 'x'.repeat(2 ** 20);
    for (let i = 0; i < 64; i++) await answers.answer(1, `page ${i}`, computed(big));
    assert.ok(answers.size <= 32 * 2 ** 20 + 2 ** 16, `${answers.size} characters kept`);
    assert.equal((await answers.answer(1, 'page 63', never)).body.length, big.length, 'the most recent stays');
    assert.equal((await answers.answer(1, 'page 0', computed('again'))).body, 'again', 'the least recent went');
  });
});
