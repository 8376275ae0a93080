// The meter's exact results where the SQLite meter's row per account (sqlite-meter-rows.ts) has edges of its
// own: several admissions of one account in one batch (one read and one write of the row), a perMinute
// beyond what a row holds (the oldest times spill into burst_events) and a plan change that grows or
// shrinks it, the row moving on to a new day and month (and back, as another process's clock may), and a
// store migrated from before the row (migration 0009) carrying on from what the old tables held. With
// TEST_STORE=postgres the same results are asked of the Redis meter, and the migration of PostgreSQL.
import { describe, it, type TestContext as NodeTestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createTestContext, openTestStore, type TestContext } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { accountId, assertBurstEvents, keyId, storedBurstEvents } from '../helpers/metering-helpers.js';
import type { KeyDailyUsage, Meter } from '../../src/metering/meter.js';
import { SqliteMeter } from '../../src/metering/sqlite-meter.js';
import { WindowTimes, decodeTimes, encodeTimes } from '../../src/metering/meter-row.js';
import { PostgresMeter } from '../../src/metering/postgres-meter.js';
import { insertAccount } from '../../src/store/repositories/account.repository.js';
import { insertKey } from '../../src/store/repositories/api-key.repository.js';
import { migrateToLatest } from '../../src/store/database.js';

const T0 = Date.parse(FIXTURE_NOW); // 2026-11-20T12:00:00.000Z

async function context(t: NodeTestContext): Promise<TestContext> {
  const ctx = await createTestContext({});
  t.after(() => ctx.close());
  return ctx;
}

/** Days with requests (the Redis meter leaves out a day given back to zero; the database keeps its row). */
function counted(days: KeyDailyUsage[]): KeyDailyUsage[] {
  return days.filter((d) => d.requests > 0);
}

