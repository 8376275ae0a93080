// Metering as a client sees it (docs/contract.md, "Request pipeline" and "Metering"), through HTTP with a
// ManualClock: the sliding 60-second burst window, the calendar-month quota, what counts toward each, and
// both limits belonging to the account, not the key. With the default TEST_STORE the SqliteMeter answers;
// with TEST_STORE=postgres the same tests hold the Redis meter to it. The meter called directly, at exact
// instants: meter-direct.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { changePlan } from '../../src/services/accounts.service.js';
import { V1 } from '../helpers/test-app.js';
import {
  accountId,
  enthusiastLimits,
  header,
  intHeader,
  keyId,
  meUsage,
  parseRateLimit,
  assertBurstEvents,
  storedUsed,
  unixSeconds,
} from '../helpers/metering-helpers.js';
import { context, DECEMBER_S, expectOk, expectQuotaExceeded, expectRateLimited, NOV_LEFT_S, NOV_RESET, T0 } from './meter-fixtures.js';

// ---------------------------------------------------------------------------------------------------------

describe('burst limit over HTTP (sliding 60-second window)', () => {
  const burstOnly = enthusiastLimits(1000, 10);

  it('accepts perMinute requests, then 429 rate_limited with Retry-After until the oldest leaves the window', async (t) => {
    const ctx = await context(t, burstOnly);
    expectOk(await ctx.get(`${V1}/catalogue`), 'first');
    ctx.clock.advance(20_700);
    for (let i = 2; i <= 10; i++) expectOk(await ctx.get(`${V1}/catalogue`), `request ${i}`);

    // The oldest (T0) leaves at T0+60s: 39.3 s from now, rounded up (not to the nearest).
    assert.equal(expectRateLimited(await ctx.get(`${V1}/catalogue`)), 40);

    ctx.clock.set(T0 + 59_999);
    assert.equal(expectRateLimited(await ctx.get(`${V1}/catalogue`)), 1, 'still limited 1 ms before, and Retry-After is at least 1');

    ctx.clock.set(T0 + 60_000);
    const freed = await ctx.get(`${V1}/catalogue`);
    expectOk(freed, 'exactly 60 s after the first');
    assert.equal(parseRateLimit(freed).burst.r, 0);
    // The next slot frees when the nine requests of T0+20.7s leave: 20.7 s, rounded up.
    assert.equal(expectRateLimited(await ctx.get(`${V1}/catalogue`)), 21);
  });

  it('slides: a minute after a spread of requests only the earliest have left (not a calendar minute)', async (t) => {
    const ctx = await context(t, burstOnly);
    // T0 is 12:00:00.000: with calendar minutes everything would reset at 12:01:00.
    for (let i = 0; i < 5; i++) expectOk(await ctx.get(`${V1}/catalogue`));
    ctx.clock.set(T0 + 30_000);
    for (let i = 0; i < 5; i++) expectOk(await ctx.get(`${V1}/prices`));
    assert.equal(expectRateLimited(await ctx.get(`${V1}/catalogue`)), 30);

    ctx.clock.set(T0 + 60_000);
    for (let i = 0; i < 5; i++) expectOk(await ctx.get(`${V1}/catalogue`), `slot ${i + 1} of the T0 batch`);
    assert.equal(expectRateLimited(await ctx.get(`${V1}/catalogue`)), 30, 'the T0+30s batch is still in the window');

    ctx.clock.set(T0 + 90_000);
    for (let i = 0; i < 5; i++) expectOk(await ctx.get(`${V1}/catalogue`), `slot ${i + 1} of the T0+30s batch`);
    assert.equal(expectRateLimited(await ctx.get(`${V1}/catalogue`)), 30);
  });

  it('a request answered rate_limited counts toward neither the burst nor the quota', async (t) => {
    const ctx = await context(t, burstOnly);
    const alice = accountId(ctx, 'alice');
    for (let i = 0; i < 10; i++) expectOk(await ctx.get(`${V1}/catalogue`));
    ctx.clock.set(T0 + 30_000);
    for (let i = 0; i < 8; i++) expectRateLimited(await ctx.get(`${V1}/catalogue`));
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 10);

    // Had the refusals at T0+30s counted, they would still fill the window at T0+60s.
    ctx.clock.set(T0 + 60_000);
    for (let i = 0; i < 10; i++) expectOk(await ctx.get(`${V1}/catalogue`), `request ${i + 1} of the new window`);
    expectRateLimited(await ctx.get(`${V1}/catalogue`));
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 20);
  });

  it('every request past steps 1-4 takes a slot whatever its outcome; 401, 405 and revoked keys do not', async (t) => {
    const ctx = await context(t, burstOnly);
    // Refused before the burst step (key, method): not counted, however many.
    for (let i = 0; i < 3; i++) {
      assert.equal((await ctx.get(`${V1}/catalogue`, 'alice-revoked')).statusCode, 401);
      assert.equal((await ctx.get(`${V1}/catalogue`, 'alice-expired')).statusCode, 401);
      assert.equal((await ctx.get(`${V1}/catalogue`, 'alice', { method: 'POST' })).statusCode, 405);
      assert.equal((await ctx.get(`${V1}/catalogue`, 'alice', { method: 'DELETE' })).statusCode, 405);
    }
    const outcomes: Array<[string, () => Promise<LightMyRequestResponse>, number]> = [
      ['no such route', () => ctx.get(`${V1}/no-such-route`), 404],
      ['bad parameter', () => ctx.get(`${V1}/catalogue?limit=0`), 400],
      ['unknown parameter', () => ctx.get(`${V1}/catalogue?page=2`), 400],
      ['insufficient scope', () => ctx.get(`${V1}/catalogue`, 'alice-noscope'), 403],
      ['OPTIONS', () => ctx.get(`${V1}/catalogue`, 'alice', { method: 'OPTIONS' }), 204],
      ['missing item', () => ctx.get(`${V1}/catalogue/999`), 404],
      ['/me', () => ctx.get(`${V1}/me`), 200],
      ['HEAD', () => ctx.get(`${V1}/catalogue`, 'alice', { method: 'HEAD' }), 200],
      ['GET', () => ctx.get(`${V1}/catalogue`), 200],
      ['another key of the account', () => ctx.get(`${V1}/catalogue`, 'alice-second'), 200],
    ];
    for (const [what, send, status] of outcomes) {
      const res = await send();
      assert.equal(res.statusCode, status, `${what}: ${res.body}`);
    }
    // Ten slots taken by ten different outcomes: the eleventh request is limited, even /me or a bad one.
    expectRateLimited(await ctx.get(`${V1}/me`));
    expectRateLimited(await ctx.get(`${V1}/catalogue?limit=0`));
    expectRateLimited(await ctx.get(`${V1}/no-such-route`));
    expectRateLimited(await ctx.get(`${V1}/catalogue`, 'alice-noscope'));
    await assertBurstEvents(ctx, accountId(ctx, 'alice'), 10);
  });

  it('a 429 quota_exceeded still takes a burst slot, and the burst (step 5) is decided before the quota (step 9)', async (t) => {
    const ctx = await context(t); // monthly 5, perMinute 10
    for (let i = 0; i < 5; i++) expectOk(await ctx.get(`${V1}/catalogue`));
    for (let i = 0; i < 5; i++) expectQuotaExceeded(await ctx.get(`${V1}/catalogue`));
    expectRateLimited(await ctx.get(`${V1}/catalogue`));
    expectRateLimited(await ctx.get(`${V1}/me`));
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('monthly quota over HTTP', () => {
  it('M metered requests succeed, then 429 quota_exceeded with Retry-After to the reset and the X-RateLimit trio', async (t) => {
    const ctx = await context(t); // monthly 5, perMinute 10
    const endpoints = ['/catalogue', '/prices', '/collection', '/listings', '/offers'];
    for (const [i, path] of endpoints.entries()) {
      const res = await ctx.get(`${V1}${path}`);
      expectOk(res, path);
      assert.equal(intHeader(res, 'x-ratelimit-remaining'), 4 - i, path);
    }
    const over = await ctx.get(`${V1}/transactions`);
    assert.equal(expectQuotaExceeded(over), NOV_LEFT_S);
    assert.equal(intHeader(over, 'x-ratelimit-limit'), 5);
    assert.equal(intHeader(over, 'x-ratelimit-remaining'), 0);
    assert.equal(intHeader(over, 'x-ratelimit-reset'), NOV_RESET);
    assert.deepEqual(parseRateLimit(over).quota, { r: 0, t: NOV_LEFT_S });

    // HEAD is metered like GET.
    const head = await ctx.get(`${V1}/catalogue`, 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 429);
    assert.equal(head.body, '');
    assert.equal(intHeader(head, 'retry-after'), NOV_LEFT_S);

    // /me keeps working and reports the same numbers.
    const me = await meUsage(ctx);
    assert.deepEqual(me.usage, { period: '2026-11', used: 5, remaining: 0 });
    assert.deepEqual(me.limits, { monthly: 5, perMinute: 10 });
    assert.equal(await storedUsed(ctx, accountId(ctx, 'alice'), '2026-11'), 5);
  });

  it('a used-up quota does not hide earlier refusals: 400, 404 route and insufficient_scope come first', async (t) => {
    const ctx = await context(t, enthusiastLimits(1, 100));
    expectOk(await ctx.get(`${V1}/catalogue`));
    expectQuotaExceeded(await ctx.get(`${V1}/catalogue`));
    assert.equal((await ctx.get(`${V1}/catalogue?limit=101`)).statusCode, 400);
    assert.equal((await ctx.get(`${V1}/catalogue/abc`)).statusCode, 400);
    assert.equal((await ctx.get(`${V1}/no-such-route`)).statusCode, 404);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice-noscope')).statusCode, 403);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice', { method: 'OPTIONS' })).statusCode, 204);
  });

  it('/me, 400, 403 insufficient_scope, 404 route and OPTIONS never count; a missing item (404) and HEAD do', async (t) => {
    const ctx = await context(t, enthusiastLimits(5, 100));
    assert.equal((await ctx.get(`${V1}/me`)).statusCode, 200);
    assert.equal((await ctx.get(`${V1}/catalogue?limit=0`)).statusCode, 400);
    assert.equal((await ctx.get(`${V1}/prices/0`)).statusCode, 400);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice-noscope')).statusCode, 403);
    assert.equal((await ctx.get(`${V1}/no-such-route`)).statusCode, 404);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice', { method: 'OPTIONS' })).statusCode, 204);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice-revoked')).statusCode, 401);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 0, remaining: 5 });

    const missing = await ctx.get(`${V1}/catalogue/999`);
    assert.equal(missing.statusCode, 404);
    assert.equal(intHeader(missing, 'x-ratelimit-remaining'), 4, 'a missing item is a metered request (step 10)');
    const head = await ctx.get(`${V1}/catalogue`, 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 200);
    assert.equal(intHeader(head, 'x-ratelimit-remaining'), 3);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 2, remaining: 3 });
  });

  it('month rollover: used up at 2026-11-30T23:59:59.999Z, fresh at 2026-12-01T00:00:00.000Z', async (t) => {
    const ctx = await context(t);
    ctx.clock.set('2026-11-30T23:50:00.000Z');
    for (let i = 0; i < 5; i++) expectOk(await ctx.get(`${V1}/catalogue`));

    ctx.clock.set('2026-11-30T23:59:59.999Z');
    const last = await ctx.get(`${V1}/catalogue`);
    assert.equal(expectQuotaExceeded(last), 1, '1 ms before the reset: Retry-After rounds up to 1');
    assert.equal(intHeader(last, 'x-ratelimit-reset'), NOV_RESET);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 5, remaining: 0 });

    ctx.clock.set('2026-12-01T00:00:00.000Z');
    const fresh = await ctx.get(`${V1}/catalogue`);
    expectOk(fresh, 'first request of December');
    assert.equal(intHeader(fresh, 'x-ratelimit-limit'), 5);
    assert.equal(intHeader(fresh, 'x-ratelimit-remaining'), 4);
    assert.equal(intHeader(fresh, 'x-ratelimit-reset'), unixSeconds('2027-01-01T00:00:00.000Z'));
    assert.equal(header(fresh, 'ratelimit-policy'), `"burst";q=10;w=60, "quota";q=5;w=${DECEMBER_S}`);
    assert.deepEqual(parseRateLimit(fresh).quota, { r: 4, t: DECEMBER_S });
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-12', used: 1, remaining: 4 });
    // November's usage is kept, not reset in place.
    assert.equal(await storedUsed(ctx, accountId(ctx, 'alice'), '2026-11'), 5);
  });

  it('year rollover: used up on 2026-12-31, fresh on 2027-01-01 with period 2027-01', async (t) => {
    const ctx = await context(t);
    ctx.clock.set('2026-12-31T23:50:00.000Z');
    for (let i = 0; i < 5; i++) expectOk(await ctx.get(`${V1}/catalogue`));

    ctx.clock.set('2026-12-31T23:59:59.999Z');
    const last = await ctx.get(`${V1}/catalogue`);
    assert.equal(expectQuotaExceeded(last), 1);
    assert.equal(intHeader(last, 'x-ratelimit-reset'), unixSeconds('2027-01-01T00:00:00.000Z'));
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-12', used: 5, remaining: 0 });

    ctx.clock.set('2027-01-01T00:00:00.000Z');
    const fresh = await ctx.get(`${V1}/catalogue`);
    expectOk(fresh, 'first request of 2027');
    assert.equal(intHeader(fresh, 'x-ratelimit-remaining'), 4);
    assert.equal(intHeader(fresh, 'x-ratelimit-reset'), unixSeconds('2027-02-01T00:00:00.000Z'));
    assert.equal(header(fresh, 'ratelimit-policy'), `"burst";q=10;w=60, "quota";q=5;w=${31 * 86_400}`);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2027-01', used: 1, remaining: 4 });
    assert.equal(await storedUsed(ctx, accountId(ctx, 'alice'), '2026-12'), 5);
  });

  it('a plan change takes effect on the next request and keeps the month\'s usage and the burst window', async (t) => {
    const ctx = await context(t); // enthusiast: monthly 5, perMinute 10; addon: defaults 10000, 60
    const alice = accountId(ctx, 'alice');
    for (let i = 0; i < 3; i++) expectOk(await ctx.get(`${V1}/catalogue`));

    await changePlan(ctx.store, { accountId: alice, plan: 'addon' });
    const res = await ctx.get(`${V1}/catalogue`);
    expectOk(res, 'first request on addon');
    assert.equal(intHeader(res, 'x-ratelimit-limit'), 10_000);
    assert.equal(intHeader(res, 'x-ratelimit-remaining'), 10_000 - 4);
    assert.equal(header(res, 'ratelimit'), `"burst";r=${60 - 4};t=60, "quota";r=${10_000 - 4};t=${NOV_LEFT_S}`);

    await changePlan(ctx.store, { accountId: alice, plan: 'enthusiast' });
    const me = await meUsage(ctx);
    assert.deepEqual(me.limits, { monthly: 5, perMinute: 10 });
    assert.deepEqual(me.usage, { period: '2026-11', used: 4, remaining: 1 });
  });

  it('limits lowered under existing usage: remaining is 0, never negative', async (t) => {
    const ctx = await context(t); // monthly 5 now
    const alice = accountId(ctx, 'alice');
    // Eight requests counted earlier this month under a larger plan (two minutes ago: out of the burst window).
    for (let i = 0; i < 8; i++) {
      await ctx.meter.admit({ accountId: alice, keyId: await keyId(ctx, 'alice'), limits: { monthly: 100, perMinute: 100 }, quota: true, now: T0 - 120_000 });
    }
    const me = await ctx.get(`${V1}/me`);
    assert.deepEqual((me.json() as { usage: unknown }).usage, { period: '2026-11', used: 8, remaining: 0 });
    assert.equal(intHeader(me, 'x-ratelimit-remaining'), 0);
    assert.equal(parseRateLimit(me).quota?.r, 0);

    const over = await ctx.get(`${V1}/catalogue`);
    expectQuotaExceeded(over);
    assert.equal(intHeader(over, 'x-ratelimit-remaining'), 0);
    assert.equal(intHeader(over, 'x-ratelimit-limit'), 5);
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 8, 'the refused request is not counted');
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('limits belong to the account', () => {
  it("alice's two keys share one quota; bob's is his own", async (t) => {
    const ctx = await context(t);
    const remaining: number[] = [];
    for (const key of ['alice', 'alice-second', 'alice', 'alice-second', 'alice']) {
      const res = await ctx.get(`${V1}/catalogue`, key);
      expectOk(res, key);
      remaining.push(intHeader(res, 'x-ratelimit-remaining'));
    }
    assert.deepEqual(remaining, [4, 3, 2, 1, 0]);
    expectQuotaExceeded(await ctx.get(`${V1}/catalogue`, 'alice-second'));
    expectQuotaExceeded(await ctx.get(`${V1}/catalogue`, 'alice-expiring'));
    assert.deepEqual((await meUsage(ctx, 'alice-second')).usage, { period: '2026-11', used: 5, remaining: 0 });

    const bob = await ctx.get(`${V1}/catalogue`, 'bob');
    expectOk(bob, 'bob (addon, default limits)');
    assert.equal(intHeader(bob, 'x-ratelimit-limit'), 10_000);
    assert.equal(intHeader(bob, 'x-ratelimit-remaining'), 9_999);
  });

  it("alice's two keys share one burst window; bob's is his own", async (t) => {
    const ctx = await context(t, enthusiastLimits(1000, 10));
    for (let i = 0; i < 10; i++) expectOk(await ctx.get(`${V1}/catalogue`, i % 2 === 0 ? 'alice' : 'alice-second'));
    expectRateLimited(await ctx.get(`${V1}/catalogue`, 'alice'));
    expectRateLimited(await ctx.get(`${V1}/catalogue`, 'alice-second'));
    expectRateLimited(await ctx.get(`${V1}/me`, 'alice-noscope'));
    expectOk(await ctx.get(`${V1}/catalogue`, 'bob'));
  });
});
