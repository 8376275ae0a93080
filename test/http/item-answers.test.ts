/**
 * Item and price answers are held per data version (src/http/api/item-answers.ts): the same bytes and
 * headers whether they come from the store or from memory, and a load or import made anywhere (here by
 * other store connections, as other processes would) is seen by the next request on every server (within a
 * second on PostgreSQL + Redis, where servers take the data version from PostgreSQL's NOTIFY).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp, type App } from '../../src/http/app.js';
import { strongEtag } from '../../src/http/api/conditional.js';
import { ItemAnswers } from '../../src/http/api/item-answers.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { importPrices } from '../../src/services/price-import.service.js';
import { openStore, type Store } from '../../src/store/database.js';
import { assertError, JSON_TYPE, keyOf, quotaUsed, url } from '../helpers/pipeline-helpers.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { forgetAccessVersion, holdsPrincipals, within } from '../helpers/held-principals.js';

/** What a client sees of an answer: status, body and the headers the body decides. */
const seen = (res: LightMyRequestResponse) => ({
  status: res.statusCode,
  body: res.body,
  etag: res.headers.etag,
  type: res.headers['content-type'],
  length: res.headers['content-length'],
});

describe('item and price answers held per data version', () => {
  let ctx: TestContext;
  /** Server B: its own app and store connection; `other` is a third connection that writes, as the CLI would. */
  let storeB: Store;
  let appB: App;
  let other: Store;

  before(async () => {
    ctx = await createTestContext({ expectServerErrors: true });
    storeB = openStore(ctx.config.database);
    appB = await buildApp({ config: ctx.config, store: storeB, meter: ctx.meter, clock: ctx.clock, logger: false });
    await appB.ready();
    other = openStore(ctx.config.database);
  });

  after(async () => {
    await appB.close();
    await storeB.close();
    await other.close();
    await ctx.close();
  });

  /**
   * PostgreSQL + Redis: a server answering from held principals takes the data version from PostgreSQL's
   * NOTIFY (version-listener.ts), so a load or an import is seen within a second there; elsewhere at once.
   */
  const seenWithinASecond = async (check: () => Promise<boolean>) => {
    if (holdsPrincipals(appB)) await within(1000, 'the new data on both servers', check);
  };

  const onB = (path: string, headers: Record<string, string> = {}) =>
    appB.inject({ method: 'GET', url: url(path), headers: { 'x-api-key': keyOf(ctx, 'alice'), ...headers } });

  it('answers the same bytes and headers from memory as from the store, with a strong tag of the body', async () => {
    for (const path of ['/catalogue/1', '/prices/1']) {
      // Kept from the second request on: the third comes from memory.
      const first = await ctx.get(url(path));
      await ctx.get(url(path));
      const third = await ctx.get(url(path));
      assert.equal(first.statusCode, 200, path);
      assert.deepEqual(seen(third), seen(first), `${path}: the held answer is the stored one`);
      assert.equal(first.headers['content-type'], JSON_TYPE);
      assert.equal(first.headers['content-length'], String(Buffer.byteLength(first.body)));
      assert.equal(first.headers.etag, strongEtag(first.body));
      assert.ok((JSON.parse(first.body) as { data: { masterItemId: number } }).data.masterItemId === 1);
      // Another server, whose first answer comes from the store, answers the same.
      assert.deepEqual(seen(await onB(path)), seen(first), `${path} on another server`);

      const head = await ctx.get(url(path), 'alice', { method: 'HEAD' });
      assert.equal(head.statusCode, 200);
      assert.equal(head.body, '');
      assert.deepEqual([head.headers.etag, head.headers['content-type'], head.headers['content-length']], [first.headers.etag, JSON_TYPE, first.headers['content-length']]);
    }
  });

  it('a held answer still gives 304 for its tag, and gives the quota count back', async () => {
    const first = await ctx.get(url('/catalogue/2'));
    const used = await quotaUsed(ctx, 'alice');
    const again = await ctx.get(url('/catalogue/2'), 'alice', { headers: { 'if-none-match': String(first.headers.etag) } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    assert.equal(again.headers.etag, first.headers.etag);
    assert.equal(again.headers['content-type'], undefined);
    assert.equal(again.headers['content-length'], undefined);
    assert.equal(await quotaUsed(ctx, 'alice'), used, 'a 304 is not counted');
  });

  it('a load and an import by another connection are seen by the next request on both servers, 404s included', async () => {
    // Held before the writes: a 404 for an item not yet loaded, and a price.
    for (const get of [(p: string) => ctx.get(url(p)), onB]) {
      for (let i = 0; i < 3; i++) {
        assertError(await get('/catalogue/500'), 404, 'not_found');
        assertError(await get('/prices/500'), 404, 'not_found');
        assert.equal((await get('/prices/2')).statusCode, 200);
      }
    }
    const priceBefore = JSON.parse((await ctx.get(url('/prices/2'))).body) as { data: { cib: number | null } };
    assert.notEqual(priceBefore.data.cib, 41);

    await loadDataset(
      other,
      {
        catalogue: [{ masterItemId: 500, name: 'Mario Kart 64', slug: 'mario-kart-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
        prices: [{ masterItemId: 500, upc: '045496870500', loose: 30, scrapeDate: '2026-11-18T00:00:00.000Z' }],
      },
      { keyPrefix: 'shelf', now: ctx.clock.now() },
    );
    await seenWithinASecond(async () => (await ctx.get(url('/catalogue/500'))).statusCode === 200 && (await onB('/catalogue/500')).statusCode === 200);
    for (const get of [(p: string) => ctx.get(url(p)), onB]) {
      const item = await get('/catalogue/500');
      assert.equal(item.statusCode, 200);
      assert.equal((JSON.parse(item.body) as { data: { name: string } }).data.name, 'Mario Kart 64');
      assert.equal((JSON.parse((await get('/prices/500')).body) as { data: { loose: number } }).data.loose, 30);
    }

    const csv =
      'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate\r\n' +
      '2,Pokémon Snap,pokemon-snap-2,Nintendo 64,game,045496870027,15.1,41,90,,,2026-11-20T00:00:00.000Z\r\n';
    await importPrices(other, (async function* () {
      yield csv;
    })());
    const cib = async (res: Promise<LightMyRequestResponse>) => (JSON.parse((await res).body) as { data: { cib: number } }).data.cib;
    await seenWithinASecond(async () => (await cib(ctx.get(url('/prices/2')))) === 41 && (await cib(onB('/prices/2'))) === 41);
    for (const get of [(p: string) => ctx.get(url(p)), onB]) {
      const res = await get('/prices/2');
      assert.equal((JSON.parse(res.body) as { data: { cib: number } }).data.cib, 41);
      assert.equal(res.headers.etag, strongEtag(res.body));
    }
  });

  it('when the data version cannot be read, nothing is served from memory', async () => {
    assert.equal((await onB('/catalogue/1')).statusCode, 200);
    // PostgreSQL + Redis: a request whose principal is current reads neither version from PostgreSQL (the data
    // version comes from the NOTIFY); one whose account's version is not in Redis reads both.
    if (holdsPrincipals(appB)) await forgetAccessVersion(ctx, ctx.loaded.accounts.alice!);
    await sql`alter table data_version rename column version to version_away`.execute(ctx.store.db);
    try {
      for (const res of [await onB('/catalogue/1'), await ctx.get(url('/prices/1'))]) {
        // A missing column is not an outage (isStoreUnavailable), so 500 rather than 503: refused all the same.
        assert.ok(res.statusCode >= 500, `refused with a 5xx, got ${res.statusCode}: ${res.body}`);
        assert.ok(!('data' in (JSON.parse(res.body) as object)));
      }
    } finally {
      await sql`alter table data_version rename column version_away to version`.execute(ctx.store.db);
    }
    assert.equal((await onB('/catalogue/1')).statusCode, 200);
  });

  it('without a data version row, a key new to the server is refused as a held one is, not served at version 0', async () => {
    const storeC = openStore(ctx.config.database);
    const appC = await buildApp({ config: ctx.config, store: storeC, meter: ctx.meter, clock: ctx.clock, logger: false });
    await appC.ready();
    const onC = () => appC.inject({ method: 'GET', url: url('/catalogue/1'), headers: { 'x-api-key': keyOf(ctx, 'alice') } });
    const { version } = await other.db.selectFrom('data_version').select('version').where('id', '=', 1).executeTakeFirstOrThrow();
    await other.db.deleteFrom('data_version').execute();
    try {
      for (const res of [await onC(), await onB('/catalogue/1')]) {
        assert.ok(res.statusCode >= 500, `refused with a 5xx, got ${res.statusCode}: ${res.body}`);
        assert.ok(!('data' in (JSON.parse(res.body) as object)));
      }
    } finally {
      await other.db.insertInto('data_version').values({ id: 1, version }).execute();
      await appC.close();
      await storeC.close();
    }
    assert.equal((await onB('/catalogue/1')).statusCode, 200);
  });
});

describe('the answers one server holds', () => {
  /** A store of rows by id whose reads are counted, and fail when told to. */
  function fakeStore() {
    const rows = new Map<number, string>([
      [1, 'one'],
      [2, 'two'],
      [3, 'three'],
    ]);
    const state = { reads: 0, failing: false, rows };
    const read = async (id: number) => {
      state.reads++;
      if (state.failing) throw new Error('store unreachable');
      return rows.get(id);
    };
    return { state, read };
  }
  const serialize = (row: string) => JSON.stringify({ data: row });

  it('reads each id once per version, never keeps an older version over a newer one, and keeps no failure', async () => {
    const { state, read } = fakeStore();
    const answers = new ItemAnswers(read);
    assert.deepEqual(await answers.answer(1, 1, serialize), { body: '{"data":"one"}', etag: strongEtag('{"data":"one"}') });
    assert.equal(await answers.answer(1, 9, serialize), null, 'a missing item');
    assert.equal(state.reads, 2);
    assert.equal(answers.size, 0, 'an id asked once is not kept');
    await answers.answer(1, 1, serialize);
    assert.equal(await answers.answer(1, 9, serialize), null);
    assert.equal(answers.size, 2, 'kept from the second ask');
    assert.deepEqual(await answers.answer(1, 1, serialize), { body: '{"data":"one"}', etag: strongEtag('{"data":"one"}') });
    assert.equal(await answers.answer(1, 9, serialize), null);
    assert.equal(state.reads, 4, 'the third asks of each id come from memory, the 404 too');

    state.rows.set(1, 'uno');
    state.rows.set(9, 'nine');
    assert.equal((await answers.answer(2, 1, serialize))?.body, '{"data":"uno"}', 'a newer version reads again');
    assert.equal((await answers.answer(2, 1, serialize))?.body, '{"data":"uno"}');
    assert.equal((await answers.answer(2, 9, serialize))?.body, '{"data":"nine"}');
    // A request that read version 1 before the write landed: answered from the store, keeping nothing.
    state.rows.set(1, 'stale');
    assert.equal((await answers.answer(1, 1, serialize))?.body, '{"data":"stale"}');
    state.rows.set(1, 'uno');
    const reads = state.reads;
    assert.equal((await answers.answer(2, 1, serialize))?.body, '{"data":"uno"}', 'the older request left the newer answer alone');
    assert.equal(state.reads, reads);

    // No version read: always the store.
    await answers.answer(null, 2, serialize);
    await answers.answer(null, 2, serialize);
    assert.equal(state.reads, reads + 2);

    state.failing = true;
    await assert.rejects(answers.answer(2, 3, serialize), /unreachable/);
    state.failing = false;
    assert.equal((await answers.answer(2, 3, serialize))?.body, '{"data":"three"}', 'a failed read is not kept');
  });

  it('stays within its bound of entries and of bytes', async () => {
    const { read } = fakeStore();
    const byCount = new ItemAnswers(read, { entries: 2, bytes: 1 << 20 });
    for (const id of [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]) await byCount.answer(1, id, serialize);
    assert.equal(byCount.size, 2);
    const big = new ItemAnswers(async () => 'x'.repeat(2000), { entries: 100, bytes: 5000 });
    for (const id of [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]) await big.answer(1, id, (row) => row);
    assert.equal(big.size, 2, 'two answers of about 2 kB fit in 5 kB');
  });
});
