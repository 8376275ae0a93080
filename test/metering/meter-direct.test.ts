// The meter called directly, at exact instants (docs/contract.md, "Metering"): the sliding 60-second burst
// window, the calendar-month quota counted only when asked, refunds, and that a refusal records nothing. With
// the default TEST_STORE that is the SqliteMeter; with TEST_STORE=postgres the same tests hold the Redis meter
// to it (the cluster suite, test/cluster/redis-cluster.test.ts, looks for this describe's name). The same
// rules as a client sees them through HTTP: meter-limits-http.test.ts and meter-headers-usage.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { PlanLimits } from '../../src/domain/scopes.js';
import { TEST_STORE } from '../helpers/test-app.js';
import { accountId, assertBurstEvents, countedDays, keyId, storedUsed } from '../helpers/metering-helpers.js';
import { context, T0 } from './meter-fixtures.js';

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
