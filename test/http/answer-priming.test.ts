/**
 * Priming (src/http/api/answer-priming.ts): a generation's first item or price request reads the whole
 * catalogue in the background when it fits in the cache, so that the rest is answered from memory. A
 * primed answer is the one the route computes, byte for byte, with the same tag; a load answers its new data
 * from the next request on; a catalogue larger than the cache is not primed; a prime that cannot read the
 * store leaves requests working. On whichever store TEST_STORE names.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import Fastify, { type LightMyRequestResponse } from 'fastify';
import { buildApp, type App } from '../../src/http/app.js';
import { itemPriming, type PrimeLog } from '../../src/http/api/answer-priming.js';
import { strongEtag } from '../../src/http/api/conditional.js';
import { ItemAnswers, type OkSerializerSource } from '../../src/http/api/item-answers.js';
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

describe("the serializer a prime takes from a request's reply", () => {
  it('is the one reply.serialize runs for a 200 (fastify/lib/reply.js), not JSON.stringify', async () => {
    const app = Fastify();
    const schema = { type: 'object', properties: { data: { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' } } } } };
    // Written differently by the schema's serializer: a field the schema lacks is left out, an integer given as text is a number.
    const payload = { data: { id: '5', name: 'Café "x"', extra: true } };
    let got: { serialized: unknown; taken: string | undefined } | undefined;
    app.get('/', { schema: { response: { 200: schema, 404: { type: 'object', properties: { error: { type: 'string' } } } } } }, async (_request, reply) => {
      const taken: OkSerializerSource = reply;
      got = { serialized: reply.serialize(payload), taken: taken.getSerializationFunction('200')?.(payload) };
      return { data: { id: 1, name: 'n' } };
    });
    try {
      assert.equal((await app.inject({ method: 'GET', url: '/' })).statusCode, 200);
    } finally {
      await app.close();
    }
    assert.equal(got?.serialized, '{"data":{"id":5,"name":"Café \\"x\\""}}');
    assert.equal(got.taken, got.serialized);
  });
});

describe('priming one cache', () => {
  interface Row {
    masterItemId: number;
    text: string;
  }
  /** A store of rows whose page reads are counted, can be held back, and fail when told to. */
  function fakePages(ids: number[]) {
    const rows = new Map(ids.map((id) => [id, { masterItemId: id, text: `item ${id}` }]));
    const state = { pageReads: 0, inFlight: 0, mostInFlight: 0, failing: false, hold: null as Promise<void> | null };
    const pages: ItemPages<Row> = {
      countUpTo: async (upTo) => Math.min(rows.size, upTo),
      after: async (afterId, limit) => {
        state.pageReads++;
        state.inFlight++;
        state.mostInFlight = Math.max(state.mostInFlight, state.inFlight);
        try {
          if (state.hold !== null) await state.hold;
          if (state.failing) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
          return [...rows.values()].filter((row) => row.masterItemId > afterId).sort((a, b) => a.masterItemId - b.masterItemId).slice(0, limit).map((row) => ({ ...row }));
        } finally {
          state.inFlight--;
        }
      },
      idOf: (row) => row.masterItemId,
    };
    const read = async (id: number) => {
      const row = rows.get(id);
      return row === undefined ? undefined : { ...row };
    };
    return { rows, state, pages, read };
  }
  function logOf() {
    const lines: Array<{ level: 'info' | 'warn'; fields: object; message: string }> = [];
    const log: PrimeLog = {
      info: (fields, message) => lines.push({ level: 'info', fields, message }),
      warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
    };
    return { lines, log };
  }
  const serialize = (row: Row) => JSON.stringify({ data: row });
  /** The reply of a request, as far as a prime takes from it: the route's serializer of a 200. */
  const reply: OkSerializerSource = { getSerializationFunction: () => (payload) => JSON.stringify(payload) };
  const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

  it('keeps every answer of a catalogue that fits, as computed, from pages, on either keeping rule', async () => {
    for (const keepFromFirstRequest of [false, true]) {
      const { state, pages, read } = fakePages(ids(25));
      const { lines, log } = logOf();
      const answers = new ItemAnswers(read, { entries: 100, bytes: 1 << 20 }, keepFromFirstRequest, { ...itemPriming('items', pages, 'sqlite', log), pageRows: 10 });
      assert.deepEqual(await answers.answer(1, 7, serialize, reply), { body: serialize({ masterItemId: 7, text: 'item 7' }), etag: strongEtag(serialize({ masterItemId: 7, text: 'item 7' })) });
      assert.equal(await answers.priming, 'primed');
      assert.equal(answers.size, 25);
      assert.equal(state.pageReads, 3, 'pages of 10: 10, 10, 5');
      assert.equal(lines.filter((line) => line.message === 'item answers primed').length, 1);
      const stored = fakePages(ids(25));
      for (const id of ids(25)) {
        const row = (await stored.read(id))!;
        assert.deepEqual(await answers.answer(1, id, () => assert.fail('read from memory'), reply), { body: serialize(row), etag: strongEtag(serialize(row)) });
      }
      assert.equal(await answers.answer(1, 99, serialize, reply), null, 'an id not in the catalogue is still read');
    }
  });

  it('does not prime a catalogue of more rows than the cache holds, and stops before the bytes pass their share', async () => {
    const { state, pages, read } = fakePages(ids(5));
    const { lines, log } = logOf();
    const tiny = new ItemAnswers(read, { entries: 4, bytes: 1 << 20 }, true, itemPriming('items', pages, 'sqlite', log));
    await tiny.answer(1, 1, serialize, reply);
    assert.equal(await tiny.priming, 'too-large');
    assert.equal(state.pageReads, 0, 'no page read');
    assert.equal(tiny.size, 1, "only the request's own answer");
    assert.equal(lines[0]?.message, 'item answers not primed: more rows than the cache holds');

    // Each answer counts about 240 of the bound: 10 fill 2,400, of which 90% is 2,160 (nine answers).
    const small = fakePages(ids(10));
    const bytes = new ItemAnswers(small.read, { entries: 100, bytes: 2400 }, false, itemPriming('items', small.pages, 'sqlite', logOf().log));
    await bytes.answer(1, 1, serialize, reply);
    assert.equal(await bytes.priming, 'full');
    assert.ok(bytes.size >= 8 && bytes.size <= 9, `kept ${bytes.size}`);
  });

  it('keeps a small hot set of a catalogue too large to prime, and the whole of one that fits', async () => {
    // Each answer counts about 240 of the bound: three fit in 750.
    const limits = { entries: 4, bytes: 1 << 20, unprimedKeptBytes: 750 };
    const sqlite = fakePages(ids(10));
    const small = new ItemAnswers(sqlite.read, limits, false, itemPriming('items', sqlite.pages, 'sqlite', logOf().log));
    await small.answer(1, 1, serialize, reply);
    assert.equal(await small.priming, 'too-large');
    for (const id of ids(10)) for (let ask = 0; ask < 2; ask++) await small.answer(1, id, serialize, reply);
    assert.equal(small.size, 3, 'within 750 of the bound, not its 4 entries');
    // The most recently kept stay: 8, 9 and 10 come from memory, 1 is read again.
    for (const id of [8, 9, 10]) await small.answer(1, id, () => assert.fail(`id ${id} read from the store`), reply);
    let reads = 0;
    await small.answer(1, 1, (row) => (reads++, serialize(row)), reply);
    assert.equal(reads, 1);

    // PostgreSQL keeps an answer from its first request, within the same bound.
    const postgres = fakePages(ids(10));
    const first = new ItemAnswers(postgres.read, limits, true, itemPriming('items', postgres.pages, 'postgres', logOf().log));
    await first.answer(1, 1, serialize, reply);
    assert.equal(await first.priming, 'too-large');
    for (const id of ids(10)) await first.answer(1, id, serialize, reply);
    assert.equal(first.size, 3);
    await first.answer(1, 10, () => assert.fail('id 10 read from the store'), reply);

    // A catalogue that fits is primed whole, past the hot set's bound.
    const fits = fakePages(ids(4));
    const primed = new ItemAnswers(fits.read, limits, false, itemPriming('items', fits.pages, 'sqlite', logOf().log));
    await primed.answer(1, 1, serialize, reply);
    assert.equal(await primed.priming, 'primed');
    for (const id of ids(4)) await primed.answer(1, id, serialize, reply);
    assert.equal(primed.size, 4);
  });

  it('stops when a newer version starts, keeps nothing of the old one under it, runs one prime at a time, and replaces nothing held', async () => {
    const { rows, state, pages, read } = fakePages(ids(30));
    const answers = new ItemAnswers(read, { entries: 100, bytes: 1 << 20 }, true, { ...itemPriming('items', pages, 'postgres', logOf().log), pageRows: 10 });
    let release!: () => void;
    state.hold = new Promise((resolve) => (release = resolve));
    await answers.answer(1, 1, serialize, reply);
    const first = answers.priming;
    await within(1000, 'the first page asked for', async () => state.pageReads === 1);
    // Version 2: an item changes; a request of it keeps its answer before the prime gets there.
    rows.set(15, { masterItemId: 15, text: 'fifteen, fresher' });
    rows.set(20, { masterItemId: 20, text: 'twenty, new' });
    assert.equal((await answers.answer(2, 15, serialize, reply))?.body, serialize({ masterItemId: 15, text: 'fifteen, fresher' }));
    rows.set(15, { masterItemId: 15, text: 'fifteen, changed after' });
    state.hold = null;
    release();
    assert.equal(await first, 'superseded');
    assert.equal(await answers.priming, 'primed');
    assert.equal(state.mostInFlight, 1, 'one page read at a time');
    assert.equal(answers.size, 30);
    assert.equal((await answers.answer(2, 20, () => assert.fail('read'), reply))?.body, serialize({ masterItemId: 20, text: 'twenty, new' }));
    assert.equal((await answers.answer(2, 15, () => assert.fail('read'), reply))?.body, serialize({ masterItemId: 15, text: 'fifteen, fresher' }), 'the answer a request kept stays');
    // A request that read version 1 late starts nothing.
    const last = answers.priming;
    await answers.answer(1, 3, serialize, reply);
    assert.equal(answers.priming, last);
  });

  it('a page that cannot be read ends the prime with one warning, no rejection, and requests go on', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const { state, pages, read } = fakePages(ids(10));
      const { lines, log } = logOf();
      const answers = new ItemAnswers(read, { entries: 100, bytes: 1 << 20 }, false, itemPriming('items', pages, 'sqlite', log));
      state.failing = true;
      assert.equal((await answers.answer(1, 2, serialize, reply))?.body, serialize({ masterItemId: 2, text: 'item 2' }));
      assert.equal(await answers.priming, 'failed');
      assert.deepEqual(
        lines.map((line) => [line.level, line.message, line.fields]),
        [['warn', 'item answers priming stopped: the store could not be read', { cache: 'items', dataVersion: 1, reason: 'connect ECONNREFUSED 127.0.0.1:5432' }]],
      );
      state.failing = false;
      for (let i = 0; i < 3; i++) assert.equal((await answers.answer(1, 2, serialize, reply))?.body, serialize({ masterItemId: 2, text: 'item 2' }));
      assert.equal(answers.size, 1, 'kept from its second request, as without priming');
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(rejections, []);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it('closing stops a prime at its next page', async () => {
    const { state, pages, read } = fakePages(ids(30));
    const answers = new ItemAnswers(read, { entries: 100, bytes: 1 << 20 }, true, { ...itemPriming('items', pages, 'postgres', logOf().log), pageRows: 10 });
    let release!: () => void;
    state.hold = new Promise((resolve) => (release = resolve));
    await answers.answer(1, 1, serialize, reply);
    await within(1000, 'the first page asked for', async () => state.pageReads === 1);
    const closing = answers.close();
    release();
    await closing;
    assert.equal(await answers.priming, 'superseded');
    assert.equal(state.pageReads, 1);
    assert.equal(answers.size, 1);
  });
});
