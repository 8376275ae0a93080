// When Redis goes away or loses what it was sent (docs/contract.md, "Metering"): stopped (SIGSTOP), killed
// (SIGKILL) and restarted, a reply that comes too late or never, its scripts forgotten. Every request is
// answered within 2 seconds, a 503 when the meter cannot be reached, and what stays counted is what was
// answered 200: an admission or a give-back Redis ran but whose reply the server never read is put right,
// once. Each test runs a Redis of its own, whatever TEST_STORE says. Times its answers: one of the timed
// files of scripts/test-all.ts, run alone after the others.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { MeterUnavailableError } from '../../src/metering/meter.js';
import { dayOf } from '../../src/metering/periods.js';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { createTestContext, V1 } from '../helpers/test-app.js';
import { accountId, enthusiastLimits, keyId, lastUsedAt, meUsage, parseRateLimit, storedUsed } from '../helpers/metering-helpers.js';
import { startPrivateRedis } from '../helpers/private-services.js';
import { meterBehindProxy } from '../helpers/reply-dropping-proxy.js';
import { waitFor } from '../helpers/server-process.js';
import { expectUnavailable, T0, timed } from './faults-fixtures.js';

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
