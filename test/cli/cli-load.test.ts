// The operator command line: load, import prices and seed --demo, run as an operator runs them (a child
// process per command, writing to an SQLite file), checked in the store and through the real app.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCOPES } from '../../src/domain/scopes.js';
import type { Store } from '../../src/store/database.js';
import { fixture } from '../helpers/fixture.js';
import {
  V1,
  assertKeyForm,
  assertRefused,
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
