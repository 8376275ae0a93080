/**
 * Priming (src/http/api/answer-priming.ts) on a server: a generation's first item or price request reads the
 * whole catalogue in the background when it fits in the cache, so that the rest is answered from memory. A
 * primed answer is the one the route computes, byte for byte, with the same tag; a load answers its new data
 * from the next request on; a prime that cannot read the store leaves requests working. On whichever store
 * TEST_STORE names. How one cache primes (sizes, versions, failures, closing) is in answer-priming-cache.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp, type App } from '../../src/http/app.js';
import { strongEtag } from '../../src/http/api/conditional.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { importPrices } from '../../src/services/price-import.service.js';
import { hotQueries } from '../../src/store/hot-queries.js';
import { cataloguePages, pricePages, type ItemPages } from '../../src/store/item-pages.js';
import type { Store } from '../../src/store/database.js';
import { holdsPrincipals, within } from '../helpers/held-principals.js';
import { LogCapture } from '../helpers/log-capture.js';
import { keyOf, url } from '../helpers/pipeline-helpers.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';

/** The fixture's published items, and those of them with a current price. */
const ITEMS = [1, 2, 3, 4, 7, 8, 9, 10];
const PRICED = [1, 2, 3, 4, 8, 9];

/** What a client sees of an answer. */
const seen = (res: LightMyRequestResponse) => ({ status: res.statusCode, body: res.body, etag: res.headers.etag, type: res.headers['content-type'] });

/** The data versions at which `logs` shows the cache named `cache` primed whole. */
function primedVersions(logs: LogCapture, cache: string): unknown[] {
  return logs
    .lines()
    .filter((line) => line.msg === 'item answers primed' && line.cache === cache)
    .map((line) => line.dataVersion);
}

/** Waits until `logs` shows both caches primed: at `version` when given, at any version otherwise. */
async function primedBoth(logs: LogCapture, version?: number): Promise<void> {
  const primed = (cache: string) => {
    const versions = primedVersions(logs, cache);
    return version === undefined ? versions.length > 0 : versions.includes(version);
  };
  await within(5000, `both caches primed${version === undefined ? '' : ` at version ${version}`}`, async () => primed('catalogue items') && primed('prices'));
}

/** Makes every read of a catalogue item or price fail (both select the item's name), until undone. */
async function hideNames(store: Store): Promise<() => Promise<void>> {
  await sql`alter table catalogue_items rename column name to name_away`.execute(store.db);
  return async () => {
    await sql`alter table catalogue_items rename column name_away to name`.execute(store.db);
  };
}

