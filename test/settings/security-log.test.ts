// The security log's filters (kind of event, key) and its CSV download: what an owner narrows the log to,
// what the file holds, and every request no form of ours sends. The real app on the suite's store.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OPERATOR } from '../../src/services/actor.js';
import { renameKey, revokeKey } from '../../src/services/keys.service.js';
import { recordSecurityEvent } from '../../src/services/security-log.js';
import { parseCsv } from '../../src/csv/csv.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { SettingsClient, textOf } from './settings-helpers.js';
import { LOG } from './pages-helpers.js';

const CSV = '/settings/developer-api/security-log.csv';

/** The text of the page's table of events (the filter form names every kind too). */
function eventsText(html: string): string {
  return textOf(/<tbody>([\s\S]*)<\/tbody>/.exec(html)?.[1] ?? '');
}

async function rows(text: string): Promise<string[][]> {
  const out: string[][] = [];
  for await (const record of parseCsv([text])) out.push([...record.fields]);
  return out;
}

describe('security log: filters and CSV', () => {
  let ctx: TestContext;
  let owner: SettingsClient;
  let alice: number;
  let secondKey: number;
  let firstKey: number;
  let bobsKey: number;

  before(async () => {
    ctx = await createTestContext({ now: '2027-01-15T12:00:00.000Z' });
    alice = ctx.loaded.accounts.alice!;
    const keyId = async (account: number, name: string) =>
      (await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', account).where('name', '=', name).executeTakeFirstOrThrow()).id;
    firstKey = await keyId(alice, 'all scopes');
    secondKey = await keyId(alice, 'second key');
    bobsKey = await keyId(ctx.loaded.accounts.bob!, 'all scopes');
    owner = new SettingsClient(ctx);
    await owner.signIn(alice);
    const base = { now: ctx.clock.now(), keyPrefix: ctx.config.keyPrefix, actor: OPERATOR };
    ctx.clock.advance(1000);
    await renameKey(ctx.store, { ...base, now: ctx.clock.now(), keyId: secondKey, name: '=HYPERLINK("http://evil.example")' });
    ctx.clock.advance(1000);
    await revokeKey(ctx.store, { ...base, now: ctx.clock.now(), keyId: secondKey });
    ctx.clock.advance(1000);
    await renameKey(ctx.store, { ...base, now: ctx.clock.now(), keyId: firstKey, name: 'prices, "nightly"' });
    // Another account's event: never shown to alice, whatever she asks for.
    await recordSecurityEvent(ctx.store.db, { accountId: ctx.loaded.accounts.bob!, kind: 'key_revoked', actor: OPERATOR, at: ctx.clock.now(), key: { id: bobsKey, name: 'bob secret', hint: 'x' } });
  });
  after(async () => ctx.close());

  test('the page narrows to one kind, one key, or both; the form keeps the choice; pages keep the filter', async () => {
    const all = eventsText((await owner.get(LOG)).body);
    assert.match(all, /Key renamed.*Key revoked.*Key renamed.*Signed in/);
    assert.doesNotMatch(all, /bob secret/);

    const renamed = await owner.get(`${LOG}?kind=key_renamed`);
    assert.equal(renamed.statusCode, 200);
    const renamedText = eventsText(renamed.body);
    assert.equal(renamedText.match(/Key renamed\s/g)?.length, 2, renamedText);
    assert.doesNotMatch(renamedText, /Key revoked|Signed in/);
    assert.match(renamed.body, /<option value="key_renamed" selected>/);

    const ofSecond = eventsText((await owner.get(`${LOG}?key=${secondKey}`)).body);
    assert.match(ofSecond, /Key revoked.*Key renamed/);
    assert.doesNotMatch(ofSecond, /prices, "nightly"/);

    const both = eventsText((await owner.get(`${LOG}?kind=key_revoked&key=${secondKey}`)).body);
    assert.equal(both.match(/Key revoked\s/g)?.length, 1);
    assert.doesNotMatch(both, /Key renamed/);

    const none = textOf((await owner.get(`${LOG}?kind=plan_changed`)).body);
    assert.match(none, /No event matches this filter in the last 90 days/);

    // The download link carries the filter.
    const page = await owner.get(`${LOG}?kind=key_renamed&key=${firstKey}`);
    assert.ok(page.body.includes(`href="${CSV}?kind=key_renamed&amp;key=${firstKey}"`), 'the CSV link keeps the filter');
  });

  test('paging keeps the filter', async () => {
    const base = { keyPrefix: ctx.config.keyPrefix, actor: OPERATOR };
    for (let i = 0; i < 26; i++) {
      ctx.clock.advance(1000);
      await renameKey(ctx.store, { ...base, now: ctx.clock.now(), keyId: firstKey, name: `paged ${i}` });
    }
    const first = await owner.get(`${LOG}?kind=key_renamed`);
    assert.match(textOf(first.body), /Page 1 of 2/);
    assert.ok(first.body.includes(`href="${LOG}?kind=key_renamed&amp;page=2"`), 'the next page keeps the filter');
    const second = await owner.get(`${LOG}?kind=key_renamed&page=2`);
    assert.match(textOf(second.body), /Page 2 of 2/);
    assert.match(eventsText(second.body), /Key renamed/);
    assert.doesNotMatch(eventsText(second.body), /Signed in|Key revoked/);
  });

  test('the CSV: every matching event, newest first, as text/csv to download; formulas are defused', async () => {
    const res = await owner.get(`${CSV}?key=${secondKey}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
    assert.match(String(res.headers['content-disposition']), /^attachment; filename="security-log-\d{4}-\d{2}-\d{2}\.csv"$/);
    assert.equal(res.headers['cache-control'], 'no-store');
    const table = await rows(res.body);
    assert.deepEqual(table[0], ['time', 'event', 'key_id', 'key_name', 'key_hint', 'actor', 'address', 'detail']);
    assert.deepEqual(table.slice(1).map((r) => r[1]), ['key_revoked', 'key_renamed']);
    for (const r of table.slice(1)) {
      assert.equal(r[2], String(secondKey));
      assert.equal(r[5], 'operator');
      assert.match(r[0]!, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    assert.equal(table[1]![3], `'=HYPERLINK("http://evil.example")`, 'a name that starts like a formula is shown, not run');

    const everything = await rows((await owner.get(CSV)).body);
    assert.ok(everything.some((r) => r[3] === 'prices, "nightly"'), 'commas and quotes survive the round trip');
    assert.ok(everything.some((r) => r[1] === 'signed_in' && r[5] === 'owner' && r[6] === '127.0.0.1'));
    assert.ok(!everything.some((r) => r[3] === 'bob secret'), "another account's events never");
    const pageTotal = /Security events, page 1 of \d+, (\d+) in all/.exec((await owner.get(LOG)).body)?.[1];
    assert.equal(everything.length - 1, Number(pageTotal), 'the file holds every event the pages do, not one page');
  });

  test('a filter no form sends is a 400, another account\'s key a 404, and signed out a 401', async () => {
    for (const query of ['kind=key_deleted', 'kind=KEY_REVOKED', 'key=abc', 'key=0', 'key=1e3', 'kind=key_revoked&kind=key_renamed']) {
      assert.equal((await owner.get(`${LOG}?${query}`)).statusCode, 400, query);
      assert.equal((await owner.get(`${CSV}?${query}`)).statusCode, 400, query);
    }
    assert.equal((await owner.get(`${LOG}?key=${bobsKey}`)).statusCode, 404);
    const foreign = await owner.get(`${CSV}?key=${bobsKey}`);
    assert.equal(foreign.statusCode, 404);
    assert.doesNotMatch(foreign.body, /bob secret/);
    assert.equal((await owner.get(`${LOG}?key=999999`)).statusCode, 404);
    const stranger = new SettingsClient(ctx);
    const out = await stranger.get(CSV);
    assert.equal(out.statusCode, 401);
    assert.doesNotMatch(out.body, /key_renamed/);
  });
});
