// The settings pages over HTTP, a key's own pages and actions: key details, rename, scopes, roll, revoke, the
// security log; the reauthentication window, another account's key, escaping of names, last use and expiry as
// shown. The real app on the suite's store (SQLite, or PostgreSQL + Redis). The overview and creating a key are
// in pages-overview-create.test.ts.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { OPERATOR } from '../../src/services/actor.js';
import { revokeKey } from '../../src/services/keys.service.js';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { nonceOf, SettingsClient, textOf, tokenOf } from './settings-helpers.js';
import { CREATE, CREATED, key, LOG, NEW, OVERVIEW, pageSteps } from './pages-helpers.js';

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

  // Read when a step runs: each test has a browser of its own (beforeEach).
  const { keyCount, createAndReveal, api } = pageSteps(() => ({ ctx, alice, browser }));

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
