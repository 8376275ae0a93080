// What a client reads back of its metering (docs/contract.md, "Metering"): the rate-limit headers, exact at
// each instant of a ManualClock and on /me too, and the per-key usage (requests per UTC day, last use) that
// the owner's usage report shows. With the default TEST_STORE the SqliteMeter answers; with
// TEST_STORE=postgres the same tests hold the Redis meter to it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { V1 } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import {
  accountId,
  countedDays,
  enthusiastLimits,
  header,
  intHeader,
  keyId,
  lastUsedAt,
  parseRateLimit,
  storedUsed,
  unixSeconds,
} from '../helpers/metering-helpers.js';
import { context, expectOk, NOV_LEFT_S, NOV_RESET, NOVEMBER_S } from './meter-fixtures.js';

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
