// The operator command line `shelfapi` (docs/contract.md, "Operator command line"), run as an operator runs it: a child process
// per command, configured by the environment, writing to an SQLite file. What the CLI writes is checked in
// the store, and the keys it prints are tried against the real app built over the same file.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { migrationNames } from '../../src/store/database.js';
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCOPES } from '../../src/domain/scopes.js';
import type { Store } from '../../src/store/database.js';
import { fixture } from '../helpers/fixture.js';
import {
  V1,
  apiOver,
  assertKeyForm,
  assertRefused,
  mistype,
  openSqliteStore,
  parseJsonOutput,
  runCli,
  runClis,
  tableCounts,
  tempDir,
  type ApiClient,
  type CliResult,
} from '../helpers/cli-helpers.js';

const tmp = tempDir();
const stores: Store[] = [];
const apis: ApiClient[] = [];
after(async () => {
  for (const api of apis) await api.close();
  for (const store of stores) await store.close();
  tmp.cleanup();
});

async function open(path: string, env: Record<string, string> = {}): Promise<{ store: Store; api: ApiClient }> {
  const store = await openSqliteStore(path);
  stores.push(store);
  const api = await apiOver(store, env);
  apis.push(api);
  return { store, api };
}

const hash = (key: string): string => createHash('sha256').update(key).digest('hex');

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

describe('--help on every command and subcommand', () => {
  const db = tmp.db('help');
  const commands: Array<{ path: string[]; json: boolean }> = [
    { path: [], json: false },
    { path: ['serve'], json: false },
    { path: ['migrate'], json: true },
    { path: ['seed'], json: true },
    { path: ['load'], json: true },
    { path: ['accounts'], json: false },
    { path: ['accounts', 'create'], json: true },
    { path: ['accounts', 'set-plan'], json: true },
    { path: ['accounts', 'log'], json: true },
    { path: ['keys'], json: false },
    { path: ['keys', 'create'], json: true },
    { path: ['keys', 'list'], json: true },
    { path: ['keys', 'revoke'], json: true },
    { path: ['keys', 'roll'], json: true },
    { path: ['keys', 'rename'], json: true },
    { path: ['keys', 'set-scopes'], json: true },
    { path: ['keys', 'usage'], json: true },
    { path: ['import'], json: false },
    { path: ['import', 'prices'], json: true },
    { path: ['meter'], json: false },
    { path: ['meter', 'upgrade-keys'], json: true },
    { path: ['openapi'], json: false },
  ];
  const results = new Map<string, CliResult>();

  before(async () => {
    // Independent processes: run them side by side.
    const all = await runClis(commands.map((c) => ({ args: [...c.path, '--help'], env: { DATABASE_URL: db } })));
    commands.forEach((c, i) => results.set(c.path.join(' '), all[i]!));
  });

  for (const command of commands) {
    const name = ['shelfapi', ...command.path].join(' ');
    it(`${name} --help exits 0 and prints its usage on stdout`, () => {
      const result = results.get(command.path.join(' '))!;
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stderr, '');
      assert.ok(result.stdout.startsWith(`Usage: ${name} `), result.stdout);
      assert.match(result.stdout, /-h, --help/);
      if (command.json) assert.match(result.stdout, /--json/, `${name} documents --json`);
    });
  }

  it('--help touches no store', () => {
    assert.equal(existsSync(db), false);
  });
});

describe('meter upgrade-keys', () => {
  it('without REDIS_URL: refused, saying only a single Redis holds the old key names', async () => {
    const result = await runCli(['meter', 'upgrade-keys'], { DATABASE_URL: tmp.db('upgrade-keys') });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr, 'shelfapi: REDIS_URL is not set: only a single Redis can hold counts under the old key names\n');
  });
});

describe('migrate', () => {
  const db = tmp.db('migrate');

  it('on a new store applies the migrations and says which (--json)', async () => {
    const out = parseJsonOutput(await runCli(['migrate', '--json'], { DATABASE_URL: db }));
    assert.deepEqual(out, { applied: migrationNames('sqlite') });
    assert.equal(migrationNames('sqlite')[0], '0001-initial');
  });

  it('again: nothing to apply, exit 0 (file: form of DATABASE_URL)', async () => {
    const result = await runCli(['migrate'], { DATABASE_URL: `file:${db}` });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.match(result.stdout, /up to date/);
  });
});

