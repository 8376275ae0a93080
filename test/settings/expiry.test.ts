// Expiry on the settings screen (issue 19, item 5): a date of the owner's choice at create and roll (the end
// of that day UTC, as `keys create --expires-at` reads it, today to a year away), and the overview's banner
// naming the keys that expire within 7 days, hidden per key until the next UTC day. The real app on the
// suite's store (SQLite, or PostgreSQL + Redis).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { expiresAtFor } from '../../src/services/key-expiry.js';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { nonceOf, SettingsClient, SITE, textOf, tokenOf } from './settings-helpers.js';
import { OVERVIEW, NEW, CREATE, CREATED, key } from './pages-helpers.js';

const hide = (id: number) => key(id, '/hide-expiry-reminder');
const NOW = '2027-01-15T12:00:00.000Z';

describe('settings: expiry', () => {
  let ctx: TestContext;
  let alice: number;
  let browser: SettingsClient;

  before(async () => {
    ctx = await createTestContext({ now: NOW });
    alice = ctx.loaded.accounts.alice!;
  });
  after(async () => ctx.close());
  beforeEach(async () => {
    ctx.clock.set(NOW);
    browser = new SettingsClient(ctx);
    await browser.signIn(alice);
  });

  async function keyCount(): Promise<number> {
    return (await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', alice).execute()).length;
  }
  async function keyRow(id: number) {
    return ctx.store.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  }
  async function dismissals(): Promise<number> {
    return (await ctx.store.db.selectFrom('expiry_reminder_dismissals').select('key_id').execute()).length;
  }

  async function create(fields: Record<string, string | string[]>) {
    const page = await browser.get(NEW);
    assert.equal(page.statusCode, 200, page.body);
    return browser.post(CREATE, { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), scopes: 'export', ...fields });
  }

  /** Creates a key through the form and collects it from the page that shows it once. */
  async function made(fields: Record<string, string>): Promise<{ id: number; shown: string }> {
    const res = await create(fields);
    assert.equal(res.statusCode, 303, res.body);
    const shown = await browser.get(CREATED);
    assert.notEqual(shown.body.match(KEY_PATTERN), null, 'the key is shown');
    return { id: Number(/\/settings\/developer-api\/keys\/([0-9]+)"/.exec(shown.body)?.[1]), shown: textOf(shown.body) };
  }

  /** The error at the expiry fieldset of a page, as text. */
  const expiryError = (html: string) => textOf(/id="expiry-error">([^<]*)</.exec(html)?.[1] ?? '');

  test('the create form offers 7, 30, 90 days, 1 year, a date (today to a year on) and never, 90 days checked', async () => {
    const page = await browser.get(NEW);
    const text = textOf(page.body);
    assert.match(text, /Expires After 7 days After 30 days After 90 days After 1 year On a date of your choice Date .*today \(2027-01-15\) to 2028-01-15\. Never \(not recommended\)/);
    assert.match(text, /"Never" is convenient but risky/);
    assert.match(page.body, /<input type="radio" id="expiry-90d" name="expiry" value="90d" checked/);
    assert.match(page.body, /<input type="date" id="expiry-date" name="expiryDate" value min="2027-01-15" max="2028-01-15"/);
    assert.match(page.body, /<label for="expiry-date-choice">On a date of your choice<\/label>/);
  });

  test('a date of the owner\'s choice is the end of that day UTC, as the command line reads it; the details page shows it', async () => {
    const { id, shown } = await made({ name: 'until january', expiry: 'date', expiryDate: '2027-01-31' });
    const row = await keyRow(id);
    assert.equal(row.expires_at, '2027-01-31T23:59:59.999Z');
    assert.equal(row.expires_at, expiresAtFor('2027-01-31', ctx.clock.now()), 'the rule of keys create --expires-at');
    assert.match(shown, /Expires 2027-01-31 23:59 UTC \(in 17 days\)/);
    const details = await browser.get(key(id));
    assert.match(textOf(details.body), /Expires 2027-01-31 23:59 UTC \(in 17 days\)/);
    assert.match(details.body, /<time datetime="2027-01-31T23:59:59.999Z"/);
    // Today and the same date a year on are the ends of the range.
    assert.equal((await keyRow((await made({ name: 'today only', expiry: 'date', expiryDate: '2027-01-15' })).id)).expires_at, '2027-01-15T23:59:59.999Z');
    assert.equal((await keyRow((await made({ name: 'a year', expiry: 'date', expiryDate: '2028-01-15' })).id)).expires_at, '2028-01-15T23:59:59.999Z');
    // The checked choice decides: a date typed beside "30 days" is not read.
    assert.equal((await keyRow((await made({ name: 'thirty', expiry: '30d', expiryDate: '2027-01-20' })).id)).expires_at, '2027-02-14T12:00:00.000Z');
  });

  test('a date in the past, more than a year away, malformed or missing: the form back with the message, nothing made', async () => {
    const before = await keyCount();
    const cases: Array<[string, RegExp]> = [
      ['2027-01-14', /The expiry must be in the future/],
      ['2020-06-01', /The expiry must be in the future/],
      ['2028-01-16', /at most a year away: 2028-01-15 at the latest/],
      ['2099-01-31', /at most a year away/],
      ['31/01/2027', /Give the date as year-month-day, such as 2027-01-31.*got "31\/01\/2027"/],
      ['2027-02-30', /Give the date as year-month-day/],
      ['2027-1-31', /Give the date as year-month-day/],
      ['2027-01-31T10:00:00Z', /Give the date as year-month-day/],
      ['', /Choose the date the key expires on/],
    ];
    for (const [date, message] of cases) {
      const res = await create({ name: 'dated', expiry: 'date', expiryDate: date });
      assert.equal(res.statusCode, 422, date);
      assert.match(expiryError(res.body), message, date);
      assert.match(res.body, /<input type="radio" id="expiry-date-choice" name="expiry" value="date" checked/, `${date}: "On a date" stays checked`);
      assert.ok(res.body.includes(date === '' ? 'name="expiryDate" value min=' : `name="expiryDate" value="${date}"`), `${date}: the date is kept`);
      assert.match(res.body, /value="dated"/, `${date}: the name is kept`);
      assert.match(res.body, /aria-describedby="expiry-hint expiry-error"/);
    }
    // With another bad field, both are reported at once.
    const both = await create({ name: '', expiry: 'date', expiryDate: '2029-01-01' });
    assert.equal(both.statusCode, 422);
    assert.match(both.body, /id="name-error">Give the key a name/);
    assert.match(expiryError(both.body), /at most a year away/);
    // A choice the form does not offer.
    const forged = await create({ name: 'forged', expiry: 'same' });
    assert.equal(forged.statusCode, 422);
    assert.match(expiryError(forged.body), /Expiry must be one of/);
    assert.equal(await keyCount(), before);
  });

  test('roll: the old key\'s lifetime by default, or 7, 30, 90 days, 1 year, a date, never; a bad date changes nothing', async () => {
    const { id } = await made({ name: 'to roll', expiry: '30d' });
    const form = await browser.get(key(id, '/roll'));
    assert.equal(form.statusCode, 200);
    const text = textOf(form.body);
    assert.match(text, /Expires As the old key, the same lifetime from now: 2027-02-14 12:00 UTC \([^)]+\) After 7 days .* On a date of your choice .* Never \(not recommended\)/);
    assert.match(form.body, /<input type="radio" id="expiry-same" name="expiry" value="same" checked/);

    // Refused: a date past a year, and no stop time, at once; nothing made, the old key untouched.
    const before = await keyCount();
    const bad = await browser.post(key(id, '/roll'), { _csrf: tokenOf(form.body), nonce: nonceOf(form.body), expiry: 'date', expiryDate: '2028-02-01' });
    assert.equal(bad.statusCode, 422);
    assert.match(expiryError(bad.body), /at most a year away: 2028-01-15 at the latest/);
    assert.match(bad.body, /id="stop-error">/);
    assert.match(bad.body, /name="expiryDate" value="2028-02-01"/);
    const badDate = await browser.post(key(id, '/roll'), { _csrf: tokenOf(form.body), nonce: nonceOf(bad.body), stopOld: 'now', expiry: 'date', expiryDate: 'soon' });
    assert.equal(badDate.statusCode, 422);
    assert.match(expiryError(badDate.body), /Give the date as year-month-day/);
    assert.doesNotMatch(badDate.body, /id="stop-error">/);
    assert.equal(await keyCount(), before);
    const old = await keyRow(id);
    assert.equal(old.replaced_by, null);
    assert.equal(old.revoked_at, null);

    // A date of the owner's choice.
    const again = await browser.get(key(id, '/roll'));
    const res = await browser.post(key(id, '/roll'), { _csrf: tokenOf(again.body), nonce: nonceOf(again.body), stopOld: '1h', expiry: 'date', expiryDate: '2027-03-01' });
    assert.equal(res.statusCode, 303, res.body);
    const shown = await browser.get(CREATED);
    assert.match(textOf(shown.body), /Key rolled.*Expires 2027-03-01 23:59 UTC/);
    const newId = Number(/\/settings\/developer-api\/keys\/([0-9]+)"/.exec(shown.body)?.[1]);
    assert.equal((await keyRow(newId)).expires_at, '2027-03-01T23:59:59.999Z');
    assert.equal((await keyRow(id)).replaced_by, newId);

    // The default keeps the lifetime (30 days from the roll); "never" makes a key that does not expire.
    ctx.clock.advance(2 * 86_400_000);
    await browser.signIn(alice);
    const rollOnce = async (from: number, fields: Record<string, string>) => {
      const page = await browser.get(key(from, '/roll'));
      assert.equal((await browser.post(key(from, '/roll'), { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), stopOld: 'now', ...fields })).statusCode, 303);
      return Number(/\/settings\/developer-api\/keys\/([0-9]+)"/.exec((await browser.get(CREATED)).body)?.[1]);
    };
    const { id: thirty } = await made({ name: 'thirty days', expiry: '30d' });
    assert.equal((await keyRow(await rollOnce(thirty, { expiry: 'same' }))).expires_at, '2027-02-16T12:00:00.000Z');
    const { id: seven } = await made({ name: 'seven days', expiry: '7d' });
    assert.equal((await keyRow(await rollOnce(seven, { expiry: 'never' }))).expires_at, null);
  });

  test('the banner names the keys expiring within 7 days; hiding one hides it for that key only, until the next UTC day', async () => {
    // Bob's account: none of his keys expires soon, and the tests above made none for him.
    const bobId = ctx.loaded.accounts.bob!;
    browser = new SettingsClient(ctx);
    await browser.signIn(bobId);
    const { id: first } = await made({ name: 'nightly sync', expiry: '7d' });
    const { id: second } = await made({ name: 'price feed', expiry: 'date', expiryDate: '2027-01-20' });
    await made({ name: 'far away', expiry: '90d' });
    const banner = (html: string) => textOf(/<div class="banner banner-warning" role="alert">(.*?)<\/div>/s.exec(html)?.[1] ?? '');
    let page = await browser.get(OVERVIEW);
    assert.match(banner(page.body), /2 keys expire within 7 days: roll them .* nightly sync expires 2027-01-22 12:00 UTC \(in 7 days\) Hide until tomorrow the reminder for nightly sync price feed expires 2027-01-20 23:59 UTC \(in 6 days\)/);
    assert.doesNotMatch(banner(page.body), /far away/);
    assert.match(page.body, new RegExp(`<form method="post" action="/settings/developer-api/keys/${first}/hide-expiry-reminder"><input type="hidden" name="_csrf"`));

    const res = await browser.post(hide(first), { _csrf: tokenOf(page.body) });
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, `${OVERVIEW}?done=reminder_hidden`);
    page = await browser.get(String(res.headers.location));
    assert.match(textOf(page.body), /The expiry reminder for that key is hidden until tomorrow, 00:00 UTC/);
    assert.match(banner(page.body), /^ *A key expires within 7 days: roll it .* price feed expires/);
    assert.doesNotMatch(banner(page.body), /nightly sync/);
    const listed = textOf(page.body.split('<li class="key">').find((li) => li.includes('nightly sync')) ?? '');
    assert.match(listed, /Expires soon/, 'the key itself still says it expires soon');
    // Hidden for the account, on any browser: another session of the owner sees the same.
    const other = new SettingsClient(ctx);
    await other.signIn(bobId);
    assert.doesNotMatch(banner((await other.get(OVERVIEW)).body), /nightly sync/);
    // Hiding it again changes nothing; hiding the other leaves no banner.
    assert.equal((await browser.post(hide(first), { _csrf: tokenOf(page.body) })).statusCode, 303);
    assert.equal((await browser.post(hide(second), { _csrf: tokenOf(page.body) })).statusCode, 303);
    assert.doesNotMatch((await browser.get(OVERVIEW)).body, /banner-warning/);

    // Until the end of the UTC day; from 00:00 UTC both are named again.
    ctx.clock.set('2027-01-15T23:59:59.999Z');
    await browser.signIn(bobId);
    assert.doesNotMatch((await browser.get(OVERVIEW)).body, /banner-warning/);
    ctx.clock.set('2027-01-16T00:00:00.000Z');
    await browser.signIn(bobId);
    page = await browser.get(OVERVIEW);
    assert.match(banner(page.body), /2 keys expire within 7 days.*nightly sync.*price feed/);
    // Hidden on the 16th: until the 17th, and the lapsed rows of the 15th are gone.
    assert.equal((await browser.post(hide(second), { _csrf: tokenOf(page.body) })).statusCode, 303);
    const rows = await ctx.store.db.selectFrom('expiry_reminder_dismissals').selectAll().where('account_id', '=', bobId).execute();
    assert.deepEqual(rows.map((r) => [Number(r.key_id), r.until]), [[second, '2027-01-17T00:00:00.000Z']]);
  });

  test("another account's key id, a missing one, a forged form or no session: refused, nothing stored", async () => {
    const { id: mine } = await made({ name: 'mine, soon', expiry: '7d' });
    const bobKey = (await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', ctx.loaded.accounts.bob!).executeTakeFirstOrThrow()).id;
    const token = await browser.formToken();
    const before = await dismissals();
    for (const id of [bobKey, 999_999]) {
      const res = await browser.post(hide(id), { _csrf: token });
      assert.equal(res.statusCode, 404, String(id));
      assert.match(textOf(res.body), /no such key in your account/);
    }
    assert.equal((await browser.post('/settings/developer-api/keys/abc/hide-expiry-reminder', { _csrf: token })).statusCode, 404);
    // Bob (signed in, with a form token of his own) cannot hide Alice's reminder either.
    const bob = new SettingsClient(ctx);
    await bob.signIn(ctx.loaded.accounts.bob!);
    assert.equal((await bob.post(hide(mine), { _csrf: await bob.formToken() })).statusCode, 404);
    // Forged: no form token, another session's token, another site, no session at all.
    assert.equal((await browser.post(hide(mine), {})).statusCode, 403);
    assert.equal((await browser.post(hide(mine), { _csrf: await bob.formToken() })).statusCode, 403);
    assert.equal((await browser.post(hide(mine), { _csrf: token }, { origin: 'https://evil.example' })).statusCode, 403);
    const stranger = new SettingsClient(ctx);
    assert.equal((await stranger.post(hide(mine), { _csrf: token })).statusCode, 401);
    assert.equal(await dismissals(), before);
    assert.match(textOf((await browser.get(OVERVIEW)).body), /mine, soon expires/, 'still named');
    assert.equal(SITE, 'http://localhost:80');
  });
});
