// The operator command line: load, import prices and seed --demo, run as an operator runs them (a child
// process per command, writing to an SQLite file, or to TEST_STORE's store for the refusals and dry runs),
// checked in the store and through the real app.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCOPES } from '../../src/domain/scopes.js';
import type { Store } from '../../src/store/database.js';
import { fixture } from '../helpers/fixture.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import {
  V1,
  assertKeyForm,
  assertRefused,
  assertRefusedRows,
  openSqliteStore,
  parseJsonOutput,
  runCli,
  tableCounts,
  type ApiClient,
  cliWorkspace,
  isRecord,
} from '../helpers/cli-helpers.js';

const { tmp, open, closeAfter } = cliWorkspace();

describe('load and import prices', () => {
  const db = tmp.db('load');
  // The keys a load makes take KEY_PREFIX too.
  const env = { DATABASE_URL: db, KEY_PREFIX: 'shop2' };
  let store: Store;
  let api: ApiClient;
  let keys: Record<string, string>;

  before(async () => {
    ({ store, api } = await open(db, { KEY_PREFIX: 'shop2' }));
  });

  it('load FILE.json --json prints exactly {accounts: {ref: id}, keys: {ref: key}}, and the keys work', async () => {
    const file = join(tmp.dir, 'fixture.json');
    writeFileSync(file, JSON.stringify(fixture()));
    const out = parseJsonOutput(await runCli(['load', file, '--json'], env));
    assert.ok(isRecord(out));
    assert.deepEqual(Object.keys(out).sort(), ['accounts', 'keys']);
    assert.deepEqual(out.accounts, { alice: 1, bob: 2, carol: 3, dave: 4 });
    assert.ok(isRecord(out.keys));
    keys = out.keys as Record<string, string>;
    assert.deepEqual(Object.keys(keys).sort(), fixture().keys!.map((k) => k.ref).sort());
    for (const key of Object.values(keys)) assertKeyForm(key, 'shop2');

    const collection = await api.get(`${V1}/collection`, keys.alice!);
    assert.equal(collection.statusCode, 200, collection.body);
    assert.equal(collection.json<{ pagination: { total: number } }>().pagination.total, 5);
    assert.equal((await api.get(`${V1}/me`, keys['alice-revoked']!)).statusCode, 401);
    assert.equal((await api.get(`${V1}/me`, keys['alice-expired']!)).statusCode, 401);
    assert.equal((await api.get(`${V1}/me`, keys.carol!)).statusCode, 403);
    assert.equal((await api.get(`${V1}/me`, keys.dave!)).statusCode, 403);
  });

  it('import prices FILE.csv upserts the rows; a newer scrapeDate becomes the current price', async () => {
    const file = join(tmp.dir, 'prices.csv');
    writeFileSync(
      file,
      'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate\r\n' +
        '2,"Pokémon Snap, the game",pokemon-snap-2,Nintendo 64,game,045496870027,17.5,,95,,,2026-11-19T00:00:00.000Z\r\n' +
        '8,"100% Complete, ""Deluxe"" Edition_x",x-8,PlayStation,game,711719000089,6,8,,,,2026-11-01T00:00:00.000Z\r\n',
    );
    const before = await tableCounts(store);
    const out = parseJsonOutput(await runCli(['import', 'prices', file, '--json'], env));
    assert.deepEqual(out, { rows: 2, items: 2 });
    const after = await tableCounts(store);
    assert.equal(after.price_records, before.price_records! + 2);
    const price = await api.get(`${V1}/prices/2`, keys.alice!);
    assert.equal(price.statusCode, 200, price.body);
    assert.deepEqual(price.json<{ data: Record<string, unknown> }>().data, {
      masterItemId: 2, name: 'Pokémon Snap', slug: 'pok-mon-snap-2', platform: 'Nintendo 64', category: 'game',
      upc: '045496870027', loose: 17.5, cib: null, new: 95, boxOnly: null, manualOnly: null, scrapeDate: '2026-11-19T00:00:00.000Z',
    });
    // Item 8's record of 2026-11-01 is older than its 2026-11-12 one: kept, but not current.
    const eight = await api.get(`${V1}/prices/8`, keys.alice!);
    assert.equal(eight.json<{ data: { scrapeDate: string; loose: number } }>().data.scrapeDate, '2026-11-12T00:00:00.000Z');
  });
});

describe('seed --demo', () => {
  const db = tmp.db('seed');
  const env = { DATABASE_URL: db };

  it('seed --demo --items 200 --json prints the demo key once; it works on every endpoint with every scope', async () => {
    const out = parseJsonOutput(await runCli(['seed', '--demo', '--items', '200', '--json'], env));
    assert.ok(isRecord(out) && isRecord(out.keys));
    const key = out.keys.demo;
    assert.equal(typeof key, 'string');
    assertKeyForm(key as string, 'shelf');
    assert.ok(isRecord(out.counts));
    assert.equal(out.counts.catalogue, 200);

    const { api } = await open(db);
    const me = await api.get(`${V1}/me`, key as string);
    assert.equal(me.statusCode, 200, me.body);
    assert.deepEqual([...me.json<{ scopes: string[] }>().scopes].sort(), [...SCOPES].sort());
    for (const path of ['/catalogue', '/prices', '/prices/export.csv', '/collection', '/collection/value', '/listings', '/offers', '/transactions']) {
      const response = await api.get(`${V1}${path}`, key as string);
      assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
    }
    const catalogue = await api.get(`${V1}/catalogue?limit=1`, key as string);
    assert.ok(catalogue.json<{ pagination: { total: number } }>().pagination.total > 0);
  });

  it('refuses to seed a store that holds data: one line, nothing written', async () => {
    const store = closeAfter(await openSqliteStore(db));
    const before = await tableCounts(store);
    assertRefused(await runCli(['seed', '--demo', '--items', '200', '--json'], env), /already holds data/);
    assert.deepEqual(await tableCounts(store), before);
  });
});

