// When the SQLite store is locked by another connection or process (docs/contract.md, "Metering"): a meter
// that cannot take the lock answers 503 service_unavailable with Retry-After within 2 seconds and never serves
// unmetered, nothing of a 503 is counted, the event loop keeps answering the requests that need no lock, and
// service resumes by itself once the lock is gone. Times its answers: one of the timed files of
// scripts/test-all.ts, run alone after the others.
import { describe, it, type TestContext as NodeTestContext } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import assert from 'node:assert/strict';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import SqliteDatabase from 'better-sqlite3';
import { MeterUnavailableError } from '../../src/metering/meter.js';
import { SQLITE_BUSY_TIMEOUT_MS } from '../../src/store/database.js';
import { V1, type TestContext } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import {
  accountId,
  enthusiastLimits,
  errorBody,
  fireAtOnce,
  intHeader,
  keyId,
  lastUsedAt,
  meUsage,
  retryAfter,
  SQLITE_ONLY,
  assertBurstEvents,
  storedUsed,
} from '../helpers/metering-helpers.js';
import { context, expectUnavailable, T0, timed } from './faults-fixtures.js';

/** A second connection on the store's file holding the write lock until released. */
function lockStore(t: NodeTestContext, ctx: TestContext): { release(): void } {
  const other = new SqliteDatabase(ctx.store.sqlitePath!);
  other.exec('BEGIN EXCLUSIVE');
  t.after(() => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
  });
  return {
    release() {
      other.exec('ROLLBACK');
    },
  };
}

describe('the metering store (SQLite) is locked by another connection', SQLITE_ONLY, () => {
  it('answers 503 service_unavailable with Retry-After, counts nothing, and resumes by itself', async (t) => {
    const ctx = await context(t, enthusiastLimits(100, 10));
    const alice = accountId(ctx, 'alice');
    assert.equal((await ctx.get(`${V1}/catalogue`)).statusCode, 200);

    const lock = lockStore(t, ctx);
    ctx.clock.advance(1000);
    // Never served unmetered: a metered endpoint, /me (burst-metered) and HEAD all answer 503.
    expectUnavailable(await ctx.get(`${V1}/catalogue`));
    expectUnavailable(await ctx.get(`${V1}/me`));
    const head = await ctx.get(`${V1}/catalogue`, 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 503);
    assert.equal(head.body, '');
    retryAfter(head);

    lock.release();
    // Nothing of the three 503s was recorded: quota, burst window, per-key day, last use.
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 1);
    await assertBurstEvents(ctx, alice, 1);
    assert.deepEqual(await ctx.meter.keyUsage(alice, await keyId(ctx, 'alice'), '2026-11-01'), [{ day: '2026-11-20', requests: 1 }]);
    assert.equal(await lastUsedAt(ctx, 'alice'), FIXTURE_NOW);

    // Service resumes with no restart, and the full burst is there: 1 before + 9 now = 10, then limited.
    const back = await ctx.get(`${V1}/catalogue`);
    assert.equal(back.statusCode, 200, back.body);
    assert.equal(intHeader(back, 'x-ratelimit-remaining'), 98);
    for (let i = 0; i < 8; i++) assert.equal((await ctx.get(`${V1}/catalogue`)).statusCode, 200);
    const limited = await ctx.get(`${V1}/catalogue`);
    assert.equal(limited.statusCode, 429);
    errorBody(limited, 'rate_limited');
    assert.deepEqual((await meUsage(ctx, 'bob')).usage, { period: '2026-11', used: 0, remaining: 10_000 });
  });

  it('many requests in flight while locked: every one is answered 503, none counted, then service resumes', async (t) => {
    const ctx = await context(t, enthusiastLimits(100, 30));
    const alice = accountId(ctx, 'alice');
    const lock = lockStore(t, ctx);
    const { tally } = await fireAtOnce(20, (i) => ctx.get(i % 4 === 0 ? `${V1}/me` : `${V1}/catalogue`, i % 2 === 0 ? 'alice' : 'bob'));
    assert.deepEqual(tally, { '503 service_unavailable': 20 });
    lock.release();
    await assertBurstEvents(ctx, alice, 0);
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 0);
    assert.equal(await storedUsed(ctx, accountId(ctx, 'bob'), '2026-11'), 0);

    // Straight after, the meter takes the lock again, and the store's connection still waits its full
    // busy_timeout for other writers (the meter's fail-fast mode must not leak a 0 timeout to it).
    const { tally: after } = await fireAtOnce(10, () => ctx.get(`${V1}/catalogue`));
    assert.deepEqual(after, { '200': 10 });
    assert.equal(ctx.store.sqlite!.pragma('busy_timeout', { simple: true }), SQLITE_BUSY_TIMEOUT_MS);
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 10);
  });

  it('SqliteMeter: unavailable while locked (MeterUnavailableError), admits again as soon as the lock is gone', async (t) => {
    const ctx = await context(t, enthusiastLimits(100, 10));
    const req = { accountId: accountId(ctx, 'alice'), keyId: await keyId(ctx, 'alice'), limits: { monthly: 100, perMinute: 10 }, quota: true, now: T0 };
    const lock = lockStore(t, ctx);
    for (let i = 0; i < 3; i++) await assert.rejects(ctx.meter.admit(req), MeterUnavailableError);
    await assert.rejects(ctx.meter.refund(req.accountId, req.keyId, '2026-11', '2026-11-20'), MeterUnavailableError);
    assert.equal(await ctx.meter.ping(), true, 'reads still answer in WAL mode');
    lock.release();
    assert.equal((await ctx.meter.admit(req)).quota?.used, 1);
    assert.equal(ctx.store.sqlite!.pragma('busy_timeout', { simple: true }), SQLITE_BUSY_TIMEOUT_MS);
  });

  it("a stop while the store is locked does not fail on the owners' statistics: what could not be written is counted as dropped", async (t) => {
    const ctx = await context(t, enthusiastLimits(100, 10));
    const stats = new DatabaseUsageStats(ctx.store);
    const lock = lockStore(t, ctx);
    stats.record({ accountId: accountId(ctx, 'alice'), keyId: await keyId(ctx, 'alice'), at: T0, outcome: 'counted', address: '127.0.0.1', used: true, rejection: null });
    await stats.close();
    assert.equal(stats.dropped, 1);
    lock.release();
  });

  it('requests refused before the meter (401, 405) are answered as usual while it is locked', async (t) => {
    const ctx = await context(t, enthusiastLimits(100, 10));
    const lock = lockStore(t, ctx);
    assert.equal((await ctx.get(`${V1}/catalogue`, null)).statusCode, 401);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice-revoked')).statusCode, 401);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice', { method: 'POST' })).statusCode, 405);
    lock.release();
    // The revoked key's attempt reaches its owner's statistics once the store can be written again.
    await ctx.stats.flush();
    const rejected = await ctx.stats.recentRejections(accountId(ctx, 'alice'), await keyId(ctx, 'alice-revoked'));
    assert.equal(rejected[0]?.status, 401);
  });
});