describe('accounts and keys', () => {
  const db = tmp.db('main');
  const env = { DATABASE_URL: db };
  let store: Store;
  let api: ApiClient;
  let ann: number;
  let ben: number;
  let annKey: { id: number; key: string };

  before(async () => {
    ({ store, api } = await open(db));
  });

  it('accounts create --json prints exactly {"id": N}; the plan status defaults to active', async () => {
    const out = parseJsonOutput(await runCli(['accounts', 'create', '--email', 'ann@example.com', '--plan', 'enthusiast', '--json'], env));
    assert.ok(isRecord(out));
    assert.deepEqual(Object.keys(out), ['id']);
    assert.ok(Number.isSafeInteger(out.id) && (out.id as number) >= 1);
    ann = out.id as number;
    const row = await store.db.selectFrom('accounts').selectAll().where('id', '=', ann).executeTakeFirstOrThrow();
    assert.equal(row.email, 'ann@example.com');
    assert.equal(row.plan, 'enthusiast');
    assert.equal(row.plan_status, 'active');
  });

  it('accounts create --plan-status lapsed (text output)', async () => {
    const result = await runCli(['accounts', 'create', '--email', 'ben@example.com', '--plan', 'addon', '--plan-status', 'lapsed'], env);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    const row = await store.db.selectFrom('accounts').selectAll().where('email', '=', 'ben@example.com').executeTakeFirstOrThrow();
    ben = row.id;
    assert.equal(row.plan, 'addon');
    assert.equal(row.plan_status, 'lapsed');
    assert.match(result.stdout, new RegExp(`\\b${ben}\\b`), 'the text output names the new id');
  });

  it('refuses a bad plan, a bad email, a duplicate email, a plan status with plan none: one line, nothing written', async () => {
    const before = await tableCounts(store);
    const [badPlan, badEmail, duplicate, noneWithStatus, otherCase] = await Promise.all([
      runCli(['accounts', 'create', '--email', 'cy@example.com', '--plan', 'gold', '--json'], env),
      runCli(['accounts', 'create', '--email', 'not-an-email', '--plan', 'addon', '--json'], env),
      runCli(['accounts', 'create', '--email', 'ann@example.com', '--plan', 'addon', '--json'], env),
      runCli(['accounts', 'create', '--email', 'cy@example.com', '--plan', 'none', '--plan-status', 'active'], env),
      runCli(['accounts', 'create', '--email', 'ANN@Example.com', '--plan', 'addon', '--json'], env),
    ]);
    assertRefused(badPlan, /plan/);
    assertRefused(badEmail, /email/);
    assertRefused(duplicate, /ann@example\.com/);
    assertRefused(noneWithStatus, /plan-status/);
    assertRefused(otherCase, /ANN@Example\.com already exists/);
    for (const r of [badPlan, badEmail, duplicate, noneWithStatus, otherCase]) assert.equal(r.code, 1, 'a refused action exits 1');
    assert.deepEqual(await tableCounts(store), before);
  });

  it('keys create --json prints exactly {id, key}; the key has the contract form and checksum, only its hash is stored', async () => {
    const expiresAt = new Date(Date.now() + 400 * 86_400_000).toISOString().slice(0, 19) + 'Z';
    const out = parseJsonOutput(
      await runCli(
        ['keys', 'create', '--account', String(ann), '--scopes', 'catalogue:read,prices:read', '--name', 'ci', '--expires-at', expiresAt, '--json'],
        env,
      ),
    );
    assert.ok(isRecord(out));
    assert.deepEqual(Object.keys(out).sort(), ['id', 'key']);
    assert.ok(Number.isSafeInteger(out.id));
    assert.equal(typeof out.key, 'string');
    annKey = { id: out.id as number, key: out.key as string };
    assertKeyForm(annKey.key, 'shelf');

    const row = await store.db.selectFrom('api_keys').selectAll().where('id', '=', annKey.id).executeTakeFirstOrThrow();
    assert.equal(row.account_id, ann);
    assert.equal(row.name, 'ci');
    assert.equal(row.key_hash, hash(annKey.key));
    assert.equal(row.last_four, annKey.key.slice(-4));
    assert.equal(row.expires_at, new Date(expiresAt).toISOString(), 'stored in canonical form');
    assert.ok(!Object.values(row).includes(annKey.key), 'the key itself is never stored');
  });

  it('the new key works against the API with exactly its scopes; a mistyped one does not', async () => {
    const me = await api.get(`${V1}/me`, annKey.key);
    assert.equal(me.statusCode, 200, me.body);
    const body = me.json<{ plan: string; scopes: string[] }>();
    assert.equal(body.plan, 'enthusiast');
    assert.deepEqual(body.scopes, ['catalogue:read', 'prices:read']);
    assert.equal((await api.get(`${V1}/catalogue`, annKey.key)).statusCode, 200);
    const noScope = await api.get(`${V1}/collection`, annKey.key);
    assert.equal(noScope.statusCode, 403);
    assert.equal(noScope.json<{ error: string }>().error, 'insufficient_scope');
    assert.equal((await api.get(`${V1}/me`, mistype(annKey.key))).statusCode, 401);
  });

  it('KEY_PREFIX sets the prefix of a new key; an app with that prefix accepts it, one without refuses it', async () => {
    const out = parseJsonOutput(await runCli(['keys', 'create', '--account', String(ann), '--scopes', 'export', '--json'], { ...env, KEY_PREFIX: 'acme' }));
    assert.ok(isRecord(out) && typeof out.key === 'string');
    const key = out.key;
    assertKeyForm(key, 'acme');
    const acme = await apiOver(store, { KEY_PREFIX: 'acme' });
    apis.push(acme);
    const me = await acme.get(`${V1}/me`, key);
    assert.equal(me.statusCode, 200, me.body);
    assert.deepEqual(me.json<{ scopes: string[] }>().scopes, ['export']);
    assert.equal((await api.get(`${V1}/me`, key)).statusCode, 401, 'the default-prefix app refuses an acme key');
  });

  it('keys create refuses an unknown scope, no scope, a past expiry, a missing account, a missing --scopes: one line, nothing written', async () => {
    const before = await tableCounts(store);
    const [unknownScope, emptyScopes, pastExpiry, noAccount, noScopes] = await Promise.all([
      runCli(['keys', 'create', '--account', String(ann), '--scopes', 'catalogue:read,catalogue:write', '--json'], env),
      runCli(['keys', 'create', '--account', String(ann), '--scopes', '', '--json'], env),
      runCli(['keys', 'create', '--account', String(ann), '--scopes', 'export', '--expires-at', '2020-01-01T00:00:00Z', '--json'], env),
      runCli(['keys', 'create', '--account', '999', '--scopes', 'export', '--json'], env),
      runCli(['keys', 'create', '--account', String(ann), '--json'], env),
    ]);
    assertRefused(unknownScope, /catalogue:write/);
    assertRefused(emptyScopes, /at least one scope/);
    assertRefused(pastExpiry, /expiry must be in the future/);
    assertRefused(noAccount, /account 999/);
    assertRefused(noScopes, /--scopes/);
    assert.deepEqual(await tableCounts(store), before);
  });

  it('accounts set-plan takes effect on the next request; a lapsed account cannot get a new key; a missing account is refused', async () => {
    assertRefused(await runCli(['keys', 'create', '--account', String(ben), '--scopes', 'catalogue:read', '--json'], env), /not active on account/);
    parseJsonOutput(await runCli(['accounts', 'set-plan', String(ben), '--plan', 'addon', '--json'], env));
    const created = parseJsonOutput(await runCli(['keys', 'create', '--account', String(ben), '--scopes', 'catalogue:read', '--json'], env));
    assert.ok(isRecord(created) && typeof created.key === 'string');
    const benKey = created.key;
    assert.deepEqual(
      parseJsonOutput(await runCli(['accounts', 'set-plan', String(ben), '--plan', 'addon', '--plan-status', 'lapsed', '--json'], env)),
      { id: ben, plan: 'addon', planStatus: 'lapsed' },
    );
    const lapsed = await api.get(`${V1}/me`, benKey);
    assert.equal(lapsed.statusCode, 403);
    assert.equal(lapsed.json<{ error: string }>().error, 'forbidden');

    const out = parseJsonOutput(await runCli(['accounts', 'set-plan', String(ben), '--plan', 'enthusiast', '--json'], env));
    assert.deepEqual(out, { id: ben, plan: 'enthusiast', planStatus: 'active' });
    const me = await api.get(`${V1}/me`, benKey);
    assert.equal(me.statusCode, 200, me.body);
    assert.equal(me.json<{ plan: string }>().plan, 'enthusiast');

    const before = await tableCounts(store);
    assertRefused(await runCli(['accounts', 'set-plan', '999', '--plan', 'addon'], env), /account 999 does not exist/);
    assert.deepEqual(await tableCounts(store), before);
  });

  it('keys list: a table with the last four characters, and a JSON array, never the key or its hash', async () => {
    const [text, json] = await Promise.all([
      runCli(['keys', 'list', '--account', String(ann)], env),
      runCli(['keys', 'list', '--account', String(ann), '--json'], env),
    ]);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stderr, '');
    assert.match(text.stdout, /^id\s+name\s+key\s/);
    assert.ok(text.stdout.includes(annKey.key.slice(-4)));

    const list = parseJsonOutput(json);
    assert.ok(Array.isArray(list));
    assert.equal(list.length, 2, 'ann has the ci key and the acme key');
    const ci = list.find((k: unknown) => isRecord(k) && k.id === annKey.id) as Record<string, unknown> | undefined;
    assert.ok(ci);
    assert.equal(ci.lastFour, annKey.key.slice(-4));
    assert.equal(ci.name, 'ci');
    assert.deepEqual(ci.scopes, ['catalogue:read', 'prices:read']);
    for (const output of [text.stdout, json.stdout]) {
      assert.ok(!output.includes(annKey.key), 'never the key');
      assert.ok(!output.includes(annKey.key.slice(0, -4)), 'nor most of it');
      assert.ok(!output.includes(hash(annKey.key)), 'never the hash');
      assert.doesNotMatch(output, /hash/i);
    }
  });

  it('keys usage --json: 30 UTC days, newest first, with the metered requests and their total', async () => {
    // The key made one metered request above (/catalogue); /me and the 403 are never counted. One more:
    assert.equal((await api.get(`${V1}/prices`, annKey.key)).statusCode, 200);
    const out = parseJsonOutput(await runCli(['keys', 'usage', String(annKey.id), '--json'], env));
    assert.ok(isRecord(out));
    assert.deepEqual(Object.keys(out).sort(), ['days', 'key', 'total']);
    assert.ok(Array.isArray(out.days));
    const days = out.days as Array<{ day: string; requests: number }>;
    assert.equal(days.length, 30);
    for (let i = 0; i < days.length; i++) {
      assert.match(days[i]!.day, /^\d{4}-\d{2}-\d{2}$/);
      assert.ok(Number.isInteger(days[i]!.requests));
      if (i > 0) assert.equal(Date.parse(days[i - 1]!.day) - Date.parse(days[i]!.day), 86_400_000, 'consecutive days, newest first');
    }
    assert.equal(out.total, 2);
    assert.equal(days.reduce((sum, d) => sum + d.requests, 0), 2);
    assert.ok(isRecord(out.key));
    assert.equal(out.key.id, annKey.id);
    assert.equal(out.key.lastFour, annKey.key.slice(-4));
    assert.equal(typeof out.key.lastUsedAt, 'string');
    assert.ok(!JSON.stringify(out).includes(hash(annKey.key)));
  });

  it('keys revoke: the key is refused (401) from the very next request; a missing key is refused', async () => {
    assert.equal((await api.get(`${V1}/me`, annKey.key)).statusCode, 200);
    const result = await runCli(['keys', 'revoke', String(annKey.id)], env);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.match(result.stdout, /revoked/);
    const next = await api.get(`${V1}/me`, annKey.key);
    assert.equal(next.statusCode, 401);
    assert.equal(next.json<{ error: string }>().error, 'unauthorized');
    const row = await store.db.selectFrom('api_keys').select('revoked_at').where('id', '=', annKey.id).executeTakeFirstOrThrow();
    assert.ok(row.revoked_at !== null);

    assertRefused(await runCli(['keys', 'revoke', '999'], env), /key 999 does not exist/);
  });

  it('keys revoke of a revoked key says so, changes nothing, and keeps the first revocation time', async () => {
    const { revoked_at: first } = await store.db.selectFrom('api_keys').select('revoked_at').where('id', '=', annKey.id).executeTakeFirstOrThrow();
    const again = await runCli(['keys', 'revoke', String(annKey.id)], env);
    assertRefused(again, new RegExp(`was already revoked at ${first}; nothing changed`));
    const { revoked_at: after } = await store.db.selectFrom('api_keys').select('revoked_at').where('id', '=', annKey.id).executeTakeFirstOrThrow();
    assert.equal(after, first);
  });

  it('keys create refuses a name over 64 characters or empty once trimmed, writing nothing', async () => {
    const before = await tableCounts(store);
    const [long, blank] = await Promise.all([
      runCli(['keys', 'create', '--account', String(ann), '--scopes', 'catalogue:read', '--name', 'k'.repeat(100_000)], env),
      runCli(['keys', 'create', '--account', String(ann), '--scopes', 'catalogue:read', '--name', '   '], env),
    ]);
    assertRefused(long, /at most 64 characters \(got 100000\)/);
    assertRefused(blank, /Give the key a name/);
    assert.deepEqual(await tableCounts(store), before);
  });
});

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
    const store = await openSqliteStore(db);
    stores.push(store);
    const before = await tableCounts(store);
    assertRefused(await runCli(['seed', '--demo', '--items', '200', '--json'], env), /already holds data/);
    assert.deepEqual(await tableCounts(store), before);
  });
});

