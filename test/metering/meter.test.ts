// Metering as a client sees it (docs/contract.md, "Request pipeline" and "Metering"): the sliding 60-second burst window, the
// calendar-month quota, what counts toward each, the rate-limit headers, and per-key usage. The meter is
// exercised directly first (exact instants), then through HTTP with a ManualClock. With the default
// TEST_STORE that is the SqliteMeter; with TEST_STORE=postgres the same tests hold the Redis meter to it.
import { describe, it, type TestContext as NodeTestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { changePlan } from '../../src/services/accounts.service.js';
import type { PlanLimits } from '../../src/domain/scopes.js';
import { createTestContext, TEST_STORE, V1, type TestContext } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import {
  accountId,
  countedDays,
  enthusiastLimits,
  errorBody,
  header,
  intHeader,
  keyId,
  lastUsedAt,
  meUsage,
  parseRateLimit,
  retryAfter,
  assertBurstEvents,
  storedUsed,
  unixSeconds,
} from '../helpers/metering-helpers.js';

const T0 = Date.parse(FIXTURE_NOW); // 2026-11-20T12:00:00.000Z
/** 2026-12-01T00:00:00Z, the November quota reset, in Unix seconds. */
const NOV_RESET = unixSeconds('2026-12-01T00:00:00.000Z');
/** Seconds from FIXTURE_NOW to that reset: 10.5 days. */
const NOV_LEFT_S = 10.5 * 86_400;
const NOVEMBER_S = 30 * 86_400; // 2592000
const DECEMBER_S = 31 * 86_400; // 2678400

async function context(t: NodeTestContext, env: Record<string, string> = enthusiastLimits(5, 10)): Promise<TestContext> {
  const ctx = await createTestContext({ env });
  t.after(() => ctx.close());
  return ctx;
}

function expectOk(res: LightMyRequestResponse, what = ''): void {
  assert.equal(res.statusCode, 200, `${what} ${res.body}`);
}

function expectRateLimited(res: LightMyRequestResponse): number {
  assert.equal(res.statusCode, 429, res.body);
  errorBody(res, 'rate_limited');
  const seconds = retryAfter(res);
  // The IETF field tells the same story as Retry-After: nothing left, a slot frees in t seconds.
  assert.deepEqual(parseRateLimit(res).burst, { r: 0, t: seconds });
  return seconds;
}

function expectQuotaExceeded(res: LightMyRequestResponse): number {
  assert.equal(res.statusCode, 429, res.body);
  errorBody(res, 'quota_exceeded');
  return retryAfter(res);
}

// ---------------------------------------------------------------------------------------------------------

describe(`the meter (${TEST_STORE === 'sqlite' ? 'SqliteMeter' : 'RedisMeter'}), called directly`, () => {
  const generous: PlanLimits = { monthly: 1000, perMinute: 1000 };

  it('admits perMinute requests in any window (now-60s, now] and says when the oldest leaves it', async (t) => {
    const ctx = await context(t);
    const req = { accountId: accountId(ctx, 'alice'), keyId: await keyId(ctx, 'alice'), limits: { monthly: 1000, perMinute: 3 }, quota: true };

    assert.deepEqual((await ctx.meter.admit({ ...req, now: T0 })).burst, { allowed: true, remaining: 2, resetInMs: 60_000 });
    assert.deepEqual((await ctx.meter.admit({ ...req, now: T0 + 10_000 })).burst, { allowed: true, remaining: 1, resetInMs: 50_000 });
    assert.deepEqual((await ctx.meter.admit({ ...req, now: T0 + 20_000 })).burst, { allowed: true, remaining: 0, resetInMs: 40_000 });

    const refused = await ctx.meter.admit({ ...req, now: T0 + 30_000 });
    assert.deepEqual(refused, { burst: { allowed: false, remaining: 0, resetInMs: 30_000 }, quota: null });
    // One millisecond before the first leaves the window, it is still in it.
    assert.deepEqual((await ctx.meter.admit({ ...req, now: T0 + 59_999 })).burst, { allowed: false, remaining: 0, resetInMs: 1 });
    // Exactly 60 s after it, it has left: one slot, and the next one frees when the T0+10s request leaves.
    assert.deepEqual((await ctx.meter.admit({ ...req, now: T0 + 60_000 })).burst, { allowed: true, remaining: 0, resetInMs: 10_000 });
    assert.equal((await ctx.meter.admit({ ...req, now: T0 + 60_000 })).burst.allowed, false);
    // The refusals were not counted anywhere: 4 admitted, 4 counted.
    assert.equal(await ctx.meter.used(req.accountId, '2026-11'), 4);
  });

  it('a refused admission records nothing: no burst event, no quota, no key usage', async (t) => {
    const ctx = await context(t);
    const alice = accountId(ctx, 'alice');
    const key = await keyId(ctx, 'alice');
    const limits = { monthly: 1000, perMinute: 2 };
    for (let i = 0; i < 2; i++) assert.equal((await ctx.meter.admit({ accountId: alice, keyId: key, limits, quota: true, now: T0 })).burst.allowed, true);
    for (let i = 0; i < 5; i++) assert.equal((await ctx.meter.admit({ accountId: alice, keyId: key, limits, quota: true, now: T0 })).burst.allowed, false);
    await assertBurstEvents(ctx, alice, 2);
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 2);
    assert.deepEqual(await ctx.meter.keyUsage(alice, key, '2026-11-01'), [{ day: '2026-11-20', requests: 2 }]);
  });

  it('counts the quota only when asked; at the limit it refuses the quota but the burst slot is taken', async (t) => {
    const ctx = await context(t);
    const alice = accountId(ctx, 'alice');
    const key = await keyId(ctx, 'alice');
    const limits = { monthly: 2, perMinute: 1000 };
    const admit = (quota: boolean) => ctx.meter.admit({ accountId: alice, keyId: key, limits, quota, now: T0 });

    assert.deepEqual((await admit(false)).quota, { allowed: true, used: 0, period: '2026-11' });
    assert.deepEqual((await admit(true)).quota, { allowed: true, used: 1, period: '2026-11' });
    assert.deepEqual((await admit(true)).quota, { allowed: true, used: 2, period: '2026-11' });
    const over = await admit(true);
    assert.equal(over.burst.allowed, true);
    assert.deepEqual(over.quota, { allowed: false, used: 2, period: '2026-11' });
    // /me-style admissions still go through once the month is used up, and report the usage.
    assert.deepEqual((await admit(false)).quota, { allowed: true, used: 2, period: '2026-11' });
    assert.equal(await ctx.meter.used(alice, '2026-11'), 2);
    await assertBurstEvents(ctx, alice, 5);
  });

  it('periods are UTC calendar months, each counted on its own', async (t) => {
    const ctx = await context(t);
    const alice = accountId(ctx, 'alice');
    const key = await keyId(ctx, 'alice');
    const admit = (iso: string) => ctx.meter.admit({ accountId: alice, keyId: key, limits: generous, quota: true, now: Date.parse(iso) });
    assert.equal((await admit('2026-11-30T23:59:59.999Z')).quota?.period, '2026-11');
    assert.deepEqual((await admit('2026-12-01T00:00:00.000Z')).quota, { allowed: true, used: 1, period: '2026-12' });
    assert.deepEqual((await admit('2027-01-01T00:00:00.000Z')).quota, { allowed: true, used: 1, period: '2027-01' });
    assert.equal(await ctx.meter.used(alice, '2026-11'), 1);
    assert.equal(await ctx.meter.used(alice, '2026-12'), 1);
    assert.equal(await ctx.meter.used(alice, '2025-11'), 0);
  });

  it('refund gives back one counted request, and the per-key day with it, never below zero', async (t) => {
    const ctx = await context(t);
    const alice = accountId(ctx, 'alice');
    const key = await keyId(ctx, 'alice');
    await ctx.meter.admit({ accountId: alice, keyId: key, limits: generous, quota: true, now: T0 });
    await ctx.meter.admit({ accountId: alice, keyId: key, limits: generous, quota: true, now: T0 });
    await ctx.meter.refund(alice, key, '2026-11', '2026-11-20');
    assert.equal(await ctx.meter.used(alice, '2026-11'), 1);
    assert.deepEqual(await countedDays(ctx, key, '2026-11-20'), [{ day: '2026-11-20', requests: 1 }]);
    await ctx.meter.refund(alice, key, '2026-11', '2026-11-20');
    await ctx.meter.refund(alice, key, '2026-11', '2026-11-20');
    assert.equal(await ctx.meter.used(alice, '2026-11'), 0);
    assert.deepEqual(await countedDays(ctx, key, '2026-11-20'), []);
  });

  it('each account has its own window and quota', async (t) => {
    const ctx = await context(t);
    const limits = { monthly: 1, perMinute: 1 };
    const admit = async (ref: string) =>
      ctx.meter.admit({ accountId: accountId(ctx, ref), keyId: await keyId(ctx, ref), limits, quota: true, now: T0 });
    assert.equal((await admit('alice')).quota?.allowed, true);
    assert.equal((await admit('alice')).burst.allowed, false);
    const bob = await admit('bob');
    assert.equal(bob.burst.allowed, true);
    assert.deepEqual(bob.quota, { allowed: true, used: 1, period: '2026-11' });
  });
});

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

