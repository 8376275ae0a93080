// The request log and the usage buckets in each store the statistics can use: the database of the suite's
// store (SQLite, or PostgreSQL without Redis) and, in the PostgreSQL pass, Redis. Records are fed directly
// (the pipeline's part is test/settings/request-log.test.ts): 100 lines kept per key across flushes, the
// newest first, 7 days; buckets summed over keys per hour and day; percentiles from the histogram. How the
// database keeps its rows is stored-request-log.test.ts; how a busy server paces its writes,
// busy-server-writes.test.ts.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { hourOf } from '../../src/usage-stats/usage-buckets.js';
import { emptyHistogram, fineTimeBucket, histogramOf, percentileOf, type TimeHistogram } from '../../src/usage-stats/server-times.js';
import { REQUEST_LOG_KEPT, REQUEST_LOG_MS } from '../../src/usage-stats/usage-stats.js';
import { kinds, record, T0 } from './request-log-fixtures.js';

for (const kind of kinds) {
  describe(`request log and usage buckets: ${kind.name}`, () => {
    let opened: Awaited<ReturnType<(typeof kind)['open']>> | null = null;
    const stats = async () => (opened ??= await kind.open()).stats;
    after(async () => opened?.close());

    test('the newest 100 per key across flushes, newest first; another key apart; nothing older than asked', async () => {
      const s = await stats();
      for (let i = 1; i <= 150; i++) {
        s.record(record(1, T0 + i, i));
        if (i % 40 === 0) await s.flush();
      }
      s.record(record(2, T0, 999, { status: 404, error: 'not_found', outcome: 'bad_request', url: '/developer/v1/nope?key=shelf_live_0123456789012345678901234567890123456789abcdefgh' }));
      await s.flush();
      const log = await s.requestLog(7, 1, new Date(T0 - REQUEST_LOG_MS).toISOString());
      assert.equal(log.length, REQUEST_LOG_KEPT);
      assert.deepEqual(log.map((l) => l.requestId).slice(0, 2), ['r-150', 'r-149']);
      assert.equal(log[99]?.requestId, 'r-51');
      assert.equal(log[0]?.at, new Date(T0 + 150).toISOString());
      assert.equal(log[0]?.durationMs, 3);
      const [other] = await s.requestLog(7, 2, new Date(T0 - 1).toISOString());
      assert.deepEqual(other, {
        at: new Date(T0).toISOString(),
        method: 'GET',
        path: '/developer/v1/nope?key=[redacted]',
        status: 404,
        error: 'not_found',
        outcome: 'bad_request',
        durationMs: 3,
        address: '192.0.2.1',
        requestId: 'r-999',
      });
      assert.equal((await s.requestLog(7, 2, new Date(T0 + 1).toISOString())).length, 0, 'lines before `since` are left out');
    });

    test('a line with what JSON escapes comes back as it was: quotes, backslashes, accents, an emoji, control characters', async () => {
      const s = await stats();
      // Redis gets a flush's operations as one JSON string (redis-usage-stats.ts): the lines inside it are
      // JSON themselves, escaped twice over.
      const url = `/developer/v1/catalogue?q=${'"a" \\b\\\\ é 🎮 \u0007\t\n \\ud800'}`;
      s.record(record(99, T0, 1, { url, status: 400, error: 'bad_request', outcome: 'bad_request', address: '2001:db8::1' }));
      await s.flush();
      const [line] = await s.requestLog(7, 99, new Date(T0 - 1).toISOString());
      assert.equal(line?.path, url);
      assert.equal(line?.address, '2001:db8::1');
    });

    test('buckets per hour and day, summed over the keys asked for; the hour buckets by outcome', async () => {
      const s = await stats();
      const at = Date.parse('2026-11-22T08:15:00.000Z');
      s.record(record(11, at, 1, { durationMs: 0.2 }));
      s.record(record(11, at + 1, 2, { durationMs: 40, endpoint: '/prices', outcome: 'insufficient_scope' }));
      s.record(record(12, at + 3_600_000, 3, { durationMs: 9000, endpoint: null, outcome: 'bad_request' }));
      s.record(record(12, at + 3_600_000, 4, { endpoint: '/me', outcome: null }));
      await s.flush();
      const buckets = await s.usageBuckets(7, [11, 12], ['2026-11-22T08', '2026-11-22T09', '2026-11-22', '2026-11-21']);
      const hour8 = buckets.get('2026-11-22T08')!;
      assert.equal(hour8.get('e:/catalogue/:id'), 1);
      assert.equal(hour8.get('e:/prices'), 1);
      assert.equal(hour8.get('o:counted'), 1);
      assert.equal(hour8.get('o:insufficient_scope'), 1);
      const hour9 = buckets.get('2026-11-22T09')!;
      assert.equal(hour9.get('e:other'), 1);
      assert.equal(hour9.get('e:/me'), 1);
      assert.equal(hour9.get('o:bad_request'), 1);
      assert.equal(hour9.has('o:null'), false, '/me counts in no outcome');
      const day = buckets.get('2026-11-22')!;
      assert.equal(day.get('e:/catalogue/:id'), 1);
      assert.equal(day.get('e:/me'), 1);
      assert.equal(day.get('e:other'), 1);
      assert.equal(day.has('o:counted'), false, 'days keep outcomes in key_outcomes_daily');
      assert.deepEqual([...(buckets.get('2026-11-21') ?? new Map())], []);
      const histogram = histogramOf(day);
      assert.equal(requestsIn(histogram), 4);
      assert.equal(histogram.fine[fineTimeBucket(0.2)], 1);
      assert.equal(day.get(`s:${fineTimeBucket(0.2)}`), 1, 'one field per request, the fine buckets');
      assertNear(percentileOf(histogram, 0.5), 3, 'the 3 ms request (2nd of 4)');
      assertNear(percentileOf(histogram, 0.99), 9000, 'the 9 s request');
      const one = await s.usageBuckets(7, [11], ['2026-11-22']);
      assert.equal(one.get('2026-11-22')?.get('e:/catalogue/:id'), 1);
      assert.equal(one.get('2026-11-22')?.has('e:/me'), false, "key 12's requests are not key 11's");
    });

    test('20 keys over 90 days in one read each: outcomes and buckets summed per day, zero days kept, other keys left out', async () => {
      const s = await stats();
      const DAY = 86_400_000;
      const first = Date.parse('2026-10-01T10:00:00.000Z');
      const keys = Array.from({ length: 20 }, (_, i) => 21 + i);
      for (const k of keys) for (let d = 0; d < 90; d++) s.record(record(k, first + d * DAY, k * 1000 + d));
      s.record(record(21, first + 5 * DAY, 5, { outcome: 'rate_limited', status: 429, error: 'rate_limited', endpoint: '/prices', durationMs: 40 }));
      s.record(record(41, first + 5 * DAY, 6));
      await s.flush();
      const days = await s.keysOutcomes(7, keys, '2026-09-30', '2026-12-29');
      assert.equal(days.length, 91);
      assert.equal(days[0]?.day, '2026-12-29', 'newest first');
      const byDay = new Map(days.map((d) => [d.day, d.counts]));
      assert.deepEqual(byDay.get('2026-10-06'), { ...byDay.get('2026-09-30'), counted: 20, rate_limited: 1 }, "key 41's request is not summed in");
      assert.equal(Object.values(byDay.get('2026-09-30')!).reduce((a, b) => a + b, 0), 0, 'a day without requests is there, all zeros');
      assert.equal(days.reduce((n, d) => n + d.counts.counted, 0), 20 * 90);
      assert.deepEqual((await s.keyOutcomes(7, 21, '2026-10-06', '2026-10-06'))[0]?.counts, { ...byDay.get('2026-09-30'), counted: 1, rate_limited: 1 });
      assert.equal((await s.keysOutcomes(7, [], '2026-10-01', '2026-10-02')).length, 2, 'no keys: the days, all zeros');
      const periods = Array.from({ length: 90 }, (_, d) => new Date(first + d * DAY).toISOString().slice(0, 10));
      const buckets = await s.usageBuckets(7, keys, periods);
      assert.equal(buckets.size, 90);
      for (const period of periods) assert.equal(buckets.get(period)?.get('e:/catalogue/:id'), 20, period);
      const sixth = buckets.get('2026-10-06')!;
      assert.equal(sixth.get('e:/prices'), 1);
      assert.equal(requestsIn(histogramOf(sixth)), 21);
      assertNear(percentileOf(histogramOf(sixth), 0.99), 40, 'the 40 ms request is the slowest 1%');
    });
  });
}

