// When the store goes away (docs/contract.md, "Metering"): a meter that cannot be reached answers 503
// service_unavailable with Retry-After and never serves unmetered, and service resumes by itself; a counted
// request that ends in a 5xx is given back; 503 responses never count against the quota.
import { describe, it, type TestContext as NodeTestContext } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import assert from 'node:assert/strict';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import SqliteDatabase from 'better-sqlite3';
import type { LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { MeterUnavailableError } from '../../src/metering/meter.js';
import { dayOf } from '../../src/metering/periods.js';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { SQLITE_BUSY_TIMEOUT_MS } from '../../src/store/database.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import {
  accountId,
  createFaultableContext,
  enthusiastLimits,
  errorBody,
  fireAtOnce,
  intHeader,
  keyId,
  lastUsedAt,
  meUsage,
  parseRateLimit,
  retryAfter,
  SQLITE_ONLY,
  assertBurstEvents,
  storedUsed,
} from '../helpers/metering-helpers.js';
import { startPrivateRedis } from '../helpers/private-services.js';
import { meterBehindProxy } from '../helpers/reply-dropping-proxy.js';
import { waitFor } from '../helpers/server-process.js';

const T0 = Date.parse(FIXTURE_NOW);

async function context(t: NodeTestContext, env: Record<string, string>): Promise<TestContext> {
  // Some of these tests make the handler fail on purpose (500 server_error).
  const ctx = await createTestContext({ env, expectServerErrors: true });
  t.after(() => ctx.close());
  return ctx;
}

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

/** Makes the /listings handler fail with an unexpected error (no such table), on either database. */
async function dropListings(ctx: TestContext): Promise<void> {
  await sql`alter table listings rename to listings_gone`.execute(ctx.store.db);
}

function expectUnavailable(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 503, res.body);
  errorBody(res, 'service_unavailable');
  retryAfter(res);
}

/** The message of a 5xx never shows SQL, a table, a driver error, a file path or a stack. */
function assertNothingLeaks(res: LightMyRequestResponse, ctx: TestContext): void {
  for (const needle of [/sqlite/i, /select|from|table|listings/i, /no such/i, /I\/O/i, /\bat\s+\S+:\d+/, /\.ts\b|\.js\b/, /\//]) {
    assert.doesNotMatch(res.body, needle, `5xx body leaks internals: ${res.body}`);
  }
  assert.ok(!res.body.includes(ctx.store.sqlitePath!), 'the body names the database file');
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

describe('a counted request that ends in a 5xx is given back', () => {
  it('500 server_error (the handler fails after the quota step): usage unchanged, body exactly {error, message}', async (t) => {
    const ctx = await context(t, enthusiastLimits(5, 100));
    const alice = accountId(ctx, 'alice');
    const res0 = await ctx.get(`${V1}/offers`);
    assert.equal(res0.statusCode, 200);
    assert.equal(intHeader(res0, 'x-ratelimit-remaining'), 4);

    // An unexpected fault: the table the /listings handler reads is gone (not an unavailable store).
    await dropListings(ctx);

    // More failures than the month allows: each one is given back, so none is ever quota_exceeded.
    for (let i = 0; i < 7; i++) {
      const res = await ctx.get(`${V1}/listings`);
      assert.equal(res.statusCode, 500, res.body);
      const body = res.json() as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
      assert.equal(body.error, 'server_error');
      assert.equal(typeof body.message, 'string');
      assertNothingLeaks(res, ctx);
      // The X-RateLimit-Remaining of the failed request is after the give-back.
      assert.equal(intHeader(res, 'x-ratelimit-remaining'), 4);
    }
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 1);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 1, remaining: 4 });
    assert.deepEqual(await ctx.meter.keyUsage(alice, await keyId(ctx, 'alice'), '2026-11-01'), [{ day: '2026-11-20', requests: 1 }]);
    // The burst, unlike the quota, counts every request past step 4 whatever its outcome (500s included).
    await assertBurstEvents(ctx, alice, 1 + 7 + 1);

    const after = await ctx.get(`${V1}/offers`);
    assert.equal(after.statusCode, 200);
    assert.equal(intHeader(after, 'x-ratelimit-remaining'), 3);
  });

  it('a given-back 5xx restates every rate-limit field: RateLimit quota r agrees with X-RateLimit-Remaining', async (t) => {
    const ctx = await context(t, enthusiastLimits(5, 100));
    await dropListings(ctx);
    const res = await ctx.get(`${V1}/listings`);
    assert.equal(res.statusCode, 500);
    assert.equal(intHeader(res, 'x-ratelimit-remaining'), 5);
    assert.equal(intHeader(res, 'x-ratelimit-limit'), 5);
    assert.deepEqual(parseRateLimit(res).quota, { r: 5, t: 10.5 * 86_400 });
  });

  it('503 from the data store after the quota step: given back, never counted, then 200 again', SQLITE_ONLY, async (t) => {
    const ctx = await createFaultableContext({ env: enthusiastLimits(3, 100) });
    t.after(() => ctx.close());
    const alice = accountId(ctx, 'alice');
    assert.equal((await ctx.getFaulty(`${V1}/listings`)).statusCode, 200);

    ctx.setDataFault('unavailable');
    for (let i = 0; i < 5; i++) {
      const res = await ctx.getFaulty(`${V1}/listings`);
      expectUnavailable(res);
      assertNothingLeaks(res, ctx);
      assert.equal(intHeader(res, 'x-ratelimit-remaining'), 2);
    }
    // Endpoints that do not touch the failing table are served and counted meanwhile.
    assert.equal((await ctx.getFaulty(`${V1}/offers`)).statusCode, 200);
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 2);
    assert.deepEqual(await ctx.meter.keyUsage(alice, await keyId(ctx, 'alice'), '2026-11-01'), [{ day: '2026-11-20', requests: 2 }]);

    ctx.setDataFault(null);
    const back = await ctx.getFaulty(`${V1}/listings`);
    assert.equal(back.statusCode, 200, back.body);
    assert.equal(intHeader(back, 'x-ratelimit-remaining'), 0);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 3, remaining: 0 });
    ctx.clock.set(T0 + 1);
    const over = await ctx.getFaulty(`${V1}/listings`);
    assert.equal(over.statusCode, 429);
    errorBody(over, 'quota_exceeded');
  });
});