describe('the meter where one row holds an account', () => {
  it('admissions of one account asked for at once (one batch) each get their own slot and unit', async (t) => {
    const ctx = await context(t);
    const alice = accountId(ctx, 'alice');
    const keys = [await keyId(ctx, 'alice'), await keyId(ctx, 'alice-second')];
    const limits = { monthly: 12, perMinute: 15 };
    const admissions = await Promise.all(
      Array.from({ length: 20 }, (_, i) => ctx.meter.admit({ accountId: alice, keyId: keys[i % 2]!, limits, quota: true, now: T0 + i })),
    );
    const allowed = admissions.filter((a) => a.burst.allowed);
    // Asked for in order, decided in order: the first 15 admitted, each told the first (at T0) leaves first.
    admissions.forEach((a, i) => {
      assert.deepEqual(a.burst, { allowed: i < 15, remaining: Math.max(0, 14 - i), resetInMs: 60_000 - i }, `admission ${i}`);
    });
    const counts = allowed.filter((a) => a.quota?.allowed).map((a) => a.quota!.used).sort((a, b) => a - b);
    assert.deepEqual(counts, Array.from({ length: 12 }, (_, i) => i + 1));
    assert.equal(allowed.filter((a) => a.quota?.allowed === false).length, 3);
    assert.equal(await ctx.meter.used(alice, '2026-11'), 12);
    const perKey = await Promise.all(keys.map((k) => ctx.meter.keyUsage(alice, k, '2026-11-20', '2026-11-20')));
    assert.deepEqual(perKey, [[{ day: '2026-11-20', requests: 6 }], [{ day: '2026-11-20', requests: 6 }]]);
    // Each key's last use is its last admitted request (14 and 13 ms after T0), not the batch's last.
    const last = await ctx.meter.lastUsed(alice, keys);
    assert.deepEqual([last.get(keys[0]!), last.get(keys[1]!)], [new Date(T0 + 14).toISOString(), new Date(T0 + 13).toISOString()]);
    assert.equal(await ctx.meter.burstUsed(alice, T0 + 19), 15);
  });

  it('a perMinute of 2,000 (more times than a row holds), then a plan change that shrinks it and grows it', async (t) => {
    const ctx = await context(t);
    const alice = accountId(ctx, 'alice');
    const key = await keyId(ctx, 'alice');
    const admit = (perMinute: number, now: number) =>
      ctx.meter.admit({ accountId: alice, keyId: key, limits: { monthly: 100_000, perMinute }, quota: true, now });
    for (let i = 0; i < 2000; i++) {
      const burst = (await admit(2000, T0 + i * 20)).burst;
      if (burst.remaining !== 1999 - i || burst.resetInMs !== 60_000 - i * 20) assert.fail(`admission ${i}: ${JSON.stringify(burst)}`);
    }
    assert.deepEqual((await admit(2000, T0 + 40_000)).burst, { allowed: false, remaining: 0, resetInMs: 20_000 });
    assert.equal(await ctx.meter.burstUsed(alice, T0 + 40_000), 2000);
    // At T0+60 s the first has left: one slot, and the next frees 20 ms later.
    assert.deepEqual((await admit(2000, T0 + 60_000)).burst, { allowed: true, remaining: 0, resetInMs: 20 });
    // Down to 10 a minute: at T0+99.8 s the window (T0+39.8 s, T0+99.8 s] holds 1991..1999 and the one at T0+60 s.
    assert.deepEqual((await admit(10, T0 + 99_800)).burst, { allowed: false, remaining: 0, resetInMs: 20 });
    assert.deepEqual((await admit(10, T0 + 99_820)).burst, { allowed: true, remaining: 0, resetInMs: 20 });
    assert.equal(await ctx.meter.burstUsed(alice, T0 + 99_820), 10);
    // Up to 5000: room again, counted from the same window.
    assert.deepEqual((await admit(5000, T0 + 99_820)).burst, { allowed: true, remaining: 5000 - 10 - 1, resetInMs: 20 });
    assert.equal(await ctx.meter.burstUsed(alice, T0 + 99_820), 11);
    assert.equal(await ctx.meter.used(alice, '2026-11'), 2003);
    // Minutes on, the window is empty whatever the limit.
    assert.deepEqual((await admit(2, T0 + 300_000)).burst, { allowed: true, remaining: 1, resetInMs: 60_000 });
    const stored = await storedBurstEvents(ctx, alice);
    if (stored !== null) assert.equal(stored, 1, 'the times that left the window are gone from the store');
  });

  it('spills within one batch: each admission counts the ones before it, and times spilled in the batch leave the window in it', async (t) => {
    const ctx = await context(t);
    const alice = accountId(ctx, 'alice');
    const key = await keyId(ctx, 'alice');
    const limits = { monthly: 100_000, perMinute: 2500 };
    const batch = (times: number[]) => Promise.all(times.map((now) => ctx.meter.admit({ accountId: alice, keyId: key, limits, quota: true, now })));
    // 2,200 at once, 10 ms apart: the last 300 spill past what the row holds, all in this batch.
    const first = await batch(Array.from({ length: 2200 }, (_, i) => T0 + i * 10));
    first.forEach(({ burst }, i) => {
      if (!burst.allowed || burst.remaining !== 2499 - i || burst.resetInMs !== 60_000 - i * 10) assert.fail(`admission ${i}: ${JSON.stringify(burst)}`);
    });
    assert.equal(await ctx.meter.burstUsed(alice, T0 + 21_990), 2200);
    await assertBurstEvents(ctx, alice, 2200);
    // A minute on, a batch whose each admission finds one more of the oldest (spilled before) gone.
    const second = await batch(Array.from({ length: 100 }, (_, j) => T0 + 60_000 + j * 10));
    second.forEach(({ burst }, j) => {
      if (!burst.allowed || burst.remaining !== 300 || burst.resetInMs !== 10) assert.fail(`admission ${j} of the second batch: ${JSON.stringify(burst)}`);
    });
    // One batch of 2,000 (1 ms apart, 100 spilled within it) and one more at 61 s past its first: the times
    // up to 1 s past the first, those spilled in the batch among them, have left.
    const later = T0 + 600_000;
    const third = await batch([...Array.from({ length: 2000 }, (_, i) => later + i), later + 61_000]);
    assert.deepEqual(third.at(-1)!.burst, { allowed: true, remaining: 2500 - 999 - 1, resetInMs: 1 });
    assert.equal(await ctx.meter.burstUsed(alice, later + 61_000), 1000);
    await assertBurstEvents(ctx, alice, 1000);
    assert.equal(await ctx.meter.used(alice, '2026-11'), 4301);
  });

  it('a new day and a new month, give-backs of the one before, and a clock a little behind', async (t) => {
    const ctx = await context(t);
    const alice = accountId(ctx, 'alice');
    const [key, second] = [await keyId(ctx, 'alice'), await keyId(ctx, 'alice-second')];
    const limits = { monthly: 1000, perMinute: 1000 };
    const admit = (keyId: number, iso: string, quota = true) => ctx.meter.admit({ accountId: alice, keyId, limits, quota, now: Date.parse(iso) });

    assert.equal((await admit(key, '2026-11-30T23:59:58.000Z')).quota?.used, 1);
    assert.equal((await admit(second, '2026-11-30T23:59:59.000Z')).quota?.used, 2);
    assert.deepEqual((await admit(key, '2026-12-01T00:00:01.000Z')).quota, { allowed: true, used: 1, period: '2026-12' });
    assert.deepEqual((await admit(second, '2026-12-01T00:00:02.000Z', false)).quota, { allowed: true, used: 1, period: '2026-12' });
    // A request of November answered 5xx after midnight is given back to November and its day.
    await ctx.meter.refund(alice, key, '2026-11', '2026-11-30');
    assert.equal(await ctx.meter.used(alice, '2026-11'), 1);
    assert.equal(await ctx.meter.used(alice, '2026-12'), 1);
    assert.deepEqual(counted(await ctx.meter.keyUsage(alice, key, '2026-11-01', '2026-12-31')), [{ day: '2026-12-01', requests: 1 }]);
    assert.deepEqual(counted(await ctx.meter.keyUsage(alice, second, '2026-11-01', '2026-12-31')), [{ day: '2026-11-30', requests: 1 }]);
    // Another process whose clock is still in November counts there, and December's counts stay.
    assert.deepEqual((await admit(key, '2026-11-30T23:59:59.500Z')).quota, { allowed: true, used: 2, period: '2026-11' });
    assert.deepEqual((await admit(key, '2026-12-01T00:00:03.000Z')).quota, { allowed: true, used: 2, period: '2026-12' });
    assert.deepEqual(counted(await ctx.meter.keyUsage(alice, key, '2026-11-01', '2026-12-31')), [
      { day: '2026-12-01', requests: 2 },
      { day: '2026-11-30', requests: 1 },
    ]);
    await ctx.meter.refund(alice, key, '2026-12', '2026-12-01');
    assert.equal(await ctx.meter.used(alice, '2026-12'), 1);
    assert.equal(await ctx.meter.used(alice, '2026-11'), 2);
    // A key's last use is its last admitted request, counted or not, whichever day the row holds.
    const last = await ctx.meter.lastUsed(alice, [key, second]);
    assert.deepEqual([last.get(key), last.get(second)], ['2026-12-01T00:00:03.000Z', '2026-12-01T00:00:02.000Z']);
    assert.deepEqual(counted(await ctx.meter.keyUsage(alice, key, '2026-12-01', '2026-12-01')), [{ day: '2026-12-01', requests: 1 }]);
    assert.deepEqual(await ctx.meter.keyUsage(alice, key, '2026-12-02', '2026-12-31'), []);
  });
});