/** Requests a histogram holds. */
function requestsIn(h: TimeHistogram): number {
  return [...h.fine, ...h.old].reduce((a, b) => a + b, 0);
}

/** A percentile read from the fine buckets, within `within` (25% unless said) of the true time. */
function assertNear(p: ReturnType<typeof percentileOf>, ms: number, what: string, within = 0.25): void {
  assert.equal(p?.kind, 'about', what);
  assert.ok(Math.abs(p.ms - ms) <= within * ms, `${what}: ${p.ms} ms for ${ms} ms`);
}

describe('usage buckets: pure parts', () => {
  test('hours, server-time buckets and percentiles', () => {
    assert.equal(hourOf(Date.parse('2026-11-22T08:59:59.999Z')), '2026-11-22T08');
    assert.equal(hourOf(Date.parse('2026-11-22T09:00:00.000Z')), '2026-11-22T09');
    assert.equal(fineTimeBucket(0), 0);
    assert.equal(fineTimeBucket(Number.NaN), 0);
    assert.equal(fineTimeBucket(1e9), fineTimeBucket(70_000), 'everything past 65.5 s in the last bucket');
    const histogram = emptyHistogram();
    assert.equal(percentileOf(histogram, 0.95), null);
    // Every time from 1 ms to 10 s, read back alone, is within 25% (the buckets' middles: within 9%).
    for (let ms = 1; ms <= 10_000; ms *= 1.07) {
      const one = emptyHistogram();
      one.fine[fineTimeBucket(ms)]! += 1;
      assertNear(percentileOf(one, 0.5), ms, `${ms} ms`, 0.1);
    }
    histogram.fine[fineTimeBucket(5)] = 94;
    histogram.fine[fineTimeBucket(200)] = 6;
    assertNear(percentileOf(histogram, 0.5), 5, 'p50');
    assertNear(percentileOf(histogram, 0.94), 5, 'p94');
    assertNear(percentileOf(histogram, 0.95), 200, 'p95');
    // Periods stored before the fine buckets: their `t:` fields, shown as their bound, as then.
    const old = histogramOf(new Map([['t:1', 94], ['t:7', 6], ['e:/me', 3]]));
    assert.deepEqual(percentileOf(old, 0.5), { ms: 1, kind: 'at_most' });
    assert.deepEqual(percentileOf(old, 0.95), { ms: 15, kind: 'at_most' });
    assert.deepEqual(percentileOf(histogramOf(new Map([['t:21', 1]])), 0.5), { ms: 5000, kind: 'over' });
  });

});