/** Sends a request and measures how long its answer took (real time, whatever the test clock says). */
async function timed(send: () => Promise<LightMyRequestResponse>): Promise<{ res: LightMyRequestResponse; ms: number }> {
  const started = performance.now();
  const res = await send();
  return { res, ms: Math.round(performance.now() - started) };
}

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

describe('Redis stops answering (SIGSTOP) with admissions already on its socket', () => {
  it('every request answers 503 within 2 s, and the admissions Redis runs when it resumes count nothing', async (t) => {
    const redis = await startPrivateRedis();
    const ctx = await createTestContext({ env: { REDIS_URL: redis.url, ...enthusiastLimits(100, 10) } });
    t.after(async () => {
      redis.resume();
      await ctx.close();
      await redis.stop();
    });
    const alice = accountId(ctx, 'alice');
    assert.equal((await ctx.get(`${V1}/catalogue/1`)).statusCode, 200);

    redis.pause();
    const answered = await Promise.all(Array.from({ length: 5 }, () => timed(() => ctx.get(`${V1}/catalogue/1`))));
    const me = await timed(() => ctx.get(`${V1}/me`));
    for (const { res, ms } of [...answered, me]) {
      expectUnavailable(res);
      assert.ok(ms < 2000, `503 after ${ms} ms`);
    }
    t.diagnostic(`503 after ${[...answered, me].map((a) => a.ms).join(', ')} ms`);
    // Readiness (/readyz) reports the stalled meter within the load balancer's patience too.
    const pingStarted = performance.now();
    assert.equal(await ctx.meter.ping(), false);
    const pingMs = Math.round(performance.now() - pingStarted);
    assert.ok(pingMs < 2000, `the readiness ping took ${pingMs} ms`);

    redis.resume();
    // Commands on one connection run in order: once a PING answers, the scripts sent before it have run.
    await waitFor(() => ctx.meter.ping(), 'redis to answer again');
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 1, 'a 503 was counted against the quota');
    const next = await ctx.get(`${V1}/catalogue/1`);
    assert.equal(next.statusCode, 200, next.body);
    // 10 per minute: the first request and this one; the six 503s took no slot of the window.
    assert.equal(parseRateLimit(next).burst.r, 8);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 2, remaining: 98 });
  });
});

