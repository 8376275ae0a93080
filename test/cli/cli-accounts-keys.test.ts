// The operator command line: accounts and keys, run as an operator runs them (a child process per command,
// writing to an SQLite file). What the CLI writes is checked in the store, and the keys it prints are tried
// against the real app built over the same file.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/database.js';
import {
  V1,
  apiOver,
  assertKeyForm,
  assertRefused,
  mistype,
  parseJsonOutput,
  runCli,
  tableCounts,
  type ApiClient,
  cliWorkspace,
  isRecord,
  keyHash as hash,
} from '../helpers/cli-helpers.js';

const { tmp, open, closeAfter } = cliWorkspace();

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
    const expiresAt = new Date(Date.now() + 300 * 86_400_000).toISOString().slice(0, 19) + 'Z';
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
    const acme = closeAfter(await apiOver(store, { KEY_PREFIX: 'acme' }));
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

  it('keys create: 90 days unless asked; --expires-at never warns as the screen does; a plain date is the end of that day UTC; a bad or far date writes nothing', async () => {
    const expiresOf = async (id: unknown) => (await store.db.selectFrom('api_keys').select('expires_at').where('id', '=', id as number).executeTakeFirstOrThrow()).expires_at;
    // An account of its own: the tests below count ann's keys.
    const account = parseJsonOutput(await runCli(['accounts', 'create', '--email', 'expiry@example.com', '--plan', 'enthusiast', '--json'], env)) as { id: number };
    const started = Date.now();
    const date = new Date(started + 200 * 86_400_000).toISOString().slice(0, 10);
    const [byDefault, never, dated, neverText] = await Promise.all([
      runCli(['keys', 'create', '--account', String(account.id), '--scopes', 'export', '--name', 'default expiry', '--json'], env),
      runCli(['keys', 'create', '--account', String(account.id), '--scopes', 'export', '--name', 'forever', '--expires-at', 'never', '--json'], env),
      runCli(['keys', 'create', '--account', String(account.id), '--scopes', 'export', '--name', 'dated', '--expires-at', date, '--json'], env),
      runCli(['keys', 'create', '--account', String(account.id), '--scopes', 'export', '--name', 'forever too', '--expires-at', 'never'], env),
    ]);
    const finished = Date.now();
    const defaultOut = parseJsonOutput(byDefault) as { id: number };
    const expires = Date.parse(String(await expiresOf(defaultOut.id)));
    assert.ok(expires >= started + 90 * 86_400_000 && expires <= finished + 90 * 86_400_000, 'made for 90 days');
    assert.equal(byDefault.stderr, '');

    assert.equal(never.code, 0, never.stderr);
    const neverOut = JSON.parse(never.stdout) as { id: number };
    assert.equal(await expiresOf(neverOut.id), null);
    assert.match(never.stderr, /^shelfapi: warning: this key never expires\. "Never" is convenient but risky: a key that leaks keeps working until someone revokes it\.\n$/);
    assert.equal(neverText.code, 0, neverText.stderr);
    assert.match(neverText.stdout, /never expires/);
    assert.match(neverText.stderr, /warning: this key never expires/);

    assert.equal(await expiresOf((parseJsonOutput(dated) as { id: number }).id), `${date}T23:59:59.999Z`);

    const before = await tableCounts(store);
    const [past, malformed, noDay, farAway] = await Promise.all([
      runCli(['keys', 'create', '--account', String(account.id), '--scopes', 'export', '--expires-at', '2020-01-31', '--json'], env),
      runCli(['keys', 'create', '--account', String(account.id), '--scopes', 'export', '--expires-at', '2099-02-30', '--json'], env),
      runCli(['keys', 'create', '--account', String(account.id), '--scopes', 'export', '--expires-at', 'someday', '--json'], env),
      runCli(['keys', 'create', '--account', String(account.id), '--scopes', 'export', '--expires-at', '2099-01-31', '--json'], env),
    ]);
    assertRefused(past, /expiry must be in the future/);
    assertRefused(malformed, /Expiry must be one of 7d, 30d, 90d, 1y, never, a date \(2027-01-31: the end of that day, UTC\)/);
    assertRefused(noDay, /Expiry must be one of/);
    assertRefused(farAway, /The expiry must be at most a year away: [0-9]{4}-[0-9]{2}-[0-9]{2} at the latest/);
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