describe('openapi', () => {
  it('prints the OpenAPI 3.1 document as one JSON document', async () => {
    const out = parseJsonOutput(await runCli(['openapi'], { DATABASE_URL: tmp.db('openapi') }));
    assert.ok(isRecord(out));
    assert.match(String(out.openapi), /^3\.1\.\d+$/);
    assert.ok(isRecord(out.paths));
    const paths = Object.keys(out.paths);
    for (const p of ['/me', '/catalogue', '/prices/export.csv', '/transactions']) {
      assert.ok(paths.some((path) => path.endsWith(p)), `documents ${p}: ${paths.join(', ')}`);
    }
    assert.equal(existsSync(tmp.db('openapi')), false, 'openapi needs no store');
  });
});

describe('usage errors', () => {
  const db = tmp.db('errors');
  const env = { DATABASE_URL: db };

  it('an unknown command, an unknown option, an extra argument: non-zero exit, one line on stderr', async () => {
    const [command, option, extra] = await Promise.all([
      runCli(['frobnicate'], env),
      runCli(['accounts', 'create', '--email', 'x@example.com', '--plan', 'addon', '--colour', 'red'], env),
      runCli(['migrate', 'now'], env),
    ]);
    assertRefused(command, /unknown command 'frobnicate'/);
    assertRefused(option, /unknown option '--colour'/);
    assertRefused(extra, /too many arguments/);
    for (const r of [command, option, extra]) assert.equal(r.code, 2, 'a usage error exits 2');
    assert.equal(existsSync(db), false, 'nothing was written');
  });

  it('a command group without its subcommand is a usage error: non-zero exit, usage on stderr, nothing on stdout', async () => {
    const result = await runCli(['keys'], env);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /Usage: shelfapi keys /);
  });

  it('a bad PLAN_LIMITS is refused before anything is written, naming the variable', async () => {
    const result = await runCli(['accounts', 'create', '--email', 'x@example.com', '--plan', 'addon'], { ...env, PLAN_LIMITS: '{"gold":{"monthly":5}}' });
    assertRefused(result, /^shelfapi: PLAN_LIMITS: /);
    assert.equal(existsSync(db), false, 'nothing was written');
  });
});
