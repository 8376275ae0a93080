// The settings pages over HTTP: overview numbers, create with show-once, key details, rename, scopes, roll,
// revoke, security log; every bad input, a resubmitted form, the reauthentication window, another
// account's key, escaping of names. The real app on the suite's store (SQLite, or PostgreSQL + Redis).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { OPERATOR } from '../../src/services/actor.js';
import { MAX_LIVE_KEYS, revokeKey } from '../../src/services/keys.service.js';
import { formatCount } from '../../src/http/settings/views/format.js';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { SettingsClient, SITE, textOf, tokenOf } from './settings-helpers.js';

const OVERVIEW = '/settings/developer-api';
const NEW = '/settings/developer-api/keys/new';
const CREATE = '/settings/developer-api/keys';
const CREATED = '/settings/developer-api/keys/created';
const LOG = '/settings/developer-api/security-log';
const key = (id: number, action = '') => `/settings/developer-api/keys/${id}${action}`;

function nonceOf(html: string): string {
  const match = /name="nonce" value="([0-9a-f]{32})"/.exec(html);
  assert.ok(match, 'the form has a nonce');
  return match[1]!;
}

describe('settings pages', () => {
  let ctx: TestContext;
  let alice: number;
  let browser: SettingsClient;

  before(async () => {
    ctx = await createTestContext({ env: { PLAN_LIMITS: JSON.stringify({ enthusiast: { monthly: 1000, perMinute: 500 } }) } });
    alice = ctx.loaded.accounts.alice!;
  });
  after(async () => ctx.close());
  beforeEach(async () => {
    ctx.clock.set('2027-01-15T12:00:00.000Z');
    browser = new SettingsClient(ctx);
    await browser.signIn(alice);
  });

  async function keyCount(accountId = alice): Promise<number> {
    const rows = await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', accountId).execute();
    return rows.length;
  }

  /** Posts the create form as a browser would: token and nonce from the page. */
  async function create(fields: Record<string, string | string[]>, from = browser) {
    const page = await from.get(NEW);
    assert.equal(page.statusCode, 200, page.body);
    return from.post(CREATE, { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), ...fields });
  }

  async function createAndReveal(name: string, scopes: string[], expiry = '90d'): Promise<{ id: number; secret: string }> {
    const res = await create({ name, scopes, expiry });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, CREATED);
    const shown = await browser.get(CREATED);
    assert.equal(shown.statusCode, 200);
    assert.equal(shown.headers['cache-control'], 'no-store');
    const secret = shown.body.match(KEY_PATTERN)?.[0];
    assert.ok(secret, 'the key is shown');
    const text = textOf(shown.body);
    assert.match(text, /Copy this key now: it is shown only once/);
    assert.ok(text.includes(`curl -H "X-API-Key: ${secret}" http://localhost:80/developer/v1/me`), 'a ready curl line against /me');
    assert.match(shown.body, /<button type="button" data-copy="new-key" hidden>Copy<\/button>/);
    const id = Number(/\/settings\/developer-api\/keys\/([0-9]+)"/.exec(shown.body)?.[1]);
    return { id, secret };
  }

  const api = (secret: string, path: string) => ctx.app.inject({ method: 'GET', url: `/developer/v1${path}`, headers: { 'x-api-key': secret } });

  test('overview: access, this month as /me reports it, burst, chart, keys with status, expired and revoked apart', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await ctx.get('/developer/v1/catalogue')).statusCode, 200);
    const me = JSON.parse((await ctx.get('/developer/v1/me')).body) as { usage: { used: number; remaining: number } };
    const res = await browser.get(OVERVIEW);
    assert.equal(res.statusCode, 200);
    const text = textOf(res.body);
    assert.match(text, /Plan Enthusiast/);
    assert.match(text, /Monthly quota 1,000 requests/);
    assert.match(text, /Burst limit 500 per minute/);
    assert.match(text, new RegExp(`This month ${me.usage.used} of 1,000 requests`));
    assert.match(text, new RegExp(`${formatCount(me.usage.remaining)} remaining`));
    assert.match(text, /Resets 2027-02-01 00:00 UTC/);
    assert.match(text, /4 of 500 in the last 60 seconds/, 'three catalogue calls and /me');
    assert.match(res.body, /<svg[^>]*role="img"/);
    assert.equal(res.body.match(/<svg[^>]*role="img"/g)?.length, 1, 'one chart');
    assert.match(res.body, /<title id="usage-title">Requests per day by outcome for all keys, last 30 days \(UTC\)<\/title>/, '30 days by default');
    assert.match(text, /2027-01-15 3 0 0 0 0 0 0 0 0 3/, 'the table alternative has today\'s counts by outcome');
    for (const range of ['24h', '7d', '90d']) assert.equal((await browser.get(`${OVERVIEW}?range=${range}`)).body.match(/<svg[^>]*role="img"/g)?.length, 1, `one chart over ${range}`);
    assert.match(text, /all scopes .*Active/);
    assert.match(text, /Expired and revoked \(kept here for 90 days\)/);
    const [working, ended] = text.split('Expired and revoked');
    assert.match(ended!, /revoked .*Revoked/);
    assert.match(ended!, /expires later .*Expired/, 'a key that expired within 90 days is listed apart');
    assert.doesNotMatch(text, / expired shelf_live_/, 'the key that expired more than 90 days ago is no longer listed');
    assert.doesNotMatch(working!, /Revoked/);
    assert.doesNotMatch(text, /quota is used/, 'no warning under 80%');
  });

  test('overview: a warning from 80%, and at 100% what callers get; a banner for a key expiring within 7 days', async () => {
    const small = await createTestContext({ env: { PLAN_LIMITS: JSON.stringify({ enthusiast: { monthly: 10, perMinute: 50 } }) }, now: '2027-01-15T12:00:00.000Z' });
    try {
      const owner = new SettingsClient(small);
      await owner.signIn(small.loaded.accounts.alice!);
      for (let i = 0; i < 7; i++) await small.get('/developer/v1/catalogue');
      let text = textOf((await owner.get(OVERVIEW)).body);
      assert.doesNotMatch(text, /quota is used/, 'no warning at 70%');
      await small.get('/developer/v1/catalogue');
      text = textOf((await owner.get(OVERVIEW)).body);
      assert.match(text, /80% of the monthly quota is used. At 100%, requests are answered 429 quota_exceeded until the reset/);
      for (let i = 0; i < 2; i++) await small.get('/developer/v1/catalogue');
      text = textOf((await owner.get(OVERVIEW)).body);
      assert.match(text, /quota is used up: every request that counts is answered 429 quota_exceeded until the reset/);
      small.clock.set('2026-12-28T12:00:00.000Z');
      await owner.signIn(small.loaded.accounts.alice!);
      text = textOf((await owner.get(OVERVIEW)).body);
      assert.match(text, /A key expires within 7 days: roll it .* expires later expires 2027-01-01 00:00 UTC \(in 4 days\) Hide until tomorrow/);
    } finally {
      await small.close();
    }
  });

  test('create: 303 to the key shown once with Copy and a curl line; reload never shows it again; the key works', async () => {
    const { id, secret } = await createAndReveal('price sync', ['catalogue:read', 'prices:read']);
    assert.match(textOf((await browser.get(key(id))).body), /price sync/);
    const again = await browser.get(CREATED);
    assert.equal(again.statusCode, 200);
    assert.match(textOf(again.body), /This key is no longer shown/);
    assert.equal(again.body.match(KEY_PATTERN), null);
    assert.equal((await api(secret, '/catalogue')).statusCode, 200);
    assert.equal((await api(secret, '/collection')).statusCode, 403);
    const record = await ctx.store.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(record.scopes, 'catalogue:read prices:read');
    assert.equal(record.expires_at, '2027-04-15T12:00:00.000Z', '90 days by default');
    assert.equal(await ctx.store.db.selectFrom('settings_reveals').select('key_id').executeTakeFirst(), undefined, 'the slot is empty');
  });

  test('the new key is never stored in the clear: its slot is sealed with the session cookie', async () => {
    const page = await browser.get(NEW);
    const res = await browser.post(CREATE, { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), name: 'sealed', scopes: 'export', expiry: '7d' });
    assert.equal(res.statusCode, 303);
    const slot = await ctx.store.db.selectFrom('settings_reveals').selectAll().executeTakeFirstOrThrow();
    assert.equal(slot.secret.match(KEY_PATTERN), null);
    const thief = new SettingsClient(ctx);
    await thief.signIn(alice);
    assert.match(textOf((await thief.get(CREATED)).body), /no longer shown/, 'another session cannot take it');
    assert.match((await browser.get(CREATED)).body, KEY_PATTERN);
  });

  test('a resubmitted create form never creates a second key', async () => {
    const page = await browser.get(NEW);
    const form = { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), name: 'once', scopes: ['export'], expiry: '30d' };
    const before = await keyCount();
    assert.equal((await browser.post(CREATE, form)).statusCode, 303);
    const again = await browser.post(CREATE, form);
    assert.equal(again.statusCode, 303);
    assert.equal(again.headers.location, `${OVERVIEW}?done=already_submitted`);
    assert.equal(await keyCount(), before + 1);
    assert.match(textOf((await browser.get(String(again.headers.location))).body), /already submitted; nothing more was created/);
  });

  test('create: each bad input gets the form back (422) with the message at its field, nothing created', async () => {
    const cases: Array<[string, Record<string, string | string[]>, string, RegExp]> = [
      ['empty name', { name: '   ', scopes: 'export', expiry: '90d' }, 'name-error', /Give the key a name/],
      ['long name', { name: 'x'.repeat(65), scopes: 'export', expiry: '90d' }, 'name-error', /at most 64 characters/],
      ['taken name', { name: 'all scopes', scopes: 'export', expiry: '90d' }, 'name-error', /already named/],
      ['no scope', { name: 'n1', expiry: '90d' }, 'scope-error', /at least one scope/],
      ['unknown scope', { name: 'n2', scopes: ['export', 'admin:write'], expiry: '90d' }, 'scope-error', /unknown scope admin:write/],
      ['unknown expiry', { name: 'n3', scopes: 'export', expiry: '2d' }, 'expiry-error', /Expiry must be one of/],
    ];
    const before = await keyCount();
    for (const [what, fields, errorId, message] of cases) {
      const res = await create(fields);
      assert.equal(res.statusCode, 422, what);
      const error = new RegExp(`id="${errorId}">([^<]*)<`).exec(res.body);
      assert.ok(error, `${what}: a message at the field`);
      assert.match(error[1]!.replace(/&quot;/g, '"'), message, what);
      if (typeof fields.name === 'string' && fields.name.trim() !== '') assert.match(res.body, new RegExp(`value="${fields.name}"`), `${what}: the name is kept`);
    }
    assert.equal(await keyCount(), before);
    const badNonce = await browser.post(CREATE, { _csrf: await browser.formToken(NEW), name: 'x', scopes: 'export', expiry: '90d' });
    assert.equal(badNonce.statusCode, 400);
  });

  test('create: every bad field is refused at once, each message at its field, nothing created', async () => {
    const before = await keyCount();
    const res = await create({ name: '   ', expiry: 'someday' });
    assert.equal(res.statusCode, 422);
    assert.match(res.body, /id="name-error">Give the key a name/);
    assert.match(res.body, /id="scope-error">Choose at least one scope/);
    assert.match(res.body, /id="expiry-error">Expiry must be one of/);
    const taken = await create({ name: 'all scopes', scopes: ['export', 'admin:write'], expiry: '90d' });
    assert.equal(taken.statusCode, 422);
    assert.match(taken.body, /id="name-error">A live key is already named/);
    assert.match(taken.body, /id="scope-error">unknown scope admin:write/);
    assert.equal(await keyCount(), before);
  });

  test('at most 20 live keys; a lapsed account can view and revoke but not create', async () => {
    const ctx2 = await createTestContext();
    try {
      const owner = new SettingsClient(ctx2);
      const aliceId = ctx2.loaded.accounts.alice!;
      await owner.signIn(aliceId);
      const live = 4; // all scopes, second key, no scopes, expires later
      for (let i = live; i < MAX_LIVE_KEYS; i++) {
        const page = await owner.get(NEW);
        const res = await owner.post(CREATE, { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), name: `k${i}`, scopes: 'export', expiry: '7d' });
        assert.equal(res.statusCode, 303, `key ${i + 1}`);
        assert.notEqual((await owner.get(CREATED)).body.match(KEY_PATTERN), null, 'shown, as the redirect does in a browser');
      }
      const page = await owner.get(NEW);
      const refused = await owner.post(CREATE, { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), name: 'one too many', scopes: 'export', expiry: '7d' });
      assert.equal(refused.statusCode, 422);
      assert.match(textOf(refused.body), /at most 20 live keys/);

      const carol = new SettingsClient(ctx2);
      await carol.signIn(ctx2.loaded.accounts.carol!);
      const overview = textOf((await carol.get(OVERVIEW)).body);
      assert.match(overview, /Lapsed/);
      assert.match(overview, /every key answers 403 forbidden until the plan is renewed/);
      const form = await carol.get(NEW);
      assert.match(textOf(form.body), /access has lapsed/);
      assert.doesNotMatch(form.body, /name="nonce"/, 'no create form');
      const carolKey = (await ctx2.store.db.selectFrom('api_keys').select('id').where('account_id', '=', ctx2.loaded.accounts.carol!).executeTakeFirstOrThrow()).id;
      const token = await carol.formToken(key(carolKey, '/revoke'));
      assert.equal((await carol.post(key(carolKey, '/revoke'), { _csrf: token })).statusCode, 303, 'a lapsed account can revoke');
    } finally {
      await ctx2.close();
    }
  });

  test('create, roll, revoke and scope changes need a sign-in within 60 minutes; rename does not', async () => {
    const { id } = await createAndReveal('reauth', ['export']);
    const token = await browser.formToken(key(id));
    const newForm = await browser.get(NEW);
    ctx.clock.advance(61 * 60_000);
    const before = await keyCount();
    const attempts: Array<[string, Record<string, string>]> = [
      [CREATE, { name: 'late', scopes: 'export', expiry: '7d', nonce: nonceOf(newForm.body) }],
      [key(id, '/roll'), { stopOld: 'now', nonce: 'a'.repeat(32) }],
      [key(id, '/revoke'), {}],
      [key(id, '/scopes'), { scopes: 'catalogue:read' }],
    ];
    for (const [url, form] of attempts) {
      const res = await browser.post(url, { _csrf: token, ...form });
      assert.equal(res.statusCode, 403, url);
      assert.match(textOf(res.body), /Sign in again to make this change.*within the last 60 minutes.*Nothing was changed/, url);
    }
    assert.equal((await browser.get(NEW)).statusCode, 403);
    assert.equal(await keyCount(), before);
    const record = await ctx.store.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(record.scopes, 'export');
    assert.equal(record.revoked_at, null);
    assert.equal((await browser.post(key(id, '/name'), { _csrf: token, name: 'renamed late' })).statusCode, 303, 'rename still works');
    await browser.signIn(alice);
    assert.equal((await browser.get(NEW)).statusCode, 200, 'signing in again opens the window');
  });

  test("another account's key id, or no key at all: 404 on every page and action, nothing changed", async () => {
    const bobKey = (await ctx.store.db.selectFrom('api_keys').selectAll().where('account_id', '=', ctx.loaded.accounts.bob!).executeTakeFirstOrThrow());
    const token = await browser.formToken();
    for (const id of [bobKey.id, 999_999]) {
      for (const url of [key(id), key(id, '/roll'), key(id, '/revoke')]) assert.equal((await browser.get(url)).statusCode, 404, url);
      const posts: Array<[string, Record<string, string>]> = [
        [key(id, '/name'), { name: 'mine now' }],
        [key(id, '/scopes'), { scopes: 'export' }],
        [key(id, '/roll'), { stopOld: 'now', nonce: 'b'.repeat(32) }],
        [key(id, '/revoke'), {}],
      ];
      for (const [url, form] of posts) {
        const res = await browser.post(url, { _csrf: token, ...form });
        assert.equal(res.statusCode, 404, url);
        assert.match(textOf(res.body), /no such key in your account/);
      }
    }
    for (const bad of ['abc', '0', '1e3', '-1', '99999999999999999999']) assert.equal((await browser.get(key(Number.NaN).replace('NaN', bad))).statusCode, 404, bad);
    const after = await ctx.store.db.selectFrom('api_keys').selectAll().where('id', '=', bobKey.id).executeTakeFirstOrThrow();
    assert.deepEqual(after, bobKey);
  });

  test('names are escaped wherever they are shown', async () => {
    const name = '<img src=x onerror=alert(1)>';
    const { id } = await createAndReveal(name, ['export']);
    for (const url of [OVERVIEW, key(id), key(id, '/roll'), key(id, '/revoke'), LOG]) {
      const res = await browser.get(url);
      assert.equal(res.statusCode, 200, url);
      assert.ok(!res.body.includes(name), `${url}: the name is not markup`);
      assert.ok(res.body.includes('&lt;img src=x onerror=alert(1)>'), `${url}: it shows as text`);
    }
  });

  test('rename and scope changes apply on the next request; bad input gets the page back at the field', async () => {
    const { id, secret } = await createAndReveal('changeable', ['catalogue:read', 'prices:read']);
    const token = await browser.formToken(key(id));
    const renamed = await browser.post(key(id, '/name'), { _csrf: token, name: '  nightly  ' });
    assert.equal(renamed.headers.location, `${key(id)}?done=renamed`);
    assert.match(textOf((await browser.get(String(renamed.headers.location))).body), /The key was renamed\. .*nightly/);
    const empty = await browser.post(key(id, '/name'), { _csrf: token, name: '' });
    assert.equal(empty.statusCode, 422);
    assert.match(empty.body, /id="name-error">Give the key a name/);
    assert.equal((await api(secret, '/prices')).statusCode, 200);
    const scoped = await browser.post(key(id, '/scopes'), { _csrf: token, scopes: 'catalogue:read' });
    assert.equal(scoped.statusCode, 303);
    const refused = await api(secret, '/prices');
    assert.equal(refused.statusCode, 403);
    assert.equal(JSON.parse(refused.body).error, 'insufficient_scope');
    const none = await browser.post(key(id, '/scopes'), { _csrf: token });
    assert.equal(none.statusCode, 422);
    assert.match(none.body, /id="scope-error">Choose at least one scope/);
  });

  test('key details: outcomes per day, last use and address, the rejected requests in the log', async () => {
    const { id, secret } = await createAndReveal('debug me', ['catalogue:read']);
    await api(secret, '/catalogue');
    await api(secret, '/collection?x=secret-query');
    await api(secret, '/catalogue?limit=nope');
    await ctx.stats.flush();
    const page = await browser.get(key(id));
    const text = textOf(page.body);
    assert.match(text, /3 requests last 30 days, per day/);
    assert.match(text, /Last used 2027-01-15 12:00 UTC \(just now\) from 127\.0\.0\.1/);
    assert.equal(page.body.match(/<svg[^>]*role="img"/g)?.length, 1, 'one chart');
    assert.equal(page.body.match(/<table/g)?.length, 3, 'the chart\'s numbers, by endpoint, the request log: no second log');
    const rejected = textOf((await browser.get(key(id, '?outcome=rejected'))).body);
    assert.match(rejected, /GET \/developer\/v1\/collection\?x=secret-query 403 insufficient_scope/);
    assert.match(rejected, /GET \/developer\/v1\/catalogue\?limit=nope 400 bad_request/);
    assert.doesNotMatch(rejected, /GET \/developer\/v1\/catalogue 200/, 'rejected only');
    assert.match(page.body, /Insufficient scope \(403\)/);
  });

  test('roll with a one-hour overlap: both keys work, then the old one answers 401; its page shows it retiring', async () => {
    const { id, secret: oldSecret } = await createAndReveal('rolling', ['catalogue:read'], '30d');
    const form = await browser.get(key(id, '/roll'));
    assert.equal(form.statusCode, 200);
    const res = await browser.post(key(id, '/roll'), { _csrf: tokenOf(form.body), nonce: nonceOf(form.body), stopOld: '1h' });
    assert.equal(res.statusCode, 303);
    const shown = await browser.get(CREATED);
    const newSecret = shown.body.match(KEY_PATTERN)?.[0];
    assert.ok(newSecret);
    assert.match(textOf(shown.body), /Key rolled.*keeps working until 2027-01-15 13:00 UTC/);
    assert.equal((await api(oldSecret, '/catalogue')).statusCode, 200);
    assert.equal((await api(newSecret, '/catalogue')).statusCode, 200);
    assert.match(textOf((await browser.get(key(id))).body), /Retiring stops 2027-01-15 13:00 UTC/);
    const resubmit = await browser.post(key(id, '/roll'), { _csrf: tokenOf(form.body), nonce: nonceOf(form.body), stopOld: '1h' });
    assert.equal(resubmit.headers.location, `${OVERVIEW}?done=already_submitted`);
    ctx.clock.advance(3_600_000 + 1000);
    assert.equal((await api(oldSecret, '/catalogue')).statusCode, 401);
    assert.equal((await api(newSecret, '/catalogue')).statusCode, 200);
    await browser.signIn(alice);
    const newId = Number(/keys\/([0-9]+)"/.exec(shown.body)?.[1]);
    const noStop = await browser.get(key(newId, '/roll'));
    const bad = await browser.post(key(newId, '/roll'), { _csrf: tokenOf(noStop.body), nonce: nonceOf(noStop.body) });
    assert.equal(bad.statusCode, 422);
    assert.match(bad.body, /id="stop-error">/);
  });

  test('revoke: confirmation names the key and its last use; 401 on the next request; again: a message', async () => {
    const { id, secret } = await createAndReveal('to revoke', ['catalogue:read']);
    await api(secret, '/catalogue');
    const confirm = await browser.get(key(id, '/revoke'));
    assert.match(textOf(confirm.body), /Revoke key to revoke\?.*Last used 2027-01-15 12:00 UTC/);
    const res = await browser.post(key(id, '/revoke'), { _csrf: tokenOf(confirm.body) });
    assert.equal(res.headers.location, `${key(id)}?done=revoked`);
    assert.equal((await api(secret, '/catalogue')).statusCode, 401);
    await ctx.stats.flush();
    // Today's row of the outcomes table: counted, 304, 400, 403, 429, 429, 5xx, after revoke or expiry, refused address, total.
    const row = /<th scope="row">2027-01-15<\/th>((?:<td>[0-9,]+<\/td>)+)<\/tr>/.exec((await browser.get(key(id))).body)?.[1];
    assert.deepEqual(row?.match(/[0-9,]+/g), ['1', '0', '0', '0', '0', '0', '0', '1', '0', '2'], 'the attempt after the revoke is counted apart');
    const again = await browser.post(key(id, '/revoke'), { _csrf: tokenOf(confirm.body) });
    assert.equal(again.statusCode, 422);
    assert.match(textOf(again.body), /Key "to revoke" was already revoked at [^;]+; nothing changed/);
  });

  test('security log: sign-in, create, rename, an operator\'s revoke; newest first, paged', async () => {
    const fresh = await createTestContext();
    try {
      const owner = new SettingsClient(fresh);
      const id = fresh.loaded.accounts.bob!;
      await owner.signIn(id);
      const page = await owner.get(NEW);
      await owner.post(CREATE, { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), name: 'logged', scopes: 'export', expiry: '7d' });
      const log = await owner.get(LOG);
      assert.equal(log.statusCode, 200);
      const text = textOf(log.body);
      assert.ok(text.indexOf('Key created') < text.indexOf('Signed in'), 'newest first');
      assert.match(text, /Key created scopes export.*logged.*You, on this screen 127\.0\.0\.1/);
      const keyId = (await fresh.store.db.selectFrom('api_keys').select('id').where('name', '=', 'logged').executeTakeFirstOrThrow()).id;
      for (let i = 0; i < 30; i++) {
        await owner.post(key(keyId, '/name'), { _csrf: tokenOf(log.body), name: i % 2 === 0 ? 'logged again' : 'logged' });
      }
      await revokeKey(fresh.store, { keyId, now: fresh.clock.now(), keyPrefix: fresh.config.keyPrefix, actor: OPERATOR });
      const first = textOf((await owner.get(LOG)).body);
      assert.match(first, /Page 1 of 2/);
      assert.match(first, /^.*?Key revoked\s+logged\S* shelf_live_…\w{4} An operator \(command line\)/, 'the operator\'s revoke first');
      const second = await owner.get(`${LOG}?page=2`);
      assert.match(textOf(second.body), /Signed in.*Page 2 of 2/);
      assert.equal((await owner.get(`${LOG}?page=3`)).statusCode, 404);
      assert.equal((await owner.get(`${LOG}?page=x`)).statusCode, 404);
    } finally {
      await fresh.close();
    }
  });

  test('a form posted from another site changes nothing', async () => {
    const page = await browser.get(NEW);
    const before = await keyCount();
    const res = await browser.post(
      CREATE,
      { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), name: 'csrf', scopes: 'export', expiry: '7d' },
      { origin: 'https://evil.example' },
    );
    assert.equal(res.statusCode, 403);
    assert.equal(await keyCount(), before);
    assert.equal(SITE, 'http://localhost:80');
  });

  test('roll form: it names the key\'s real last use, as key details and revoke do', async () => {
    const { id, secret } = await createAndReveal('used before roll', ['catalogue:read']);
    assert.match(textOf((await browser.get(key(id, '/roll'))).body), /Last used: never\./, 'not used yet');
    ctx.clock.advance(5 * 60_000);
    assert.equal((await api(secret, '/catalogue')).statusCode, 200);
    ctx.clock.advance(3 * 60_000);
    for (const url of [key(id), key(id, '/revoke')]) assert.match(textOf((await browser.get(url)).body), /Last used 2027-01-15 12:05 UTC/, url);
    const form = await browser.get(key(id, '/roll'));
    assert.match(textOf(form.body), /Last used: 3 minutes ago ?\./);
    assert.match(form.body, /<time datetime="2027-01-15T12:05:00.000Z"/);
    // A refused roll shows the form again with the same last use.
    const bad = await browser.post(key(id, '/roll'), { _csrf: tokenOf(form.body), nonce: nonceOf(form.body) });
    assert.equal(bad.statusCode, 422);
    assert.match(textOf(bad.body), /Last used: 3 minutes ago ?\./);
  });

  test('a revoked key says when it was revoked, not when it would have expired', async () => {
    const { id } = await createAndReveal('revoked early', ['export'], '30d');
    ctx.clock.advance(10 * 60_000);
    const confirm = await browser.get(key(id, '/revoke'));
    assert.equal((await browser.post(key(id, '/revoke'), { _csrf: tokenOf(confirm.body) })).statusCode, 303);
    ctx.clock.advance(2 * 3_600_000);
    const ended = (await browser.get(OVERVIEW)).body.split('Expired and revoked')[1]!;
    const item = textOf(ended.split('<li class="key">').find((li) => li.includes('revoked early')) ?? '');
    assert.match(item, /Revoked 2 hours ago/);
    assert.doesNotMatch(item, /Expires/);
    const details = await browser.get(key(id));
    const text = textOf(details.body);
    assert.match(text, /Revoked 2027-01-15 12:10 UTC \(2 hours ago\)/);
    assert.doesNotMatch(text, /Expires|\(in [0-9]+ days\)/);
  });

  test('a 30-day key reads "in 30 days" right after it is made, on the overview and its page', async () => {
    const { id } = await createAndReveal('thirty days', ['export'], '30d');
    ctx.clock.advance(1500);
    assert.match(textOf((await browser.get(key(id))).body), /Expires 2027-02-14 12:00 UTC \(in 30 days\)/);
    const item = textOf((await browser.get(OVERVIEW)).body.split('<li class="key">').find((li) => li.includes('thirty days')) ?? '');
    assert.match(item, /Expires in 30 days/);
  });
});