describe('the window times as a row stores them (meter-row.ts)', () => {
  it('read back as written: in order, out of order, fractional, and spread wider than 2-byte offsets', () => {
    const cases = [
      [T0],
      [T0, T0 + 1, T0 + 1, T0 + 59_999],
      [T0 - 5, T0, T0 + 7],
      [T0 + 0.5, T0 + 1000],
      [T0, T0 + 70_000],
      Array.from({ length: 1900 }, (_, i) => T0 + i * 31),
    ];
    for (const times of cases) assert.deepEqual(decodeTimes(WindowTimes.decode(encodeTimes(times)).encode()), times);
    // Pruned from the front and added at the back, as an admission does, then read back.
    const window = WindowTimes.decode(encodeTimes([T0, T0 + 10, T0 + 20]));
    assert.equal(window.prune(T0 + 10), 2);
    window.add(T0 + 40_000);
    window.add(T0 + 30); // another process's clock, a little behind
    window.add(T0 + 80_000); // past 65.5 s from the base
    assert.deepEqual(decodeTimes(window.encode()), [T0 + 20, T0 + 30, T0 + 40_000, T0 + 80_000]);
    assert.equal(window.countIn(T0 + 20, T0 + 40_000), 2);
    const wide = WindowTimes.decode(encodeTimes([T0]));
    wide.add(T0 + 70_000);
    assert.deepEqual(decodeTimes(wide.encode()), [T0, T0 + 70_000]);
  });
});