describe('the SQLite file is locked by another process: the server waits for the lock without freezing', SQLITE_ONLY, () => {
  it('requests waiting on the lock answer 503 within 2 s while the event loop keeps answering others', async (t) => {
    const ctx = await context(t, enthusiastLimits(100, 30));
    assert.equal((await ctx.get(`${V1}/catalogue`)).statusCode, 200);
    const lock = lockStore(t, ctx);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const waiting = Promise.all(Array.from({ length: 10 }, () => timed(() => ctx.get(`${V1}/catalogue/1`))));
    // A request refused before the meter (no key) stands for /healthz, /readyz and anything else the
    // process serves meanwhile: it must not wait behind the ten that wait for the lock.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const probe = await timed(() => ctx.get(`${V1}/catalogue`, null));
    const answered = await waiting;
    loop.disable();
    lock.release();

    assert.equal(probe.res.statusCode, 401);
    assert.ok(probe.ms < 500, `a request needing no lock took ${probe.ms} ms while others waited for it`);
    const loopMaxMs = Math.round(loop.max / 1e6);
    assert.ok(loopMaxMs < 500, `the event loop was blocked for ${loopMaxMs} ms`);
    for (const { res, ms } of answered) {
      expectUnavailable(res);
      assert.ok(ms < 2000, `503 after ${ms} ms`);
    }
    t.diagnostic(`503 after ${answered.map((a) => a.ms).join(', ')} ms; probe ${probe.ms} ms; longest loop stall ${loopMaxMs} ms`);
    // Nothing was counted, and the meter takes the lock again at once.
    assert.equal(await storedUsed(ctx, accountId(ctx, 'alice'), '2026-11'), 1);
    assert.equal((await ctx.get(`${V1}/catalogue/1`)).statusCode, 200);
    assert.equal(ctx.store.sqlite!.pragma('busy_timeout', { simple: true }), SQLITE_BUSY_TIMEOUT_MS);
  });

  it('a lock released before the deadline is taken: the waiting requests are served, not refused', async (t) => {
    const ctx = await context(t, enthusiastLimits(100, 30));
    const lock = lockStore(t, ctx);
    const waiting = Promise.all(Array.from({ length: 5 }, () => ctx.get(`${V1}/catalogue/1`)));
    setTimeout(() => lock.release(), 300);
    const answered = await waiting;
    assert.deepEqual(answered.map((res) => res.statusCode), [200, 200, 200, 200, 200]);
    assert.equal(await storedUsed(ctx, accountId(ctx, 'alice'), '2026-11'), 5);
  });
});