describe('item answers primed on a server', () => {
  let ctx: TestContext;
  const apps: App[] = [];
  const get = (app: App, path: string) => app.inject({ method: 'GET', url: url(path), headers: { 'x-api-key': keyOf(ctx, 'alice') } });
  /** Another server on the same store, its log kept. */
  const server = async () => {
    const logs = new LogCapture();
    const app = await buildApp({ config: ctx.config, store: ctx.store, meter: ctx.meter, clock: ctx.clock, logStream: logs });
    await app.ready();
    apps.push(app);
    return { app, logs };
  };

  before(async () => {
    // expectServerErrors: a request the store cannot answer (names hidden) shows the answers came from memory.
    ctx = await createTestContext({ env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' }, expectServerErrors: true });
  });
  after(async () => {
    for (const app of apps) await app.close();
    await ctx.close();
  });

  it('reads pages whose rows are those the single-item reads return, on this store', async () => {
    const queries = hotQueries(ctx.store);
    const items = cataloguePages(ctx.store);
    const prices = pricePages(ctx.store);
    assert.equal(await items.countUpTo(100), ITEMS.length);
    assert.equal(await items.countUpTo(3), 3, 'counted no further than asked');
    assert.equal(await prices.countUpTo(100), PRICED.length);
    // Pages of three, in id order, each row as catalogueItem / price reads it (numbers, nulls, dates alike).
    const pagesOf = async <Row>(pages: ItemPages<Row>) => {
      const rows: Row[] = [];
      for (let page = await pages.after(0, 3); page.length > 0; page = await pages.after(pages.idOf(page.at(-1)!), 3)) rows.push(...page);
      return rows;
    };
    const itemRows = await pagesOf(items);
    assert.deepEqual(itemRows.map((row) => row.masterItemId), ITEMS);
    assert.deepEqual(itemRows, await Promise.all(ITEMS.map(async (id) => queries.catalogueItem(id))));
    const priceRows = await pagesOf(prices);
    assert.deepEqual(priceRows.map((row) => row.masterItemId), PRICED);
    assert.deepEqual(priceRows, await Promise.all(PRICED.map(async (id) => queries.price(id))));
  });

  it("answers the rest of the catalogue from memory after a server's first request, byte for byte as computed", async () => {
    // The first request of a server reads its item from the store and serializes it as the route does: one
    // server per item gives every item's computed answer, and primes the others.
    const computed = new Map<string, ReturnType<typeof seen>>();
    const servers: Array<{ app: App; logs: LogCapture }> = [];
    for (const [i, id] of ITEMS.entries()) {
      const s = await server();
      const priced = PRICED[i % PRICED.length]!;
      const item = seen(await get(s.app, `/catalogue/${id}`));
      const price = seen(await get(s.app, `/prices/${priced}`));
      computed.set(`/catalogue/${id}`, item);
      if (computed.has(`/prices/${priced}`)) assert.deepEqual(price, computed.get(`/prices/${priced}`));
      else computed.set(`/prices/${priced}`, price);
      servers.push(s);
    }
    assert.equal(computed.size, ITEMS.length + PRICED.length);
    for (const [path, answer] of computed) {
      assert.equal(answer.status, 200, path);
      assert.equal(answer.etag, strongEtag(answer.body), path);
    }
    for (const { logs } of servers) await primedBoth(logs);

    // This server's first requests start both primes; once done, no item read reaches the store.
    assert.equal((await ctx.get(url('/catalogue/1'))).statusCode, 200);
    assert.equal((await ctx.get(url('/prices/1'))).statusCode, 200);
    await primedBoth(ctx.logs);
    const restore = await hideNames(ctx.store);
    try {
      for (const { app } of [{ app: ctx.app }, ...servers]) {
        for (const [path, answer] of computed) assert.deepEqual(seen(await get(app, path)), answer, `${path}: primed as computed`);
      }
      // An id not primed still goes to the store, which cannot answer now: the answers above came from memory.
      assert.ok((await ctx.get(url('/catalogue/5'))).statusCode >= 500);
    } finally {
      await restore();
    }
    assert.equal((await ctx.get(url('/catalogue/5'))).statusCode, 404);
  });

  it('after a load and an import, the next request of a primed item answers the new data, and the new data is primed', async () => {
    assert.ok(primedVersions(ctx.logs, 'catalogue items').length > 0, 'primed by the test before');
    // Held at this version: item 3's price (primed), and that item 11 does not exist (asked twice: kept on any store).
    const loose = async () => (JSON.parse((await ctx.get(url('/prices/3'))).body) as { data: { loose: number } }).data.loose;
    assert.equal(await loose(), 30);
    for (let i = 0; i < 2; i++) assert.equal((await ctx.get(url('/catalogue/11'))).statusCode, 404);

    await loadDataset(
      ctx.store,
      { catalogue: [{ masterItemId: 11, name: 'Banjo-Kazooie', slug: 'banjo-kazooie', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }] },
      { keyPrefix: ctx.config.keyPrefix, now: ctx.clock.now() },
    );
    // PostgreSQL + Redis: the server learns the version from PostgreSQL's NOTIFY, within a second.
    if (holdsPrincipals(ctx.app)) await within(1000, 'the load seen', async () => (await ctx.get(url('/catalogue/11'))).statusCode === 200);
    const item = await ctx.get(url('/catalogue/11'));
    assert.equal(item.statusCode, 200);
    assert.equal((JSON.parse(item.body) as { data: { name: string } }).data.name, 'Banjo-Kazooie');

    const csv =
      'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate\r\n' +
      '3,Super Mario 64,super-mario-64-3,Nintendo 64,game,045496870034,33,61,,,,2026-11-20T00:00:00.000Z\r\n';
    await importPrices(ctx.store, (async function* () {
      yield csv;
    })());
    if (holdsPrincipals(ctx.app)) await within(1000, 'the import seen', async () => (await loose()) === 33);
    assert.equal(await loose(), 33);

    // Both caches primed again at the new version (the catalogue's from its first request there): with the
    // store unable to answer, memory has the new data.
    assert.equal((await ctx.get(url('/catalogue/11'))).statusCode, 200);
    await primedBoth(ctx.logs, await hotQueries(ctx.store).dataVersion());
    const restore = await hideNames(ctx.store);
    try {
      assert.equal(await loose(), 33, 'the imported price, from memory');
      assert.equal((JSON.parse((await ctx.get(url('/catalogue/11'))).body) as { data: { name: string } }).data.name, 'Banjo-Kazooie');
      assert.equal((await ctx.get(url('/catalogue/4'))).statusCode, 200, 'an item not asked for since the load: primed');
    } finally {
      await restore();
    }
  });
});

describe('a prime whose store cannot be read', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ expectServerErrors: true });
  });
  after(async () => ctx.close());

  it('logs one warning, and requests keep working', async () => {
    const restore = await hideNames(ctx.store);
    try {
      // The first request starts the prime; its own read fails too (the store cannot answer it).
      assert.ok((await ctx.get(url('/catalogue/2'))).statusCode >= 500);
      await within(5000, 'the warning', async () => ctx.logs.lines().some((line) => line.level === 40 && line.cache === 'catalogue items'));
    } finally {
      await restore();
    }
    const warnings = ctx.logs.lines().filter((line) => line.msg === 'item answers priming stopped: the store could not be read');
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0]!.reason), /name/);
    for (let i = 0; i < 3; i++) {
      const res = await ctx.get(url('/catalogue/2'));
      assert.equal(res.statusCode, 200);
      assert.equal((JSON.parse(res.body) as { data: { name: string } }).data.name, 'Pokémon Snap');
    }
    assert.equal(primedVersions(ctx.logs, 'catalogue items').length, 0, 'not primed until the next version');
  });
});
