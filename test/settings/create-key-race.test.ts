// "Create key" and "Roll" posted at once, from one session and from two (issue 18, item 4): each answer is
// a 303 to the key's page or a 422 that made nothing, never a 500; and every key made is shown to the session
// that made it, so no key is live, counted toward the 20 and seen by no one. On the suite's store (SQLite,
// or PostgreSQL, where the slot's delete-then-insert raced and answered 500 after making the key).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { nonceOf, SettingsClient, textOf, tokenOf } from './settings-helpers.js';
import { NEW, CREATE, CREATED } from './pages-helpers.js';

describe('concurrent key creation on the settings screen', () => {
  let ctx: TestContext;
  let alice: number;

  before(async () => {
    ctx = await createTestContext();
    alice = ctx.loaded.accounts.alice!;
  });
  after(async () => ctx.close());

  const keyIds = async () =>
    new Set((await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', alice).execute()).map((row) => Number(row.id)));

  /** Forms as a browser holds them when the owner has several tabs open: each with its own nonce. */
  async function forms(browser: SettingsClient, count: number): Promise<Array<{ _csrf: string; nonce: string }>> {
    const out = [];
    for (let i = 0; i < count; i++) {
      const page = await browser.get(NEW);
      assert.equal(page.statusCode, 200, page.body);
      out.push({ _csrf: tokenOf(page.body), nonce: nonceOf(page.body) });
    }
    return out;
  }

  /** The key the session's page shows once, by its id on the page (null: none waiting). */
  async function shownKeyId(browser: SettingsClient): Promise<number | null> {
    const shown = await browser.get(CREATED);
    assert.equal(shown.statusCode, 200, shown.body);
    if (shown.body.match(KEY_PATTERN) === null) return null;
    return Number(/\/settings\/developer-api\/keys\/([0-9]+)"/.exec(shown.body)?.[1]);
  }

  test('each submission answers 303 or 422, and every key made is the one its session is shown', async () => {
    const owners = [new SettingsClient(ctx), new SettingsClient(ctx)];
    for (const owner of owners) await owner.signIn(alice);
    const made = new Set<number>();
    let name = 0;
    for (let round = 0; round < 4; round++) {
      const before = await keyIds();
      const posts = [];
      for (const owner of owners) {
        for (const form of await forms(owner, 3)) {
          posts.push(owner.post(CREATE, { ...form, name: `race ${++name}`, scopes: 'export', expiry: '7d' }).then((res) => ({ owner, res })));
        }
      }
      const answers = await Promise.all(posts);
      for (const { res } of answers) {
        assert.ok(res.statusCode === 303 || res.statusCode === 422, `${res.statusCode}: ${textOf(res.body).slice(0, 300)}`);
        if (res.statusCode === 303) assert.equal(res.headers.location, CREATED);
        else assert.match(textOf(res.body), /waiting to be shown/, 'a 422 says why');
      }
      const shown = new Set<number>();
      for (const owner of owners) {
        const created = answers.filter((a) => a.owner === owner && a.res.statusCode === 303).length;
        assert.equal(created, 1, 'one key per session while its slot is full; the others are refused, nothing made');
        const id = await shownKeyId(owner);
        assert.notEqual(id, null, 'the session that made a key is shown it');
        shown.add(id!);
      }
      const added = [...(await keyIds())].filter((id) => !before.has(id));
      assert.deepEqual(added.sort(), [...shown].sort(), 'the keys made are exactly the keys shown');
      for (const id of added) made.add(id);
    }
    assert.equal(made.size, 8);
  });

  test('a key made but not yet shown keeps its place: the next create says so, and the key is still shown', async () => {
    const owner = new SettingsClient(ctx);
    await owner.signIn(alice);
    const [first, second] = await forms(owner, 2);
    const before = await keyIds();
    assert.equal((await owner.post(CREATE, { ...first!, name: 'first of two', scopes: 'export', expiry: '7d' })).statusCode, 303);
    const refused = await owner.post(CREATE, { ...second!, name: 'second of two', scopes: 'export', expiry: '7d' });
    assert.equal(refused.statusCode, 422);
    assert.match(textOf(refused.body), /waiting to be shown/);
    const added = [...(await keyIds())].filter((id) => !before.has(id));
    assert.equal(added.length, 1, 'the refused submission made nothing');
    assert.equal(await shownKeyId(owner), added[0]);
    const again = await forms(owner, 1);
    assert.equal((await owner.post(CREATE, { ...again[0]!, name: 'second of two', scopes: 'export', expiry: '7d' })).statusCode, 303, 'once shown, the next one is made');
    assert.notEqual(await shownKeyId(owner), null);
  });

  test('a roll and a create at once: one makes its key and shows it, the other answers 422 and changes nothing', async () => {
    const owner = new SettingsClient(ctx);
    await owner.signIn(alice);
    const [made] = await forms(owner, 1);
    assert.equal((await owner.post(CREATE, { ...made!, name: 'to roll', scopes: 'export', expiry: '7d' })).statusCode, 303);
    const rolled = (await shownKeyId(owner))!;
    const rollPage = await owner.get(`/settings/developer-api/keys/${rolled}/roll`);
    const [create] = await forms(owner, 1);
    const before = await keyIds();
    const answers = await Promise.all([
      owner.post(`/settings/developer-api/keys/${rolled}/roll`, { _csrf: tokenOf(rollPage.body), nonce: nonceOf(rollPage.body), stopOld: '1h' }),
      owner.post(CREATE, { ...create!, name: 'beside the roll', scopes: 'export', expiry: '7d' }),
    ]);
    assert.deepEqual(answers.map((res) => res.statusCode).sort(), [303, 422], answers.map((res) => textOf(res.body).slice(0, 200)).join(' | '));
    const added = [...(await keyIds())].filter((id) => !before.has(id));
    assert.equal(added.length, 1);
    assert.equal(await shownKeyId(owner), added[0]);
    const old = await ctx.store.db.selectFrom('api_keys').select(['retires_at', 'replaced_by']).where('id', '=', rolled).executeTakeFirstOrThrow();
    if (answers[0]!.statusCode === 422) assert.deepEqual(old, { retires_at: null, replaced_by: null }, 'a refused roll leaves the old key as it was');
  });
});
