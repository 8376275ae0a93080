// The settings screen while a store is down or stalled (issue 18, item 3): the same answer as the API gives
// (docs/contract.md, "Metering": 503 with Retry-After within 2 seconds), as a plain page that says to retry,
// and no error-level line with a stack for an outage the service expects. Each test runs its own private
// Redis or PostgreSQL (test/helpers/private-services.ts), never the machine's shared servers.
import assert from 'node:assert/strict';
import { describe, it, type TestContext as NodeTestContext } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { startPrivatePostgres, startPrivateRedis } from '../helpers/private-services.js';
import { waitFor } from '../helpers/server-process.js';
import { createTestContext, TEST_STORE, type TestContext } from '../helpers/test-app.js';
import { mintLink, nonceOf, SettingsClient, textOf, tokenOf } from './settings-helpers.js';
import { OVERVIEW } from './pages-helpers.js';

async function timed(work: () => Promise<LightMyRequestResponse>): Promise<{ res: LightMyRequestResponse; ms: number }> {
  const started = performance.now();
  const res = await work();
  return { res, ms: Math.round(performance.now() - started) };
}

/** 503, Retry-After, within the API's 2 seconds, a page that says to retry and shows nothing of the fault. */
function assertOutagePage({ res, ms }: { res: LightMyRequestResponse; ms: number }, what: string): void {
  assert.equal(res.statusCode, 503, `${what}: ${res.statusCode} ${textOf(res.body).slice(0, 300)}`);
  assert.ok(Number(res.headers['retry-after']) >= 1, `${what}: Retry-After ${String(res.headers['retry-after'])}`);
  assert.ok(ms < 2000, `${what}: 503 after ${ms} ms`);
  assert.match(String(res.headers['content-type']), /^text\/html/);
  assert.equal(res.headers['cache-control'], 'no-store');
  const text = textOf(res.body);
  assert.match(text, /temporarily unavailable/i, what);
  assert.match(text, /try again/i, what);
  for (const needle of [/ECONNREFUSED/, /postgres|redis|sqlite/i, /\bat\s+\S+:\d+/, /\.ts\b|\.js:/]) assert.doesNotMatch(text, needle, `${what} leaks: ${text}`);
}

/** No line at error level (or above) since `from`, and none with a stack: an outage is expected, not a bug. */
function assertNoErrorLines(ctx: TestContext, from: number): void {
  const lines = ctx.logs.lines().slice(from);
  const errors = lines.filter((line) => Number(line.level) >= 50);
  assert.deepEqual(errors.map((line) => line.msg), [], 'no error-level line for an expected outage');
  const withStack = lines.filter((line) => JSON.stringify(line).includes('"stack"') && String(line.msg).startsWith('settings'));
  assert.deepEqual(withStack.map((line) => line.msg), [], 'no stack trace for an expected outage');
  assert.ok(lines.some((line) => line.msg === 'settings: store unavailable'), 'the outage is logged (warn)');
}

async function signedIn(ctx: TestContext): Promise<SettingsClient> {
  const owner = new SettingsClient(ctx);
  await owner.signIn(ctx.loaded.accounts.alice!);
  assert.equal((await owner.get(OVERVIEW)).statusCode, 200);
  return owner;
}

describe('the settings screen while Redis is stalled (SIGSTOP)', () => {
  it('answers 503 with Retry-After within 2 s, a page that says to retry, and serves again when Redis resumes', async (t: NodeTestContext) => {
    const redis = await startPrivateRedis();
    const ctx = await createTestContext({ env: { REDIS_URL: redis.url } });
    t.after(async () => {
      redis.resume();
      await ctx.close();
      await redis.stop();
    });
    const owner = await signedIn(ctx);
    const keyId = (await ctx.store.db.selectFrom('api_keys').select('id').where('name', '=', 'all scopes').orderBy('id').executeTakeFirstOrThrow()).id;
    const from = ctx.logs.lines().length;
    redis.pause();
    assertOutagePage(await timed(() => owner.get(OVERVIEW)), 'the overview');
    assertOutagePage(await timed(() => owner.get(`/settings/developer-api/keys/${keyId}`)), "a key's details");
    assertNoErrorLines(ctx, from);
    redis.resume();
    await waitFor(() => ctx.meter.ping(), 'redis to answer again');
    assert.equal((await owner.get(OVERVIEW)).statusCode, 200, 'the overview again once Redis answers');
  });
});

describe('the settings screen while PostgreSQL refuses connections', () => {
  it('answers 503 to the overview, a form post and a sign-in link, promptly, and serves again when it is back', async (t: NodeTestContext) => {
    const postgres = await startPrivatePostgres();
    const ctx = await createTestContext({ env: { DATABASE_URL: postgres.url } });
    t.after(async () => {
      await postgres.start().catch(() => {});
      await ctx.close();
      await postgres.destroy();
    });
    const owner = await signedIn(ctx);
    const form = await owner.get('/settings/developer-api/keys/new');
    const link = await mintLink(ctx, ctx.loaded.accounts.alice!);
    const from = ctx.logs.lines().length;
    await postgres.stop();
    assertOutagePage(await timed(() => owner.get(OVERVIEW)), 'the overview');
    const nonce = nonceOf(form.body);
    const post = await timed(() => owner.post('/settings/developer-api/keys', { _csrf: tokenOf(form.body), nonce, name: 'in the outage', scopes: 'export', expiry: '7d' }));
    assertOutagePage(post, 'a create form posted');
    assert.match(textOf(post.res.body), /may not have been made|check/i, 'a post says to check before sending it again');
    assertOutagePage(await timed(() => new SettingsClient(ctx).get(`/settings/sign-in?token=${link}`)), 'a sign-in link');
    assertNoErrorLines(ctx, from);
    await postgres.start();
    await waitFor(async () => (await owner.get(OVERVIEW)).statusCode === 200, 'the overview once PostgreSQL is back', 30_000);
  });
});