describe('load and import prices: every bad line, and --dry-run (TEST_STORE)', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext();
  });
  after(async () => {
    await ctx.close();
  });
  const env = () => ({ DATABASE_URL: ctx.databaseUrl });
  const version = async () => (await ctx.store.db.selectFrom('data_version').select('version').executeTakeFirstOrThrow()).version;
  const HEADER = 'masterItemId,name,slug,platform,category,upc,loose,cib,new,boxOnly,manualOnly,scrapeDate\r\n';
  /** What a dry run must leave as it was: every table's rows, the data version, the ETag of an item and of its price. */
  const state = async () => ({
    counts: await tableCounts(ctx.store),
    version: await version(),
    etags: [(await ctx.get(`${V1}/catalogue/1`)).headers.etag, (await ctx.get(`${V1}/prices/1`)).headers.etag],
  });

  it('load --dry-run --json of a good file: the counts, and nothing written (rows, data version, ETags)', async () => {
    const file = join(tmp.dir, 'good-load.json');
    writeFileSync(
      file,
      JSON.stringify({
        accounts: [{ ref: 'eve', email: 'eve@example.com', plan: 'addon' }],
        keys: [{ ref: 'eve-key', account: 'eve', name: 'ci', scopes: ['catalogue:read'] }],
        catalogue: [{ masterItemId: 101, name: 'NiGHTS', slug: 'nights', category: 'game', platform: 'Sega Saturn', status: 'PUBLISHED' }],
        prices: [{ masterItemId: 1, upc: '045496870010', loose: 1, scrapeDate: '2026-11-20T00:00:00.000Z' }],
      }),
    );
    const before = await state();
    const out = parseJsonOutput(await runCli(['load', file, '--dry-run', '--json'], env()));
    assert.deepEqual(out, { dryRun: true, counts: { accounts: 1, keys: 1, catalogue: 1, prices: 1, collection: 0, listings: 0, offers: 0, transactions: 0 } });
    assert.deepEqual(await state(), before);
  });

  it('load of a file with three bad rows: a line for each, with the value refused; nothing written', async () => {
    const file = join(tmp.dir, 'bad-load.json');
    writeFileSync(
      file,
      JSON.stringify({
        accounts: [{ ref: 'eve', email: 'eve', plan: 'addon' }, { ref: 'zoe', email: 'zoe@example.com', plan: 'addon' }],
        prices: [
          { masterItemId: 1, upc: '045496870010', loose: 1, scrapeDate: '2026-11-20T00:00:00.000Z' },
          { masterItemId: 424242, upc: '045496870010', loose: 1, scrapeDate: '2026-11-20T00:00:00.000Z' },
        ],
        collection: [{ id: 1, account: 'zoe', masterItemId: 1, condition: 'CIB', status: 'OWNED', purchasePrice: 1, acquiredAt: '2024-01-01T00:00:00.000Z', location: 'x', isFavorite: false }],
      }),
    );
    const before = await state();
    // (A dry run of a bad file reports the same: test/store/load-dataset-refusals.test.ts, in process.)
    const lines = assertRefusedRows(await runCli(['load', file], env()), 3);
    assert.equal(lines.length, 3);
    assert.match(lines[0]!, /^accounts row 1: .*"eve"/);
    assert.equal(lines[1], 'prices row 2: masterItemId 424242 is not in the catalogue');
    assert.equal(lines[2], 'collection row 1: id 1 already exists in the store');
    assert.deepEqual(await state(), before);
  });

  it('import prices --dry-run of a good file says what it would write; the bad lines of a bad file as JSON; nothing written', async () => {
    const good = join(tmp.dir, 'good.csv');
    writeFileSync(good, HEADER + '1,n,s,p,c,045496870010,99,99,99,,,2026-11-15T00:00:00.000Z\r\n2,n,s,p,c,045496870027,1,,,,,2026-11-21T00:00:00.000Z\r\n');
    const bad = join(tmp.dir, 'bad.csv');
    writeFileSync(bad, HEADER + '1,n,s,p,c,045496870010,abc,,,,,2026-11-15T00:00:00.000Z\r\n999999,n,s,p,c,045496870010,1,,,,,2026-11-15T00:00:00.000Z\r\n2,n,s,p,c,12,1,,,,,2026-11-15T00:00:00.000Z\r\n');
    const before = await state();
    const [human, refused] = await Promise.all([
      runCli(['import', 'prices', good, '--dry-run'], env()),
      runCli(['import', 'prices', bad, '--json'], env()),
    ]);
    assert.equal(human.code, 0, human.stderr);
    assert.equal(human.stdout, 'Dry run: would insert or update 2 price records for 2 items; nothing written.\n');
    assert.equal(refused.code, 1);
    assert.equal(refused.stderr, 'shelfapi: 3 bad lines; nothing written (listed on standard output)\n');
    assert.deepEqual(JSON.parse(refused.stdout), {
      errors: [
        { line: 2, column: 'loose', value: 'abc', message: 'loose must be a number >= 0 or empty, got "abc"' },
        { line: 3, column: 'masterItemId', value: '999999', message: 'masterItemId "999999" is not in the catalogue' },
        { line: 4, column: 'upc', value: '12', message: 'upc must be 6 to 14 ASCII digits, got "12"' },
      ],
      more: 0,
    });
    assert.deepEqual(await state(), before);
  });
});
