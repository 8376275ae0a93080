// Signing in with a handover link, sessions, signing out, and the screen's security pipeline (form tokens,
// Origin / Sec-Fetch-Site, headers), over the real app on the suite's store.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { HANDOVER_AUDIENCE, handoverSecret } from '../../src/services/settings-auth/handover-token.js';
import { sessionHash } from '../../src/services/settings-auth/sessions.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { mintLink, SettingsClient, SITE, textOf, tokenOf } from './settings-helpers.js';

const NOWHERE = '/settings/no-such-page';

describe('settings: sign-in handover, sessions, form protection', () => {
  let ctx: TestContext;
  let alice: number;
  let bob: number;

  before(async () => {
    ctx = await createTestContext();
    alice = ctx.loaded.accounts.alice!;
    bob = ctx.loaded.accounts.bob!;
  });
  after(async () => ctx.close());
  beforeEach(() => ctx.clock.set('2027-01-15T12:00:00.000Z'));

  async function signToken(claims: Record<string, unknown>, options: { secret?: Uint8Array; alg?: string } = {}): Promise<string> {
    const secret = options.secret ?? (await handoverSecret(ctx.store, ctx.config, ctx.clock.now()));
    const iat = Math.floor(ctx.clock.now() / 1000);
    return new SignJWT({ sub: String(alice), aud: HANDOVER_AUDIENCE, iat, exp: iat + 600, jti: randomUUID(), ...claims })
      .setProtectedHeader({ alg: options.alg ?? 'HS256' })
      .sign(secret);
  }

  async function refused(token: string): Promise<void> {
    const browser = new SettingsClient(ctx);
    const res = await browser.get(`/settings/sign-in?token=${encodeURIComponent(token)}`);
    assert.equal(res.statusCode, 401, res.body);
    assert.match(textOf(res.body), /This sign-in link has expired or was already used/);
    assert.equal(res.headers['set-cookie'], undefined, 'no session cookie');
    assert.equal((await browser.get(NOWHERE)).statusCode, 401, 'and no session');
  }

  test('a valid link starts a session: 303 to the overview without the token, a Lax HttpOnly cookie on /settings', async () => {
    const token = await mintLink(ctx, alice);
    const browser = new SettingsClient(ctx);
    const res = await browser.get(`/settings/sign-in?token=${token}`);
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, '/settings/developer-api');
    const cookie = String(res.headers['set-cookie']);
    assert.match(cookie, /shelfapi_settings=[A-Za-z0-9_-]{43};/);
    assert.match(cookie, /Path=\/settings/);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Lax/);
    assert.doesNotMatch(cookie, /Secure/, 'plain http without PUBLIC_URL: no Secure');
    const value = browser.cookies.get('shelfapi_settings')!;
    // Only the hash of the cookie is stored.
    const rows = await ctx.store.db.selectFrom('settings_sessions').selectAll().execute();
    assert.ok(rows.some((r) => r.id_hash === sessionHash(value) && r.account_id === alice));
    assert.ok(!JSON.stringify(rows).includes(value), 'the cookie value is not in the store');
    // Signed in: a page under /settings answers for this account.
    const page = await browser.get(NOWHERE);
    assert.equal(page.statusCode, 404);
    assert.match(page.body, /alice@example\.com/);
    assert.ok(!ctx.logs.text().includes(token), 'the token is not logged');
    assert.ok(!ctx.logs.text().includes(value), 'the cookie is not logged');
  });

  test('a link used once is refused the second time (401, no session)', async () => {
    const token = await mintLink(ctx, alice);
    assert.equal((await new SettingsClient(ctx).get(`/settings/sign-in?token=${token}`)).statusCode, 303);
    await refused(token);
  });

  test('an expired link is refused', async () => {
    const token = await mintLink(ctx, alice, { minutes: 5 });
    ctx.clock.advance(6 * 60_000);
    await refused(token);
  });

  test('forged, wrong-audience, unknown-account, over-long, unsigned and malformed tokens are refused', async () => {
    await refused(await signToken({}, { secret: new TextEncoder().encode('another secret that is 32 bytes long!!') }));
    await refused(await signToken({ aud: 'someone-else' }));
    await refused(await signToken({ sub: '999999' }));
    await refused(await signToken({ sub: 'alice' }));
    await refused(await signToken({ exp: Math.floor(ctx.clock.now() / 1000) + 3600 }));
    await refused(await signToken({ jti: undefined }));
    const [header, payload] = (await signToken({})).split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
    await refused(none);
    await refused(`${header}.${payload}.AAAA`);
    await refused('not-a-token');
    const missing = await new SettingsClient(ctx).get('/settings/sign-in');
    assert.equal(missing.statusCode, 401);
  });

  test('PUBLIC_URL https: the cookie is Secure', async () => {
    const secure = await createTestContext({ env: { PUBLIC_URL: 'https://api.example.com' } });
    try {
      const token = await mintLink(secure, secure.loaded.accounts.alice!);
      const res = await new SettingsClient(secure).get(`/settings/sign-in?token=${token}`);
      assert.equal(res.statusCode, 303);
      assert.match(String(res.headers['set-cookie']), /Secure/);
    } finally {
      await secure.close();
    }
  });

  test('a session ends after 2 idle hours, and 12 hours after signing in however active', async () => {
    const idle = new SettingsClient(ctx);
    await idle.signIn(alice);
    ctx.clock.advance(2 * 3_600_000 - 60_000);
    assert.equal((await idle.get(NOWHERE)).statusCode, 404, 'still signed in just under 2 idle hours');
    ctx.clock.advance(2 * 3_600_000 + 60_000);
    assert.equal((await idle.get(NOWHERE)).statusCode, 401, 'signed out after 2 idle hours');

    ctx.clock.set('2027-01-15T12:00:00.000Z');
    const busy = new SettingsClient(ctx);
    await busy.signIn(alice);
    for (let hour = 1; hour < 12; hour++) {
      ctx.clock.advance(3_600_000);
      assert.equal((await busy.get(NOWHERE)).statusCode, 404, `hour ${hour}`);
    }
    ctx.clock.advance(3_600_000 + 1000);
    const late = await busy.get(NOWHERE);
    assert.equal(late.statusCode, 401);
    assert.match(textOf(late.body), /You are signed out/);
  });

  test('sign out ends the session in the store (every server) and clears the cookie', async () => {
    const browser = new SettingsClient(ctx);
    await browser.signIn(alice);
    const value = browser.cookies.get('shelfapi_settings')!;
    const copy = new SettingsClient(ctx);
    copy.cookies.set('shelfapi_settings', value);
    const token = await browser.formToken(NOWHERE);
    const res = await browser.post('/settings/sign-out', { _csrf: token });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(textOf(res.body), /You are signed out/);
    assert.match(String(res.headers['set-cookie']), /shelfapi_settings=;/);
    assert.equal(await ctx.store.db.selectFrom('settings_sessions').select('id_hash').where('id_hash', '=', sessionHash(value)).executeTakeFirst(), undefined);
    assert.equal((await copy.get(NOWHERE)).statusCode, 401, 'a copy of the cookie is refused');
    // Signing out again is no error.
    assert.equal((await copy.post('/settings/sign-out', { _csrf: token })).statusCode, 200);
  });

  test('a POST needs this site as Origin (or Sec-Fetch-Site same-origin) and the session\'s form token', async () => {
    const browser = new SettingsClient(ctx);
    await browser.signIn(alice);
    const token = await browser.formToken(NOWHERE);
    const other = new SettingsClient(ctx);
    await other.signIn(bob);
    const othersToken = await other.formToken(NOWHERE);

    const cases: Array<[string, Record<string, string>, Record<string, string>]> = [
      ['no form token', {}, { origin: SITE }],
      ['a wrong form token', { _csrf: 'x'.repeat(40) }, { origin: SITE }],
      ["another session's form token", { _csrf: othersToken }, { origin: SITE }],
      ['a foreign Origin', { _csrf: token }, { origin: 'https://evil.example' }],
      ['Origin null', { _csrf: token }, { origin: 'null' }],
      ['Origin null from another site', { _csrf: token }, { origin: 'null', 'sec-fetch-site': 'cross-site' }],
      ['a cross-site Sec-Fetch-Site', { _csrf: token }, { 'sec-fetch-site': 'cross-site' }],
      ['neither Origin nor Sec-Fetch-Site', { _csrf: token }, {}],
    ];
    for (const [what, form, headers] of cases) {
      const res = await browser.post('/settings/sign-out', form, headers);
      assert.equal(res.statusCode, 403, what);
      assert.match(textOf(res.body), /This form could not be accepted/, what);
      assert.equal((await browser.get(NOWHERE)).statusCode, 404, `${what}: still signed in, nothing changed`);
    }
    // What Chromium sends for a form on a no-referrer page of this site: Origin null, Sec-Fetch-Site same-origin.
    const sameOrigin = await browser.post('/settings/sign-out', { _csrf: token }, { origin: 'null', 'sec-fetch-site': 'same-origin' });
    assert.equal(sameOrigin.statusCode, 200, 'Sec-Fetch-Site same-origin with Origin null is accepted');
  });

  test('a POST without a session is 401 and changes nothing', async () => {
    const res = await new SettingsClient(ctx).post('/settings/developer-api/keys', { name: 'x', _csrf: 'y' });
    assert.equal(res.statusCode, 401);
  });

  test('every page: strict CSP, nosniff, no-referrer, no-store; HTML 404 under /settings, never the API\'s 401', async () => {
    const browser = new SettingsClient(ctx);
    for (const url of ['/settings/sign-in?token=bad', NOWHERE, '/settings/developer-api']) {
      const res = await browser.get(url);
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /default-src 'self'/, url);
      assert.match(csp, /script-src 'self'(;|$)/, url);
      assert.match(csp, /frame-ancestors 'none'/, url);
      assert.doesNotMatch(csp, /unsafe-inline|https?:/, url);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
      assert.equal(res.headers['referrer-policy'], 'no-referrer', url);
      assert.equal(res.headers['cache-control'], 'no-store', url);
      assert.match(String(res.headers['content-type']), /^text\/html/, url);
    }
    const missing = await browser.get(NOWHERE);
    assert.equal(missing.statusCode, 401, 'signed out: the signed-out page');
    await browser.signIn(alice);
    const found = await browser.get(NOWHERE);
    assert.equal(found.statusCode, 404);
    assert.match(textOf(found.body), /Not found/);
  });

  test('the Data API is untouched: no cookie read or set, its own headers, settings routes not in the document', async () => {
    const browser = new SettingsClient(ctx);
    await browser.signIn(alice);
    const me = await ctx.get('/developer/v1/me', 'alice', { headers: { cookie: browser.cookieHeader() } });
    assert.equal(me.statusCode, 200);
    assert.equal(me.headers['set-cookie'], undefined);
    assert.equal(me.headers['cache-control'], 'private, no-store');
    assert.equal(me.headers['content-security-policy'], undefined, 'no settings headers on the API');
    const cookieOnly = await ctx.get('/developer/v1/me', null, { headers: { cookie: browser.cookieHeader() } });
    assert.equal(cookieOnly.statusCode, 401, 'a settings session is no API credential');
    const post = await ctx.get('/developer/v1/me', 'alice', { method: 'POST' });
    assert.equal(post.statusCode, 405);
    const doc = await ctx.app.inject({ method: 'GET', url: '/developer/docs/openapi.json' });
    assert.doesNotMatch(doc.body, /\/settings/);
    assert.equal(tokenOf(`<input name="_csrf" value="abc">`), 'abc');
  });
});
