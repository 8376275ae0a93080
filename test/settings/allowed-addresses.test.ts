// Allowed addresses on the settings screen: set at create, changed on key details (a plain form), every bad
// input giving the form back with nothing saved, another account's key 404, forged forms 403, the lock-out
// warning before a list that leaves out the owner's own address, the security log, and the refusals shown
// among the key's rejections. The real app on the suite's store (SQLite, or PostgreSQL + Redis).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { SettingsClient, nonceOf, textOf, tokenOf } from './settings-helpers.js';
import { NEW, CREATE, CREATED, LOG, key } from './pages-helpers.js';

describe('allowed addresses on the settings screen', () => {
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

  const stored = async (id: number) =>
    (await ctx.store.db.selectFrom('api_keys').select('allowed_addresses').where('id', '=', id).executeTakeFirstOrThrow()).allowed_addresses;
  const api = (secret: string, remoteAddress = '127.0.0.1') =>
    ctx.app.inject({ method: 'GET', url: '/developer/v1/me', headers: { 'x-api-key': secret }, remoteAddress });

  /** Creates a key through the form (any address unless told) and reads it off the page that shows it once. */
  async function createKey(name: string, fields: Record<string, string> = {}): Promise<{ id: number; secret: string }> {
    const page = await browser.get(NEW);
    const res = await browser.post(CREATE, { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), name, scopes: 'catalogue:read', expiry: '30d', ...fields });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, CREATED);
    const shown = await browser.get(CREATED);
    const secret = /shelf_live_[A-Za-z0-9_]+/.exec(shown.body)?.[0];
    assert.ok(secret, 'the key is shown');
    const row = await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', alice).where('name', '=', name).executeTakeFirstOrThrow();
    return { id: row.id, secret };
  }

  test('key details: the list is changed by a plain form, applies on the next request, and goes to the security log', async () => {
    const { id, secret } = await createKey('limited later');
    const page = await browser.get(key(id));
    assert.match(textOf(page.body), /Allowed addresses Any address/);
    assert.match(textOf(page.body), /You are connecting from 127\.0\.0\.1 ?\./);
    const token = tokenOf(page.body);
    const saved = await browser.post(key(id, '/addresses'), { _csrf: token, addresses: '127.0.0.1\n10.1.2.3/8, 2001:DB8::/32' });
    assert.equal(saved.statusCode, 303, saved.body);
    assert.equal(saved.headers.location, `${key(id)}?done=addresses`);
    assert.equal(await stored(id), '127.0.0.1 10.0.0.0/8 2001:db8::/32');
    const shown = textOf((await browser.get(String(saved.headers.location))).body);
    assert.match(shown, /The allowed addresses were changed/);
    assert.match(shown, /Allowed addresses 127\.0\.0\.1 10\.0\.0\.0\/8 2001:db8::\/32/);
    assert.equal((await api(secret)).statusCode, 200);
    const refused = await api(secret, '192.0.2.1');
    assert.equal(refused.statusCode, 401);
    assert.equal(JSON.parse(refused.body).message, 'This key may not be used from 192.0.2.1.');
    // Emptied: any address again.
    assert.equal((await browser.post(key(id, '/addresses'), { _csrf: token, addresses: '  ' })).statusCode, 303);
    assert.equal(await stored(id), null);
    assert.equal((await api(secret, '192.0.2.1')).statusCode, 200);
    const log = textOf((await browser.get(`${LOG}?kind=key_addresses_changed&key=${id}`)).body);
    assert.match(log, /Allowed addresses changed allowed addresses from 127\.0\.0\.1, 10\.0\.0\.0\/8, 2001:db8::\/32 to any address/);
    assert.match(log, /Allowed addresses changed allowed addresses from any address to 127\.0\.0\.1, 10\.0\.0\.0\/8, 2001:db8::\/32/);
    assert.match(log, /You, on this screen 127\.0\.0\.1/);
  });

  test('a malformed entry or 51 entries: the form back (422) with the error at the field, nothing saved', async () => {
    const { id } = await createKey('bad input');
    const token = await browser.formToken(key(id));
    const malformed = await browser.post(key(id, '/addresses'), { _csrf: token, addresses: '127.0.0.1, 10.0.0.300' });
    assert.equal(malformed.statusCode, 422);
    assert.match(malformed.body, /id="addresses-error">&quot;10\.0\.0\.300&quot; is not an IP address or a CIDR range/);
    assert.match(malformed.body, /aria-invalid="true"[^>]*>127\.0\.0\.1, 10\.0\.0\.300<\/textarea>|<textarea[^>]*aria-invalid="true"[^>]*>127\.0\.0\.1, 10\.0\.0\.300/, 'what was typed comes back');
    const many = Array.from({ length: 51 }, (_, i) => `127.0.${i}.1`).join('\n');
    const tooMany = await browser.post(key(id, '/addresses'), { _csrf: token, addresses: many });
    assert.equal(tooMany.statusCode, 422);
    assert.match(tooMany.body, /id="addresses-error">A key allows at most 50 addresses or ranges \(got 51\)/);
    assert.equal(await stored(id), null);
    const escaped = await browser.post(key(id, '/addresses'), { _csrf: token, addresses: '<script>alert(1)</script>' });
    assert.equal(escaped.statusCode, 422);
    assert.ok(!escaped.body.includes('<script>alert(1)</script>'), 'what was typed is text, not markup');
  });

  test('a list that leaves out the owner\'s own address comes back with a warning; "Save anyway" saves it', async () => {
    const { id, secret } = await createKey('lock-out');
    const token = await browser.formToken(key(id));
    const warned = await browser.post(key(id, '/addresses'), { _csrf: token, addresses: '203.0.113.7' });
    assert.equal(warned.statusCode, 200);
    const text = textOf(warned.body);
    assert.match(text, /Your current address, 127\.0\.0\.1, is not in this list: requests with this key from here .* will be refused with 401/);
    assert.match(warned.body, /<button type="submit" name="lockout" value="accept"[^>]*>\s*Save anyway/);
    assert.match(warned.body, />203\.0\.113\.7<\/textarea>/);
    assert.equal(await stored(id), null, 'nothing saved yet');
    assert.equal((await api(secret)).statusCode, 200);
    const confirmed = await browser.post(key(id, '/addresses'), { _csrf: tokenOf(warned.body), addresses: '203.0.113.7', lockout: 'accept' });
    assert.equal(confirmed.statusCode, 303);
    assert.equal(await stored(id), '203.0.113.7');
    assert.equal((await api(secret)).statusCode, 401);
    // A list that holds the owner's address needs no confirmation.
    assert.equal((await browser.post(key(id, '/addresses'), { _csrf: token, addresses: '203.0.113.7, 127.0.0.0/8' })).statusCode, 303);
  });

  test('set at create; a lock-out list asks "Create anyway" first with the same form, and makes one key', async () => {
    const { id, secret } = await createKey('made limited', { addresses: '127.0.0.1, 192.0.2.0/24' });
    assert.equal(await stored(id), '127.0.0.1 192.0.2.0/24');
    assert.equal((await api(secret, '192.0.2.9')).statusCode, 200);
    assert.equal((await api(secret, '198.51.100.1')).statusCode, 401);
    const log = textOf((await browser.get(`${LOG}?kind=key_created&key=${id}`)).body);
    assert.match(log, /allowed addresses 127\.0\.0\.1, 192\.0\.2\.0\/24/);

    const page = await browser.get(NEW);
    const form = { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), name: 'elsewhere only', scopes: 'catalogue:read', expiry: '30d', addresses: '198.51.100.0/24' };
    const warned = await browser.post(CREATE, form);
    assert.equal(warned.statusCode, 200);
    assert.match(textOf(warned.body), /Your current address, 127\.0\.0\.1, is not in this list/);
    assert.equal(nonceOf(warned.body), form.nonce, 'the same form, posted again, makes the key');
    assert.equal(await ctx.store.db.selectFrom('api_keys').select('id').where('name', '=', 'elsewhere only').executeTakeFirst(), undefined);
    const created = await browser.post(CREATE, { ...form, lockout: 'accept' });
    assert.equal(created.statusCode, 303, created.body);
    const rows = await ctx.store.db.selectFrom('api_keys').select('allowed_addresses').where('name', '=', 'elsewhere only').execute();
    assert.deepEqual(rows, [{ allowed_addresses: '198.51.100.0/24' }]);

    const bad = await browser.get(NEW);
    const refused = await browser.post(CREATE, { _csrf: tokenOf(bad.body), nonce: nonceOf(bad.body), name: 'bad list', scopes: 'catalogue:read', expiry: '30d', addresses: 'nope' });
    assert.equal(refused.statusCode, 422);
    assert.match(refused.body, /id="addresses-error">&quot;nope&quot; is not an IP address or a CIDR range/);
    assert.equal(await ctx.store.db.selectFrom('api_keys').select('id').where('name', '=', 'bad list').executeTakeFirst(), undefined);
  });

  test("another account's key: 404 and nothing changed; a forged form: 403 and nothing changed", async () => {
    const bobKey = await ctx.store.db.selectFrom('api_keys').selectAll().where('account_id', '=', ctx.loaded.accounts.bob!).executeTakeFirstOrThrow();
    const token = await browser.formToken();
    for (const addresses of ['127.0.0.1', '203.0.113.7']) {
      const res = await browser.post(key(bobKey.id, '/addresses'), { _csrf: token, addresses });
      assert.equal(res.statusCode, 404, addresses);
      assert.match(textOf(res.body), /no such key in your account/);
    }
    assert.equal(await stored(bobKey.id), null);

    const { id } = await createKey('forged');
    const forgedToken = await browser.post(key(id, '/addresses'), { _csrf: 'forged-token', addresses: '127.0.0.1' });
    assert.equal(forgedToken.statusCode, 403);
    const noToken = await browser.post(key(id, '/addresses'), { addresses: '127.0.0.1' });
    assert.equal(noToken.statusCode, 403);
    const otherSite = await browser.post(key(id, '/addresses'), { _csrf: await browser.formToken(key(id)), addresses: '127.0.0.1' }, { origin: 'https://evil.example' });
    assert.equal(otherSite.statusCode, 403);
    assert.equal(await stored(id), null);
  });

  test('changing the list needs a recent sign-in', async () => {
    const { id } = await createKey('reauth');
    const token = await browser.formToken(key(id));
    ctx.clock.advance(61 * 60_000);
    const res = await browser.post(key(id, '/addresses'), { _csrf: token, addresses: '127.0.0.1' });
    assert.equal(res.statusCode, 403);
    assert.match(textOf(res.body), /Sign in again to make this change/);
    assert.equal(await stored(id), null);
  });

  test('refused requests show on key details as "Refused address (401)" and among the rejections with the address', async () => {
    const { id, secret } = await createKey('refusals', { addresses: '127.0.0.1' });
    assert.equal((await api(secret, '192.0.2.44')).statusCode, 401);
    await ctx.stats.flush();
    const text = textOf((await browser.get(key(id))).body);
    assert.match(text, /Refused address \(401\)/);
    assert.match(text, /GET \/developer\/v1\/me 401 unauthorized /);
    const rejected = textOf((await browser.get(key(id, '?outcome=rejected'))).body);
    assert.match(rejected, /GET \/developer\/v1\/me 401 unauthorized This key may not be used from 192\.0\.2\.44\./, 'the rejected ones, with what the client was told');
  });
});