describe('a Redis admission whose reply comes back after the server gave up on it', () => {
  it('is undone: the quota, the burst window and the day count are as if it never ran', async (t) => {
    const redis = await startPrivateRedis();
    const meter = new RedisMeter(redis.url, { prefix: 'late:' });
    t.after(async () => {
      await meter.close();
      await redis.stop();
    });
    await meter.ready();
    const limits = { monthly: 100, perMinute: 10 };
    const request = { accountId: 7, keyId: 70, limits, quota: true, now: T0 };
    assert.equal((await meter.admit(request)).quota?.used, 1);

    // Redis runs the script at once (well before the deadline it is given), but the server cannot read the
    // reply before it gives up: its event loop is busy past the deadline, and timers run before I/O.
    const late = meter.admit({ ...request, now: T0 + 1, deadline: Date.now() + 250 });
    const busyUntil = performance.now() + 400;
    while (performance.now() < busyUntil) {
      // a blocked event loop, as under a CPU spike
    }
    await assert.rejects(late, MeterUnavailableError);

    await waitFor(async () => (await meter.used(7, '2026-11')) === 1, 'the late admission to be undone', 5000).catch(() => {});
    assert.equal(await meter.used(7, '2026-11'), 1, 'the late admission stayed counted');
    assert.deepEqual(await meter.keyUsage(7, 70, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 1 }]);
    // The burst window holds the first admission only: 10 per minute, 8 left after the next one.
    assert.equal((await meter.admit({ ...request, now: T0 + 2 })).burst.remaining, 8);
  });
});

describe('a Redis admission whose reply is lost (the connection drops after Redis ran it)', () => {
  it('is given back once Redis answers again: the quota, the burst window and the day count are as if it never ran', async (t) => {
    const { meter, proxy } = await meterBehindProxy(t, 'lost:');
    const request = { accountId: 7, keyId: 70, limits: { monthly: 100, perMinute: 10 }, quota: true, now: T0 };
    assert.equal((await meter.admit(request)).quota?.used, 1);

    // Redis runs the script and writes its counts; the reply never reaches the server, well within the
    // request's deadline: a connection error, not a timeout.
    proxy.dropNextReply();
    await assert.rejects(meter.admit({ ...request, now: T0 + 1, deadline: Date.now() + 60_000 }), MeterUnavailableError);
    assert.ok(proxy.dropped(), 'the reply was not dropped');

    await waitFor(async () => (await meter.used(7, '2026-11')) === 1, 'the lost admission to be given back', 10_000).catch(() => {});
    assert.equal(await meter.used(7, '2026-11'), 1, 'the admission whose reply was lost stayed counted');
    assert.deepEqual(await meter.keyUsage(7, 70, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 1 }]);
    // The burst window holds the first admission only: 10 per minute, 8 left after the next one.
    assert.equal((await meter.admit({ ...request, now: T0 + 2 })).burst.remaining, 8);
    // Once: the next counts stand, whatever attempts to give the lost one back are still around.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(await meter.used(7, '2026-11'), 2);
  });

  it('a lost reply of an admission that counted nothing (over the burst) gives nothing back', async (t) => {
    const { meter, proxy } = await meterBehindProxy(t, 'lost:');
    const request = { accountId: 8, keyId: 80, limits: { monthly: 100, perMinute: 2 }, quota: true, now: T0 };
    for (let i = 0; i < 2; i++) assert.equal((await meter.admit({ ...request, now: T0 + i })).burst.allowed, true);
    proxy.dropNextReply();
    await assert.rejects(meter.admit({ ...request, now: T0 + 2 }), MeterUnavailableError);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(await meter.used(8, '2026-11'), 2);
    assert.equal(await meter.burstUsed(8, T0 + 3), 2);
  });
});

describe('a Redis give-back whose reply is lost, tried again with its token', () => {
  it('lands once: the retry finds the give-back done and takes nothing more', async (t) => {
    const { meter, proxy } = await meterBehindProxy(t, 'lost:');
    const request = { accountId: 9, keyId: 90, limits: { monthly: 100, perMinute: 10 }, quota: true, now: T0 };
    for (let i = 0; i < 3; i++) await meter.admit({ ...request, now: T0 + i });
    assert.equal(await meter.used(9, '2026-11'), 3);

    proxy.dropNextReply();
    await assert.rejects(meter.refund(9, 90, '2026-11', '2026-11-20', Date.now() + 60_000, 'request-1'), MeterUnavailableError);
    assert.ok(proxy.dropped(), 'the reply was not dropped');
    await waitFor(() => meter.ping(), 'the meter to reconnect');
    // give-back.ts retries with the same token; another request's give-back is another token.
    await meter.refund(9, 90, '2026-11', '2026-11-20', Date.now() + 5000, 'request-1');
    assert.equal(await meter.used(9, '2026-11'), 2, 'the retried give-back landed twice');
    await meter.refund(9, 90, '2026-11', '2026-11-20', Date.now() + 5000, 'request-2');
    assert.equal(await meter.used(9, '2026-11'), 1);
    assert.deepEqual(await meter.keyUsage(9, 90, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 1 }]);
  });
});