describe('a store migrated from before the row per account (migration 0009)', () => {
  it('carries on from the window, quota, per-key days and last use the old tables hold', async () => {
    const old = await openTestStore({ upTo: '0008-access-version' });
    try {
      const db = old.store.db;
      const created = new Date(T0 - 86_400_000 * 30).toISOString();
      const alice = await insertAccount(db, { email: 'alice@example.com', plan: 'enthusiast', planStatus: 'active', createdAt: created });
      const newKey = (name: string) =>
        insertKey(db, { accountId: alice, name, keyHash: `hash-${name}`, lastFour: 'abcd', scopes: [], createdAt: created, expiresAt: null, revokedAt: null });
      const [key, other] = [await newKey('one'), await newKey('two')];
      // What the meter before the migration left: two requests in the window, 41 this month, and per-key days.
      await db.insertInto('burst_events').values([{ account_id: alice, at_ms: T0 - 30_000 }, { account_id: alice, at_ms: T0 - 10_000 }]).execute();
      await db.insertInto('burst_windows').values({ account_id: alice, n: 2 }).execute();
      await db.insertInto('quota_usage').values([{ account_id: alice, period: '2026-11', used: 41 }, { account_id: alice, period: '2026-10', used: 9 }]).execute();
      await db.insertInto('key_usage_daily').values([{ key_id: key, day: '2026-11-20', requests: 7 }, { key_id: key, day: '2026-11-19', requests: 3 }]).execute();
      await db.updateTable('api_keys').set({ last_used_at: '2026-11-18T10:00:00.000Z' }).where('id', '=', other).execute();
      await db.updateTable('api_keys').set({ last_used_at: new Date(T0 - 10_000).toISOString() }).where('id', '=', key).execute();

      await migrateToLatest(old.store);
      const meter: Meter = old.store.sqlite !== null ? new SqliteMeter(old.store.sqlite) : new PostgresMeter(old.store);
      const limits = { monthly: 42, perMinute: 3 };
      const admit = (now: number) => meter.admit({ accountId: alice, keyId: key, limits, quota: true, now });

      assert.deepEqual(await admit(T0), { burst: { allowed: true, remaining: 0, resetInMs: 30_000 }, quota: { allowed: true, used: 42, period: '2026-11' } });
      assert.deepEqual(await admit(T0), { burst: { allowed: false, remaining: 0, resetInMs: 30_000 }, quota: null });
      assert.deepEqual(await admit(T0 + 30_000), {
        burst: { allowed: true, remaining: 0, resetInMs: 20_000 },
        quota: { allowed: false, used: 42, period: '2026-11' },
      });
      assert.equal(await meter.burstUsed(alice, T0 + 30_000), 3);
      assert.equal(await meter.used(alice, '2026-11'), 42);
      assert.equal(await meter.used(alice, '2026-10'), 9);
      assert.deepEqual(await meter.keyUsage(alice, key, '2026-11-01', '2026-11-30'), [
        { day: '2026-11-20', requests: 8 },
        { day: '2026-11-19', requests: 3 },
      ]);
      const last = await meter.lastUsed(alice, [key, other]);
      assert.deepEqual([last.get(key), last.get(other)], [new Date(T0 + 30_000).toISOString(), '2026-11-18T10:00:00.000Z']);
      await meter.refund(alice, key, '2026-11', '2026-11-20');
      assert.equal(await meter.used(alice, '2026-11'), 41);
      assert.deepEqual(await meter.keyUsage(alice, key, '2026-11-20', '2026-11-20'), [{ day: '2026-11-20', requests: 7 }]);
      await meter.close();
    } finally {
      await old.close();
    }
  });
});