describe('rate-limit headers', () => {
  it('X-RateLimit-Remaining decrements; RateLimit-Policy and RateLimit are exact', async (t) => {
    const ctx = await context(t);
    for (let i = 0; i < 5; i++) {
      const res = await ctx.get(`${V1}/catalogue`);
      expectOk(res);
      assert.equal(intHeader(res, 'x-ratelimit-limit'), 5);
      assert.equal(intHeader(res, 'x-ratelimit-remaining'), 4 - i);
      assert.equal(intHeader(res, 'x-ratelimit-reset'), NOV_RESET);
      assert.equal(header(res, 'ratelimit-policy'), `"burst";q=10;w=60, "quota";q=5;w=${NOVEMBER_S}`);
      // All at T0: the oldest request of the window leaves in 60 s.
      assert.equal(header(res, 'ratelimit'), `"burst";r=${9 - i};t=60, "quota";r=${4 - i};t=${NOV_LEFT_S}`);
    }
  });

  it('RateLimit t counts down with the clock, rounded up', async (t) => {
    const ctx = await context(t);
    expectOk(await ctx.get(`${V1}/catalogue`));
    ctx.clock.advance(20_700);
    const res = await ctx.get(`${V1}/catalogue`);
    // burst: the T0 request leaves in 39.3 s; quota: 907179.3 s to the reset. Both rounded up.
    assert.equal(header(res, 'ratelimit'), `"burst";r=8;t=40, "quota";r=3;t=${NOV_LEFT_S - 20}`);
    assert.equal(intHeader(res, 'x-ratelimit-reset'), NOV_RESET);
  });

  it('/me carries the same fields, without counting against the quota', async (t) => {
    const ctx = await context(t);
    expectOk(await ctx.get(`${V1}/catalogue`));
    const me = await ctx.get(`${V1}/me`);
    expectOk(me);
    assert.equal(intHeader(me, 'x-ratelimit-remaining'), 4);
    assert.equal(header(me, 'ratelimit'), `"burst";r=8;t=60, "quota";r=4;t=${NOV_LEFT_S}`);
    assert.deepEqual((me.json() as { usage: unknown }).usage, { period: '2026-11', used: 1, remaining: 4 });
  });

  it('the quota window w is the length of the current month (28, 29, 30, 31 days)', async (t) => {
    const ctx = await context(t, enthusiastLimits(5, 100));
    const months: Array<[string, number, string]> = [
      ['2027-02-10T00:00:00.000Z', 28, '2027-03-01T00:00:00.000Z'],
      ['2028-02-10T00:00:00.000Z', 29, '2028-03-01T00:00:00.000Z'],
      ['2027-04-10T00:00:00.000Z', 30, '2027-05-01T00:00:00.000Z'],
      ['2027-03-31T23:59:59.000Z', 31, '2027-04-01T00:00:00.000Z'],
    ];
    for (const [now, days, reset] of months) {
      ctx.clock.set(now);
      const res = await ctx.get(`${V1}/catalogue`);
      expectOk(res, now);
      assert.equal(header(res, 'ratelimit-policy'), `"burst";q=100;w=60, "quota";q=5;w=${days * 86_400}`, now);
      assert.equal(intHeader(res, 'x-ratelimit-reset'), unixSeconds(reset), now);
      assert.equal(parseRateLimit(res).quota?.t, Math.ceil((Date.parse(reset) - Date.parse(now)) / 1000), now);
    }
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

// ---------------------------------------------------------------------------------------------------------

describe('per-key usage', () => {
  it('counts the counted requests of each key per UTC day', async (t) => {
    const ctx = await context(t, enthusiastLimits(1000, 100));
    ctx.clock.set('2026-11-19T12:00:00.000Z');
    for (let i = 0; i < 3; i++) expectOk(await ctx.get(`${V1}/catalogue`));
    expectOk(await ctx.get(`${V1}/me`));
    assert.equal((await ctx.get(`${V1}/catalogue?limit=0`)).statusCode, 400);
    assert.equal((await ctx.get(`${V1}/no-such-route`)).statusCode, 404);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice', { method: 'OPTIONS' })).statusCode, 204);
    for (let i = 0; i < 2; i++) expectOk(await ctx.get(`${V1}/prices`, 'alice-second'));

    ctx.clock.set('2026-11-19T23:59:59.999Z');
    expectOk(await ctx.get(`${V1}/listings`));
    ctx.clock.set('2026-11-20T00:00:00.000Z');
    expectOk(await ctx.get(`${V1}/listings`));

    const alice = await keyId(ctx, 'alice');
    assert.deepEqual(await countedDays(ctx, alice, '2026-11-01'), [
      { day: '2026-11-20', requests: 1 },
      { day: '2026-11-19', requests: 4 },
    ]);
    assert.deepEqual(await countedDays(ctx, alice, '2026-11-20'), [{ day: '2026-11-20', requests: 1 }]);
    assert.deepEqual(await countedDays(ctx, await keyId(ctx, 'alice-second'), '2026-11-01'), [{ day: '2026-11-19', requests: 2 }]);
    assert.deepEqual(await countedDays(ctx, await keyId(ctx, 'bob'), '2026-11-01'), []);
    // /me is not a counted request.
    expectOk(await ctx.get(`${V1}/me`, 'alice-noscope'));
    assert.deepEqual(await countedDays(ctx, await keyId(ctx, 'alice-noscope'), '2026-11-01'), []);
    // The account's total equals the sum over its keys.
    assert.equal(await storedUsed(ctx, accountId(ctx, 'alice'), '2026-11'), 7);
  });

  it("records each key's last use, as the owner's usage report (`shelfapi keys usage`) shows it", async (t) => {
      const ctx = await context(t, enthusiastLimits(1000, 100));
      assert.equal(await lastUsedAt(ctx, 'alice'), null);
      expectOk(await ctx.get(`${V1}/catalogue`));
      expectOk(await ctx.get(`${V1}/prices`, 'alice-second'));
      ctx.clock.set('2026-11-20T12:00:05.250Z');
      expectOk(await ctx.get(`${V1}/catalogue`));
      assert.equal(await lastUsedAt(ctx, 'alice'), '2026-11-20T12:00:05.250Z');
      assert.equal(await lastUsedAt(ctx, 'alice-second'), FIXTURE_NOW);
      assert.equal(await lastUsedAt(ctx, 'bob'), null);
      assert.equal((await ctx.get(`${V1}/catalogue`, 'alice-revoked')).statusCode, 401);
      assert.equal(await lastUsedAt(ctx, 'alice-revoked'), null, 'a refused key is not "used"');
      // /me is a use of the key, though not a counted request.
      ctx.clock.set('2026-11-20T13:00:00.000Z');
      expectOk(await ctx.get(`${V1}/me`, 'alice-noscope'));
      assert.equal(await lastUsedAt(ctx, 'alice-noscope'), '2026-11-20T13:00:00.000Z');
    },
  );
});
