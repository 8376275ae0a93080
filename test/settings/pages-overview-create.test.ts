// The settings pages over HTTP, the overview and creating a key: overview numbers, quota warnings and the expiry
// banner; create with show-once, every bad input, a resubmitted form, the 20 live keys, a lapsed account, a form
// from another site. The real app on the suite's store (SQLite, or PostgreSQL + Redis). A key's own pages and
// actions are in pages-key-actions.test.ts.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { MAX_LIVE_KEYS } from '../../src/services/keys.service.js';
import { formatCount } from '../../src/http/settings/views/format.js';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { nonceOf, SettingsClient, SITE, textOf, tokenOf } from './settings-helpers.js';
import { CREATE, CREATED, key, NEW, OVERVIEW, pageSteps } from './pages-helpers.js';

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
  const { keyCount, create, createAndReveal, api } = pageSteps(() => ({ ctx, alice, browser }));

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
});