describe('Redis killed (SIGKILL) under 30 concurrent requests and restarted, appendfsync always', () => {
  it('what is counted equals what was answered 200: a 503 whose admission Redis wrote is given back', async (t) => {
    const redis = await startPrivateRedis({ appendfsyncAlways: true });
    const ctx = await createTestContext({ env: { REDIS_URL: redis.url, ...enthusiastLimits(1_000_000, 1_000_000) } });
    t.after(async () => {
      await ctx.close();
      await redis.destroy();
    });
    const alice = accountId(ctx, 'alice');
    const tally = new Map<number, number>();
    let running = true;
    const client = async () => {
      while (running) {
        const res = await ctx.get(`${V1}/catalogue/1`);
        tally.set(res.statusCode, (tally.get(res.statusCode) ?? 0) + 1);
        // A 503 while Redis is down is answered without any I/O: let timers (the restart) run.
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const clients = Array.from({ length: 30 }, () => client());
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    for (let round = 0; round < 4; round++) {
      // Killed while requests are being served, not while the server is still reconnecting.
      await waitFor(() => ctx.meter.ping(), 'the meter to reconnect');
      await pause(300);
      await redis.stop();
      await pause(100);
      await redis.start();
    }
    await waitFor(() => ctx.meter.ping(), 'the meter to reconnect');
    await pause(300);
    running = false;
    await Promise.all(clients);

    const served = tally.get(200) ?? 0;
    // A kill mid-write tears the file's last transaction: the helper repairs it as docs/operations.md says.
    t.diagnostic(`answers: ${JSON.stringify(Object.fromEntries(tally))}; torn append-only files repaired: ${redis.repaired()}`);
    assert.deepEqual([...tally.keys()].sort(), [200, 503], 'every answer is a 200 or a 503');
    await waitFor(async () => (await storedUsed(ctx, alice, '2026-11')) === served, 'the lost admissions to be given back', 15_000).catch(() => {});
    assert.equal(await storedUsed(ctx, alice, '2026-11'), served, 'counted differs from answered 200');
    assert.deepEqual(await ctx.meter.keyUsage(alice, await keyId(ctx, 'alice'), '2026-11-01'), [{ day: '2026-11-20', requests: served }]);
  });
});

describe('Redis forgets the scripts (SCRIPT FLUSH, a restart)', () => {
  it('the next request is answered and counted exactly once, in the quota and in the statistics', async (t) => {
    const redis = await startPrivateRedis();
    const ctx = await createTestContext({ env: { REDIS_URL: redis.url, ...enthusiastLimits(100, 10) } });
    const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => {});
    t.after(async () => {
      admin.disconnect();
      await ctx.close();
      await redis.stop();
    });
    const alice = accountId(ctx, 'alice');
    const key = await keyId(ctx, 'alice');
    const day = dayOf(ctx.clock.now());
    const countedToday = async () => {
      await ctx.stats.flush();
      return (await ctx.stats.keyOutcomes(alice, key, day, day))[0]?.counts.counted;
    };
    assert.equal((await ctx.get(`${V1}/catalogue/1`)).statusCode, 200);
    assert.equal(await countedToday(), 1);

    assert.equal(await admin.script('FLUSH'), 'OK');
    const afterFlush = await ctx.get(`${V1}/catalogue/1`);
    assert.equal(afterFlush.statusCode, 200, afterFlush.body);
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 2);
    assert.equal(parseRateLimit(afterFlush).burst.r, 8);
    assert.deepEqual(await ctx.meter.keyUsage(alice, key, '2026-11-01', day), [{ day, requests: 2 }]);
    assert.equal(await countedToday(), 2, 'the statistics script ran once after the flush');
    // Each script did meet the flush: Redis answered its EVALSHA with NOSCRIPT before the client sent EVAL.
    // Three: the meter's admission, the statistics' write, and their read (day outcomes summed in Lua).
    assert.match(await admin.info('errorstats'), /^errorstat_NOSCRIPT:count=3\r?$/m);
    assert.equal(await lastUsedAt(ctx, 'alice'), new Date(ctx.clock.now()).toISOString());

    // A restart (no persistence): the counts start again, and the scripts are sent again on the new connection.
    await redis.stop();
    await redis.start();
    await waitFor(() => ctx.meter.ping(), 'the meter to reconnect');
    await waitFor(async () => (await admin.ping().catch(() => '')) === 'PONG', 'the admin connection to reconnect');
    const afterRestart = await ctx.get(`${V1}/catalogue/1`);
    assert.equal(afterRestart.statusCode, 200, afterRestart.body);
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 1);
    assert.equal(await countedToday(), 1);
  });
});