// PostgreSQL + Redis: every change of what a key lookup reads is fenced in Redis (src/metering/access-change.ts),
// so with Redis stopped it is refused before anything is written. The owner is told which change was not made
// and that sending it again is safe, not the outage page's "may not have been made". On SQLite (and without
// Redis) there is no fence: nothing to refuse.
describe('the settings screen while Redis is stopped, on PostgreSQL + Redis: a key change is refused, nothing made', {
  skip: TEST_STORE === 'postgres' ? false : 'PostgreSQL + Redis only (TEST_STORE=postgres)',
}, () => {
  it('answers 503 with Retry-After within 2 s, naming the change not made; the store is as before; the same forms work once Redis is back', async (t: NodeTestContext) => {
    const redis = await startPrivateRedis();
    const ctx = await createTestContext({ env: { REDIS_URL: redis.url } });
    let stopped = false;
    t.after(async () => {
      // Started again only if a failure left it stopped (a second start would leave a server behind).
      if (stopped) await redis.start();
      await ctx.close();
      await redis.destroy();
    });
    const owner = await signedIn(ctx);
    const alice = ctx.loaded.accounts.alice!;
    const keyId = (await ctx.store.db.selectFrom('api_keys').select('id').where('name', '=', 'all scopes').where('account_id', '=', alice).executeTakeFirstOrThrow()).id;
    const key = (path = '') => `/settings/developer-api/keys/${keyId}${path}`;
    const csrf = tokenOf((await owner.get(key())).body);
    const rollForm = await owner.get(key('/roll'));
    const roll = { _csrf: tokenOf(rollForm.body), nonce: nonceOf(rollForm.body), stopOld: 'now' };
    /** What a refused change must leave as it was: the account's keys, its security log, the key waiting to be shown. */
    const snapshot = async () => ({
      keys: await ctx.store.db.selectFrom('api_keys').selectAll().where('account_id', '=', alice).orderBy('id').execute(),
      events: await ctx.store.db.selectFrom('security_events').select('id').where('account_id', '=', alice).orderBy('id').execute(),
      reveals: await ctx.store.db.selectFrom('settings_reveals').selectAll().execute(),
    });
    const before = await snapshot();
    const from = ctx.logs.lines().length;
    await redis.stop();
    stopped = true;

    const changes: Array<[string, string, Record<string, string | string[]>, RegExp]> = [
      ['revoke', key('/revoke'), { _csrf: csrf }, /The key was not revoked.*still works/],
      ['roll', key('/roll'), roll, /The key was not rolled.*no new key was made/i],
      ['scopes', key('/scopes'), { _csrf: csrf, scopes: ['catalogue:read'] }, /The key's scopes were not changed/],
      ['addresses', key('/addresses'), { _csrf: csrf, addresses: '203.0.113.7', lockout: 'accept' }, /The key's allowed addresses were not changed/],
      ['rename', key('/name'), { _csrf: csrf, name: 'renamed in the outage' }, /The key was not renamed/],
    ];
    for (const [what, url, form, named] of changes) {
      const refused = await timed(() => owner.post(url, form));
      assertOutagePage(refused, what);
      const text = textOf(refused.res.body);
      assert.match(text, named, what);
      assert.match(text, /Nothing was changed/, what);
      assert.match(text, /safe to (send|make) it again/i, what);
      assert.doesNotMatch(text, /may not have been made/, `${what}: the change is known not to be made`);
    }
    assert.deepEqual(await snapshot(), before, 'nothing written: no key revoked, rolled, changed or made, nothing logged');
    const lines = ctx.logs.lines().slice(from);
    assert.deepEqual(lines.filter((line) => Number(line.level) >= 50).map((line) => line.msg), [], 'no error-level line for a refused change');
    assert.equal(lines.filter((line) => line.msg === 'settings: key change refused, Redis unavailable').length, changes.length, 'each refusal logged (warn)');

    await redis.start();
    stopped = false;
    await waitFor(() => ctx.meter.ping(), 'redis to answer again');
    // The very form refused, sent again: the refusal did not spend its one-time nonce.
    await waitFor(async () => {
      const again = await owner.post(key('/roll'), roll);
      if (again.statusCode === 503) return false;
      assert.equal(again.statusCode, 303, textOf(again.body).slice(0, 300));
      assert.equal(again.headers.location, '/settings/developer-api/keys/created');
      return true;
    }, 'the roll once Redis answers');
    const rolled = await ctx.store.db.selectFrom('api_keys').select(['revoked_at', 'replaced_by']).where('id', '=', keyId).executeTakeFirstOrThrow();
    assert.notEqual(rolled.revoked_at, null, 'rolled with stopOld=now');
    assert.notEqual(rolled.replaced_by, null);
  });
});
