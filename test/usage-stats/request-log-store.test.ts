// The request log and the usage buckets in each store the statistics can use: the database of the suite's
// store (SQLite, or PostgreSQL without Redis) and, in the PostgreSQL pass, Redis. Records are fed directly
// (the pipeline's part is test/settings/request-log.test.ts): 100 lines kept per key across flushes, the
// newest first, 7 days; buckets summed over keys per hour and day; percentiles from the histogram.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import { PURGE_ROWS_PER_WRITE } from '../../src/usage-stats/database-usage-stats-purge.js';
import { chunkOf } from '../../src/usage-stats/request-log-chunks.js';
import { migrateTo, migrateToLatest } from '../../src/store/database.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import { hourOf, HOURS_KEPT_MS } from '../../src/usage-stats/usage-buckets.js';
import { emptyHistogram, fineTimeBucket, histogramOf, percentileOf, type TimeHistogram } from '../../src/usage-stats/server-times.js';
import { mergeLog } from '../../src/usage-stats/stats-batch.js';
import { COUNT_ROWS_PER_WRITE, FLUSH_RECORDS, LOG_LINES_PER_WRITE, LOG_WRITE_MS } from '../../src/usage-stats/stats-pace.js';
import { REQUEST_LOG_KEPT, REQUEST_LOG_MS, type RequestLogEntry, type RequestRecord, type StatsBatch } from '../../src/usage-stats/usage-stats.js';
import { openTestStore, TEST_REDIS_URL, TEST_STORE, testRedisPrefix } from '../helpers/test-app.js';

const T0 = Date.parse('2026-11-20T12:00:00.000Z');

function record(keyId: number, at: number, i: number, over: Partial<RequestRecord['call'] & { outcome: RequestRecord['outcome'] }> = {}): RequestRecord {
  const { outcome = 'counted', ...call } = over;
  return {
    accountId: 7,
    keyId,
    at,
    outcome,
    used: true,
    address: '192.0.2.1',
    rejection: null,
    call: { method: 'GET', url: `/developer/v1/catalogue/${i}`, status: 200, error: null, durationMs: 3, address: '192.0.2.1', requestId: `r-${i}`, endpoint: '/catalogue/:id', ...call },
  };
}

/** The statistics writers, each telling `onWrite` of every batch it is given to write (null: nobody listens). */
class WatchedDatabaseStats extends DatabaseUsageStats {
  onWrite: ((batch: StatsBatch) => void) | null = null;
  protected override async write(batch: StatsBatch): Promise<void> {
    this.onWrite?.(batch);
    await super.write(batch);
  }
}
class WatchedRedisStats extends RedisUsageStats {
  onWrite: ((batch: StatsBatch) => void) | null = null;
  protected override async write(batch: StatsBatch): Promise<void> {
    this.onWrite?.(batch);
    await super.write(batch);
  }
}

// The database's writer; on PostgreSQL runs Redis's too (the app there records into Redis).
const kinds: Array<{ name: string; open: () => Promise<{ stats: WatchedDatabaseStats | WatchedRedisStats; close: () => Promise<void> }> }> = [
  {
    name: `database (${TEST_STORE})`,
    open: async () => {
      const store = await openTestStore();
      const stats = new WatchedDatabaseStats(store.store);
      return { stats, close: async () => { await stats.close(); await store.close(); } };
    },
  },
];
if (TEST_STORE === 'postgres') {
  kinds.push({
    name: 'Redis',
    open: async () => {
      const stats = new WatchedRedisStats(TEST_REDIS_URL, { prefix: testRedisPrefix('reqlog') });
      await stats.ready();
      return { stats, close: () => stats.close() };
    },
  });
}

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

describe(`the stored request log: one row per key and write, swept in the order written (${TEST_STORE})`, () => {
  const linesStored = async (store: Awaited<ReturnType<typeof openTestStore>>, keyId: number) =>
    Number(
      (await store.store.db.selectFrom('key_request_log_chunks').select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('lines'), eb.lit(0)).as('n')).where('key_id', '=', keyId).executeTakeFirstOrThrow())
        .n,
    );

  test("a key written 1,000 times in writes of 40 keeps 120 lines (three chunks) when each write's chunks are tested at the next three writes", async () => {
    const store = await openTestStore();
    const stats = new DatabaseUsageStats(store.store, { sweepAges: [0, 0, 0] });
    try {
      let most = 0;
      let least = Infinity;
      for (let i = 1; i <= 1000; i++) {
        stats.record(record(5, T0 + i, i));
        if (i % 40 === 0) {
          await stats.flush();
          const n = await linesStored(store, 5);
          most = Math.max(most, n);
          if (i >= 160) least = Math.min(least, n);
        }
      }
      // A chunk goes at the first test after its key wrote 100 newer lines: at the third write after it.
      assert.equal(most, 120, `at most ${most} lines were stored`);
      assert.equal(least, 120);
      const shown = await stats.requestLog(7, 5, new Date(T0).toISOString());
      assert.equal(shown.length, REQUEST_LOG_KEPT);
      assert.deepEqual([shown[0]?.requestId, shown[99]?.requestId], ['r-1000', 'r-901']);
    } finally {
      await stats.close();
      await store.close();
    }
  });

  test('chunks a process never swept (it stopped) go at the sweep of every chunk that the next process starts at its first write', async () => {
    const store = await openTestStore();
    let stats = new DatabaseUsageStats(store.store, { sweepAges: [] });
    try {
      for (let i = 1; i <= 1000; i++) {
        stats.record(record(6, T0 + i, i));
        if (i % 40 === 0) await stats.flush();
      }
      assert.equal(await linesStored(store, 6), 1000, 'never swept');
      await stats.close();
      stats = new DatabaseUsageStats(store.store);
      stats.record(record(6, T0 + 1001, 1001));
      await stats.flush();
      stats.record(record(6, T0 + 1002, 1002));
      await stats.flush();
      // Kept: every chunk with fewer than 100 lines newer than its newest (1002, 1001, 961-1000, 921-960, 881-920).
      assert.equal(await linesStored(store, 6), 122);
      const shown = await stats.requestLog(7, 6, new Date(T0).toISOString());
      assert.deepEqual([shown.length, shown[0]?.requestId, shown[99]?.requestId], [REQUEST_LOG_KEPT, 'r-1002', 'r-903']);
    } finally {
      await stats.close();
      await store.close();
    }
  });

  test('two servers writing one key in turns, their lines interleaved in time: the newest 100 exactly, in order, after sweeps', async () => {
    const store = await openTestStore();
    const a = new DatabaseUsageStats(store.store, { sweepAges: [0, 0, 0] });
    const b = new DatabaseUsageStats(store.store, { sweepAges: [0, 0, 0] });
    try {
      // Server a answers the odd requests, b the even ones, each writing 25 at a time: every chunk of one
      // overlaps in time a chunk of the other.
      for (let i = 1; i <= 600; i++) {
        (i % 2 === 1 ? a : b).record(record(8, T0 + i * 10, i));
        if (i % 50 === 0) {
          await a.flush();
          await b.flush();
        }
      }
      const shown = await a.requestLog(7, 8, new Date(T0).toISOString());
      assert.deepEqual(
        shown.map((l) => l.requestId),
        Array.from({ length: 100 }, (_, n) => `r-${600 - n}`),
      );
      assert.ok((await linesStored(store, 8)) < 300, 'swept');
    } finally {
      await a.close();
      await b.close();
      await store.close();
    }
  });

  test('chunks whose newest line is past 7 days go at the purge (a process purges at its first write)', async () => {
    const store = await openTestStore();
    let stats = new DatabaseUsageStats(store.store);
    try {
      stats.record(record(10, T0 - REQUEST_LOG_MS - 1, 1));
      stats.record(record(11, T0 - REQUEST_LOG_MS + 1, 2));
      await stats.flush();
      await stats.close();
      stats = new DatabaseUsageStats(store.store);
      stats.record(record(12, T0, 3));
      await stats.flush();
      assert.deepEqual([await linesStored(store, 10), await linesStored(store, 11), await linesStored(store, 12)], [0, 1, 1]);
    } finally {
      await stats.close();
      await store.close();
    }
  });

  test('lines of the same time come newest written first; a chunk changed by hand into what is not a line is left out, the rest shown', async () => {
    const store = await openTestStore();
    const stats = new DatabaseUsageStats(store.store);
    try {
      for (let i = 1; i <= 3; i++) stats.record(record(9, T0, i));
      await stats.flush();
      stats.record(record(9, T0, 4));
      await stats.flush();
      assert.deepEqual((await stats.requestLog(7, 9, new Date(T0).toISOString())).map((l) => l.requestId), ['r-4', 'r-3', 'r-2', 'r-1']);
      const first = await store.store.db.selectFrom('key_request_log_chunks').select(['id', 'body']).where('key_id', '=', 9).orderBy('id').executeTakeFirstOrThrow();
      const lines = JSON.parse(first.body) as unknown[][];
      lines[1]![3] = 'two hundred';
      await store.store.db.updateTable('key_request_log_chunks').set({ body: JSON.stringify(lines) }).where('id', '=', first.id).execute();
      assert.deepEqual((await stats.requestLog(7, 9, new Date(T0).toISOString())).map((l) => l.requestId), ['r-4', 'r-3', 'r-1']);
      await store.store.db.updateTable('key_request_log_chunks').set({ body: 'not json' }).where('id', '=', first.id).execute();
      assert.deepEqual((await stats.requestLog(7, 9, new Date(T0).toISOString())).map((l) => l.requestId), ['r-4']);
    } finally {
      await stats.close();
      await store.close();
    }
  });
});

describe(`the purge goes a slice of each table a write, ${PURGE_ROWS_PER_WRITE} rows at most (${TEST_STORE})`, () => {
  type Db = Awaited<ReturnType<typeof openTestStore>>['store']['db'];
  const SLICE = 3;
  const OLD_KEYS = Array.from({ length: 10 }, (_, k) => 20 + k);
  const oldHour = hourOf(T0 - HOURS_KEPT_MS - 3_600_000);
  const oldDay = new Date(T0 - 8 * 86_400_000).toISOString().slice(0, 10);
  const logLine = (i: number, at: number): RequestLogEntry => ({
    at: new Date(at).toISOString(),
    method: 'GET',
    path: `/developer/v1/catalogue/${i}`,
    status: 200,
    error: null,
    outcome: 'counted',
    durationMs: 3,
    address: null,
    requestId: `r-${i}`,
  });

  /**
   * What another process left, written as rows: keys 20-29 each a chunk just past 7 days and one just within,
   * two hour buckets just past 2 days (an endpoint's, which the purge adds to its day row, and an outcome's,
   * which it adds to key_outcomes_daily), one just within and a day bucket of 8 days ago (days are not purged);
   * key 40 150 lines within 7 days in three chunks, the first of which the sweep of every chunk deletes.
   */
  async function leftBehind(db: Db): Promise<void> {
    const chunks = OLD_KEYS.flatMap((k) => [chunkOf(k, [logLine(k, T0 - REQUEST_LOG_MS - 60_000)]), chunkOf(k, [logLine(k, T0 - REQUEST_LOG_MS + 60_000)])]);
    for (let c = 0; c < 3; c++) chunks.push(chunkOf(40, Array.from({ length: 50 }, (_, i) => logLine(c * 50 + i, T0 - 3_600_000 + c * 50 + i))));
    await db.insertInto('key_request_log_chunks').values(chunks).execute();
    await db
      .insertInto('key_usage_buckets')
      .values(
        OLD_KEYS.flatMap((k) => [
          { key_id: k, period: oldHour, field: 'e:/catalogue/:id', requests: 1 },
          { key_id: k, period: oldHour, field: 'o:counted', requests: 1 },
          { key_id: k, period: hourOf(T0 - HOURS_KEPT_MS), field: 'e:/catalogue/:id', requests: 1 },
          { key_id: k, period: oldDay, field: 'e:/catalogue/:id', requests: 1 },
        ]),
      )
      .execute();
  }

  /** The rows of the keys left behind (below 90): past their time or not. */
  async function rowsLeft(db: Db) {
    const count = async (query: { executeTakeFirstOrThrow(): Promise<{ n: number | string | bigint }> }) => Number((await query.executeTakeFirstOrThrow()).n);
    const chunks = db.selectFrom('key_request_log_chunks').select((eb) => eb.fn.countAll<number | string>().as('n')).where('key_id', '<', 90);
    const buckets = db.selectFrom('key_usage_buckets').select((eb) => eb.fn.countAll<number | string>().as('n')).where('key_id', '<', 90);
    const hours = buckets.where(sql<number>`length(period)`, '=', 13);
    return {
      oldChunks: await count(chunks.where('newest_ms', '<', T0 - REQUEST_LOG_MS)),
      oldHours: await count(hours.where('period', '<', hourOf(T0 - HOURS_KEPT_MS))),
      keptChunks: await count(chunks.where('newest_ms', '>=', T0 - REQUEST_LOG_MS)),
      keptHours: await count(hours.where('period', '>=', hourOf(T0 - HOURS_KEPT_MS))),
      days: await count(buckets.where('period', '=', oldDay)),
      // The old hours' endpoint counts added to their day by the purge: one a key, each exactly once.
      rolled: Number(
        (await db.selectFrom('key_usage_buckets').select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('requests'), eb.lit(0)).as('n')).where('key_id', '<', 90).where('period', '=', oldHour.slice(0, 10)).executeTakeFirstOrThrow()).n,
      ),
      linesOf40: Number((await db.selectFrom('key_request_log_chunks').select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('lines'), eb.lit(0)).as('n')).where('key_id', '=', 40).executeTakeFirstOrThrow()).n),
    };
  }

  /** Statistics with a write of nothing: what a busy flush hands over when neither its log nor its counts are due. */
  class Purging extends DatabaseUsageStats {
    writeNothing(): Promise<void> {
      return this.write({ outcomes: [], lastUse: [], rejections: [], log: [], buckets: [] });
    }
  }

  /** The first write of a process (a purge's first slice), then writes of nothing while old rows are left and for `more` writes after; what is left after each. */
  async function purgeWrites(stats: Purging, db: Db, more = 0): Promise<Array<Awaited<ReturnType<typeof rowsLeft>>>> {
    stats.record(record(99, T0, 1));
    await stats.flush();
    const seen = [await rowsLeft(db)];
    let after = 0;
    while (seen.length < 20 && after <= more) {
      const last = seen[seen.length - 1]!;
      if (last.oldChunks === 0 && last.oldHours === 0) after++;
      if (after > more) break;
      await stats.writeNothing();
      seen.push(await rowsLeft(db));
    }
    return seen;
  }

  test(`with ${SLICE} rows a write, 10 chunks past 7 days and 20 hour buckets past 2 days go over 7 writes, ${SLICE} of each table a write, every write going on with it (one of nothing else too); every other row stays`, async () => {
    const store = await openTestStore();
    const stats = new Purging(store.store, { purgeRowsPerWrite: SLICE });
    try {
      await leftBehind(store.store.db);
      const kept = { keptChunks: 13, keptHours: 10, days: 10, linesOf40: 150 };
      assert.deepEqual(await rowsLeft(store.store.db), { oldChunks: 10, oldHours: 20, rolled: 0, ...kept });
      // The old hours' day reads the same before the purge (from its hours) and after (from its rows).
      const day = oldHour.slice(0, 10);
      const dayRead = async () => (await stats.usageBuckets(0, OLD_KEYS, [day])).get(day);
      // The 10 old hours' endpoint counts, and the 10 kept hours' when they are of the same day.
      const inDay = new Map([['e:/catalogue/:id', 10 + (hourOf(T0 - HOURS_KEPT_MS).startsWith(day) ? 10 : 0)]]);
      assert.deepEqual(await dayRead(), inDay, "the day from its hours, the outcomes' apart");
      const countedOn = async () => (await stats.keysOutcomes(0, OLD_KEYS, day, day))[0]?.counts.counted;
      const outcomeRows = () => store.store.db.selectFrom('key_outcomes_daily').select(['key_id', 'day', 'outcome', 'requests']).where('key_id', 'in', OLD_KEYS).execute();
      assert.equal(await countedOn(), 10, "the day's outcomes from its hours");
      assert.deepEqual(await outcomeRows(), []);
      const seen = await purgeWrites(stats, store.store.db);
      assert.deepEqual(await dayRead(), inDay, 'the old hours from their day row: each counted once');
      assert.equal(await countedOn(), 10, "the day's outcomes from key_outcomes_daily: each hour counted once");
      assert.deepEqual(
        (await outcomeRows()).map((r) => [Number(r.key_id), r.day, r.outcome, Number(r.requests)]).sort((a, b) => Number(a[0]) - Number(b[0])),
        OLD_KEYS.map((k) => [k, day, 'counted', 1]),
      );
      assert.deepEqual(
        seen.map((r) => r.oldChunks),
        [7, 4, 1, 0, 0, 0, 0],
        'chunks: 3 a write, lowest key first',
      );
      assert.deepEqual(
        seen.map((r) => r.oldHours),
        [17, 14, 11, 8, 5, 2, 0],
        'hour buckets: 3 a write',
      );
      assert.deepEqual(
        seen.map((r) => r.rolled),
        [2, 3, 5, 6, 8, 9, 10],
        "each slice's endpoint hours added to their day row in the write that deletes them (its outcome hours to key_outcomes_daily)",
      );
      for (const r of seen) assert.deepEqual({ keptChunks: r.keptChunks, keptHours: r.keptHours, days: r.days, linesOf40: r.linesOf40 }, kept);
    } finally {
      await stats.close();
      await store.close();
    }
  });

  test("the sweep of every chunk that a purge starts begins at the write after the purge's last slice", async () => {
    const store = await openTestStore();
    // No sweeps of this process's own writes: what goes of key 40 goes by the sweep of every chunk.
    const stats = new Purging(store.store, { purgeRowsPerWrite: SLICE, sweepAges: [] });
    try {
      await leftBehind(store.store.db);
      const seen = await purgeWrites(stats, store.store.db, 1);
      assert.equal(seen.length, 8, 'the 7 writes of the purge, and one more');
      assert.deepEqual(
        seen.map((r) => r.linesOf40),
        [150, 150, 150, 150, 150, 150, 150, 100],
        "key 40's first chunk (100 newer lines) goes at the write after the purge ended",
      );
    } finally {
      await stats.close();
      await store.close();
    }
  });

  test("a write that fails in the middle of a purge notes none of it: the next write deletes the same slice, and the failed write's records are written", async () => {
    const store = await openTestStore();
    const db = store.store.db;
    const stats = new Purging(store.store, { purgeRowsPerWrite: SLICE });
    // The purge's second slice of hour buckets deletes key 22's: refused, after the slice of chunks was deleted in the same write.
    const refuse =
      TEST_STORE === 'postgres'
        ? [
            "create function refuse_delete() returns trigger language plpgsql as $$ begin raise exception 'the disk is away'; end $$",
            'create trigger refuse_delete before delete on key_usage_buckets for each row when (old.key_id = 22) execute function refuse_delete()',
          ]
        : ["create trigger refuse_delete before delete on key_usage_buckets when old.key_id = 22 begin select raise(abort, 'the disk is away'); end"];
    try {
      await leftBehind(db);
      stats.record(record(99, T0, 1));
      await stats.flush();
      assert.deepEqual([(await rowsLeft(db)).oldChunks, (await rowsLeft(db)).oldHours], [7, 17]);
      for (const statement of refuse) await sql.raw(statement).execute(db);
      stats.record(record(98, T0 + 1, 2));
      await assert.rejects(stats.flush(), /the disk is away/);
      assert.deepEqual([(await rowsLeft(db)).oldChunks, (await rowsLeft(db)).oldHours, (await rowsLeft(db)).rolled], [7, 17, 2], 'the failed write deleted and added nothing');
      await sql.raw(TEST_STORE === 'postgres' ? 'drop trigger refuse_delete on key_usage_buckets' : 'drop trigger refuse_delete').execute(db);
      await stats.flush();
      assert.deepEqual([(await rowsLeft(db)).oldChunks, (await rowsLeft(db)).oldHours, (await rowsLeft(db)).rolled], [4, 14, 3], 'the slice the failed write took, no more, no less');
      for (let i = 0; i < 5; i++) await stats.writeNothing();
      const left = await rowsLeft(db);
      assert.deepEqual(left, { oldChunks: 0, oldHours: 0, keptChunks: 13, keptHours: 10, days: 10, rolled: 10, linesOf40: 150 });
      assert.deepEqual((await stats.requestLog(7, 98, new Date(T0).toISOString())).map((l) => l.requestId), ['r-2'], "the failed write's line");
    } finally {
      await stats.close();
      await store.close();
    }
  });
});

describe(`migration 0017 (${TEST_STORE}): the request log's rows become one chunk per key, and back`, () => {
  test("each key's newest 100 lines move with every field; down makes them rows again", async () => {
    const store = await openTestStore({ upTo: '0016-account-days-trigger-cost' });
    // The table 0017 drops is not in the current schema's type.
    const db = store.store.db as unknown as Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const row = (keyId: number, i: number) => ({
      key_id: keyId,
      at: new Date(T0 + i * 1000).toISOString(),
      method: i % 2 === 0 ? 'GET' : 'HEAD',
      path: `/developer/v1/catalogue/${i}?q="é"`,
      status: i % 5 === 0 ? 404 : 200,
      error: i % 5 === 0 ? 'not_found' : null,
      outcome: 'counted',
      duration_ms: 1.25,
      address: i % 3 === 0 ? null : '2001:db8::1',
      request_id: `r-${keyId}-${i}`,
    });
    try {
      // Key 1's lines written out of order: the newest 100 by time move, not the last inserted.
      const lines = [...Array.from({ length: 150 }, (_, i) => row(1, 150 - i)), row(2, 1), row(2, 2), row(2, 3)];
      for (let i = 0; i < lines.length; i += 50) await db.insertInto('key_request_log').values(lines.slice(i, i + 50)).execute();
      await migrateToLatest(store.store);
      const chunks = await store.store.db.selectFrom('key_request_log_chunks').select(['key_id', 'lines', 'oldest_ms', 'newest_ms']).orderBy('key_id').execute();
      assert.deepEqual(
        chunks.map((c) => [c.key_id, c.lines, Number(c.oldest_ms), Number(c.newest_ms)]),
        [
          [1, 100, T0 + 51_000, T0 + 150_000],
          [2, 3, T0 + 1000, T0 + 3000],
        ],
      );
      const stats = new DatabaseUsageStats(store.store);
      const shown = await stats.requestLog(7, 1, new Date(T0).toISOString());
      assert.equal(shown.length, 100);
      const { key_id: _k, duration_ms: durationMs, request_id: requestId, ...rest } = row(1, 150);
      assert.deepEqual(shown[0], { ...rest, durationMs, requestId });
      assert.equal(shown[99]?.requestId, 'r-1-51');
      await stats.close();

      await migrateTo(store.store, '0016-account-days-trigger-cost');
      const back = await db.selectFrom('key_request_log').selectAll().orderBy('key_id').orderBy('at').execute();
      assert.equal(back.length, 103);
      const { id: _id, ...first } = back[0] as Record<string, unknown>;
      assert.deepEqual({ ...first, key_id: Number(first.key_id), duration_ms: Number(first.duration_ms) }, row(1, 51));
      assert.deepEqual(back.slice(100).map((r) => r.request_id), ['r-2-1', 'r-2-2', 'r-2-3']);
    } finally {
      await store.close();
    }
  });
});

if (TEST_STORE === 'postgres') {
  describe('Redis: one flush of 120,000 records of one account (what an outage leaves held)', () => {
    test('is written: the script gets its arguments as one list, not spread into a call', async () => {
      // About the call's arguments, not its time: with CI's other lane beside it, this one call of 120,000
      // records has taken longer than the second a server gives a command (CI, 2026-11-27).
      const stats = new RedisUsageStats(TEST_REDIS_URL, { prefix: testRedisPrefix('bigflush'), commandTimeoutMs: 30_000 });
      await stats.ready();
      try {
        // 3,000 keys x 40 requests, recorded in one turn: one batch, one account, one script call.
        for (let i = 0; i < 120_000; i++) stats.record(record(1 + (i % 3000), T0 + i, i));
        await stats.flush();
        const log = await stats.requestLog(7, 3000, new Date(T0 - 1).toISOString());
        assert.equal(log.length, 40);
        assert.equal(log[0]?.requestId, `r-${120_000 - 1}`);
      } finally {
        await stats.close();
      }
    });
  });

  describe('Redis: a flush of thousands of accounts', () => {
    test('goes as several calls, a turn of the event loop between two (requests are served meanwhile), and all of it is written', async () => {
      const stats = new RedisUsageStats(TEST_REDIS_URL, { prefix: testRedisPrefix('manycalls'), commandTimeoutMs: 30_000 });
      await stats.ready();
      // The turns of the event loop that had passed when each call was handed to the client.
      const redis = Reflect.get(stats, 'redis') as { statsWrite: (args: unknown) => Promise<unknown> };
      const statsWrite = redis.statsWrite.bind(redis);
      const turnsAtCall: number[] = [];
      let turns = 0;
      redis.statsWrite = (args) => {
        turnsAtCall.push(turns);
        return statsWrite(args);
      };
      let ticking = true;
      const tick = () => {
        turns++;
        if (ticking) setImmediate(tick);
      };
      setImmediate(tick);
      try {
        // 3,000 accounts with a key each, one request each: several thousand commands, more than one call holds.
        for (let a = 0; a < 3000; a++) stats.record({ ...record(1000 + a, T0 + a, a), accountId: 1000 + a });
        await stats.flush();
        assert.ok(turnsAtCall.length >= 3, `several calls, not ${turnsAtCall.length}`);
        for (let i = 1; i < turnsAtCall.length; i++) assert.ok(turnsAtCall[i]! > turnsAtCall[i - 1]!, `a turn before call ${i + 1}: ${turnsAtCall.join(',')}`);
        for (const a of [0, 1500, 2999]) {
          const log = await stats.requestLog(1000 + a, 1000 + a, new Date(T0 - 1).toISOString());
          assert.deepEqual(log.map((l) => l.requestId), [`r-${a}`], `account ${1000 + a} has its line`);
        }
      } finally {
        ticking = false;
        await stats.close();
      }
    });
  });
}

/** Statistics in the store that note how many log lines each write is given. */
function countingLogLines(store: ConstructorParameters<typeof DatabaseUsageStats>[0]): { stats: DatabaseUsageStats; logs: number[] } {
  const logs: number[] = [];
  class Counting extends DatabaseUsageStats {
    // The log's slices alone: the counts' own slices (tested below) would add writes of no lines.
    protected override countRowsPerWrite = Infinity;
    protected override async write(batch: StatsBatch): Promise<void> {
      logs.push(batch.log.reduce((n, e) => n + e.items.length, 0));
      await super.write(batch);
    }
  }
  return { stats: new Counting(store), logs };
}

describe(`a busy server writes the request log at most every ${LOG_WRITE_MS} ms`, () => {
  test(`flushes started by ${FLUSH_RECORDS} records write the newest 100 lines when ${LOG_WRITE_MS} ms have passed; the timer's flush writes the rest`, async () => {
    const store = await openTestStore();
    const { stats, logs } = countingLogLines(store.store);
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    try {
      let i = 0;
      const burst = () => {
        for (let n = 0; n < FLUSH_RECORDS; n++, i++) stats.record(record(3, T0 + i, i));
      };
      burst();
      await turns(3);
      burst();
      // Writes on PostgreSQL take their time: wait for the two (the timer's may follow at once).
      const started = Date.now();
      while (logs.length < 2 && Date.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.deepEqual(logs.slice(0, 2), [REQUEST_LOG_KEPT, 0], 'the first write has the log, the next one (right after it) not');
      // The held lines (the newest 100 of the second batch) are written by the timer, unasked.
      const deadline = Date.now() + 10_000;
      let newest = '';
      while (newest !== `r-${i - 1}` && Date.now() < deadline) {
        newest = (await stats.requestLog(7, 3, new Date(T0 - 1).toISOString()))[0]?.requestId ?? '';
        if (newest !== `r-${i - 1}`) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(newest, `r-${i - 1}`);
      assert.equal((await stats.requestLog(7, 3, new Date(T0 - 1).toISOString())).length, REQUEST_LOG_KEPT);
    } finally {
      await stats.close();
      await store.close();
    }
  });

  test(`a log of more than ${LOG_LINES_PER_WRITE} lines held goes in slices of about that many, a turn of the event loop apart`, async () => {
    const store = await openTestStore();
    const { stats, logs } = countingLogLines(store.store);
    const settle = async (writes: number) => {
      const started = Date.now();
      while (logs.length < writes && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    try {
      // Each burst fills a batch with one request of each of FLUSH_RECORDS keys not seen before.
      let keyId = 0;
      const burst = () => {
        for (let n = 0; n < FLUSH_RECORDS; n++) stats.record(record(100 + keyId, T0 + keyId, keyId++));
      };
      burst();
      await settle(1);
      burst();
      await settle(2);
      burst();
      await settle(3);
      assert.deepEqual(logs, [FLUSH_RECORDS, 0, 0], 'the first write has the log, the two right after it hold theirs back');
      // The timer's flush (FLUSH_DELAY_MS later) writes the 4,000 lines held as two slices, a turn apart.
      await settle(5);
      assert.deepEqual(logs.slice(3), [LOG_LINES_PER_WRITE, LOG_LINES_PER_WRITE], 'the 4,000 lines held go as two writes');
      await stats.flush(); // waits for the writes under way
      for (const id of [100, 100 + 2 * FLUSH_RECORDS, 100 + keyId - 1]) {
        assert.equal((await stats.requestLog(7, id, new Date(T0 - 1).toISOString())).length, 1, `key ${id} has its line`);
      }
    } finally {
      await stats.close();
      await store.close();
    }
  });

  test('merging held lines keeps the newest 100 per key, each request once', () => {
    const held = new Map<number, StatsBatch['log'][number]>();
    const line = (i: number) => ({ ...record(1, T0 + i, i), i });
    const entry = (from: number, to: number): StatsBatch['log'][number] => ({
      accountId: 7,
      keyId: 1,
      items: Array.from({ length: to - from + 1 }, (_, k) => {
        const { at, call } = line(from + k);
        return { at: new Date(at).toISOString(), method: 'GET', path: call!.url, status: 200, error: null, outcome: 'counted' as const, durationMs: 1, address: null, requestId: call!.requestId };
      }),
    });
    mergeLog(held, [entry(1, 80)]);
    mergeLog(held, [entry(50, 130)]);
    const items = held.get(1)!.items;
    assert.equal(items.length, REQUEST_LOG_KEPT);
    assert.equal(items[0]!.requestId, 'r-31');
    assert.equal(items[99]!.requestId, 'r-130');
    assert.equal(new Set(items.map((x) => x.requestId)).size, REQUEST_LOG_KEPT);
    // Lines all newer than those held (the usual flush), then lines older than every one kept (a failed write's, again).
    mergeLog(held, [entry(131, 150)]);
    mergeLog(held, [entry(20, 45)]);
    const after = held.get(1)!.items;
    assert.deepEqual([after.length, after[0]!.requestId, after[99]!.requestId], [REQUEST_LOG_KEPT, 'r-51', 'r-150']);
    assert.equal(new Set(after.map((x) => x.requestId)).size, REQUEST_LOG_KEPT);
  });
});

describe(`a busy server sums usage buckets, last uses, outcomes and rejections over a second (${TEST_STORE})`, () => {
  test('flushes right after one another hold them; the next write has them summed; a failed write loses and doubles nothing', async () => {
    const store = await openTestStore();
    const bucketRows: number[] = [];
    const outcomeRows: number[] = [];
    const rejectionRows: number[] = [];
    let failNext = false;
    class Probe extends DatabaseUsageStats {
      protected override async write(batch: StatsBatch): Promise<void> {
        bucketRows.push(batch.buckets.length);
        outcomeRows.push(batch.outcomes.length);
        rejectionRows.push(batch.rejections.length);
        if (failNext) {
          failNext = false;
          throw new Error('the store is away');
        }
        await super.write(batch);
      }
    }
    const stats = new Probe(store.store);
    const settle = async (writes: number) => {
      const started = Date.now();
      while (bucketRows.length < writes && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    try {
      let i = 0;
      // Two keys, one hour: FLUSH_RECORDS records start a busy flush. One request in a hundred is refused.
      const rejected = (n: number): RequestRecord => ({
        ...record(11 + (n % 2), T0 + n, n, { status: 400, error: 'bad_request', outcome: 'bad_request' }),
        rejection: { at: new Date(T0 + n).toISOString(), method: 'GET', path: `/developer/v1/catalogue/${n}`, status: 400, error: 'bad_request', message: 'Unknown parameter.', requestId: `r-${n}` },
      });
      const burst = () => {
        for (let n = 0; n < FLUSH_RECORDS; n++, i++) stats.record(i % 100 === 99 ? rejected(i) : record(11 + (i % 2), T0 + i, i));
      };
      burst();
      await settle(1);
      burst();
      await settle(2);
      assert.ok(bucketRows[0]! > 0 && rejectionRows[0]! > 0, 'the first write has the buckets (the outcomes among them, by the hour) and rejections');
      assert.deepEqual(outcomeRows, [0, 0], 'no day outcomes: the database makes them from the hours when it purges them');
      assert.deepEqual([bucketRows[1], outcomeRows[1], rejectionRows[1]], [0, 0, 0], 'the busy flush right after it holds its own back');
      // The next write takes the held counts with its own; it fails; then one succeeds.
      stats.record(record(11, T0 + i, i++));
      failNext = true;
      await assert.rejects(stats.flush(), /the store is away/);
      await stats.flush();
      const hour = hourOf(T0);
      const buckets = await stats.usageBuckets(7, [11, 12], [hour]);
      assert.equal(buckets.get(hour)?.get('e:/catalogue/:id'), 2 * FLUSH_RECORDS + 1, 'every request counted once');
      const last = await stats.lastUse(7, [11, 12]);
      assert.equal(last.get(11)?.at, new Date(T0 + i - 1).toISOString(), "key 11's last use is its latest request");
      const day = new Date(T0).toISOString().slice(0, 10);
      const outcomes = await stats.keysOutcomes(7, [11, 12], day, day);
      const refused = (2 * FLUSH_RECORDS) / 100;
      assert.equal(outcomes[0]?.counts.counted, 2 * FLUSH_RECORDS + 1 - refused, 'every counted request once');
      assert.equal(outcomes[0]?.counts.bad_request, refused, 'every refused request once');
      // Key 12 was refused at i = 99, 199, ...: its 20 newest, newest first, each once.
      const rejections = await stats.recentRejections(7, 12);
      const newest = Array.from({ length: 20 }, (_, k) => `r-${2 * FLUSH_RECORDS - 1 - 100 * k}`);
      assert.deepEqual(rejections.map((r) => r.requestId), newest);
    } finally {
      await stats.close();
      await store.close();
    }
  });
});

describe(`a busy server writes a second's counts of many keys a slice a turn (${TEST_STORE})`, () => {
  const countRows = (batch: StatsBatch) =>
    batch.buckets.length + batch.outcomes.length + batch.lastUse.length + batch.rejections.reduce((n, r) => n + r.items.length, 0);
  const keysOf = (batch: StatsBatch) => [...new Set([...batch.buckets, ...batch.outcomes, ...batch.lastUse].map((r) => r.keyId))].sort((a, b) => a - b);

  test('slices of whole keys, lowest key first, go by themselves; every count arrives once, a failed slice too', async () => {
    const store = await openTestStore();
    const writes: Array<{ rows: number; keys: number[] }> = [];
    let failAt = -1;
    const SLICE = 300;
    class Probe extends DatabaseUsageStats {
      protected override async write(batch: StatsBatch): Promise<void> {
        writes.push({ rows: countRows(batch), keys: keysOf(batch) });
        if (writes.length === failAt) throw new Error('the store is away');
        await super.write(batch);
      }
    }
    // The slice as the statistics' thread sets it for SQLite (usage-stats-worker.ts), smaller here.
    const stats = new Probe(store.store, { rowsPerWrite: SLICE });
    try {
      // One request of each of FLUSH_RECORDS keys (ids 1000 up, recorded highest first): a busy flush, each key 4 rows
      // (its last use, its hour's endpoint, outcome and server time).
      for (let n = FLUSH_RECORDS - 1; n >= 0; n--) stats.record(record(1000 + n, T0 + n, n));
      failAt = 3;
      const started = Date.now();
      let seen = -1;
      // The slices go a turn apart by themselves, the failed one again at the timer's flush: wait until none comes.
      while (writes.length !== seen && Date.now() - started < 30_000) {
        seen = writes.length;
        await new Promise((resolve) => setTimeout(resolve, 1200));
      }
      const counted = writes.filter((w) => w.rows > 0);
      assert.ok(counted.length >= (FLUSH_RECORDS * 4) / SLICE, `${counted.length} writes of counts, before any flush() asked for them`);
      for (const w of counted) assert.ok(w.rows <= SLICE + 5, `a write of ${w.rows} rows: whole keys of about ${SLICE} rows`);
      const due = counted.slice(0, failAt).flatMap((w) => w.keys);
      assert.deepEqual(due, [...due].sort((a, b) => a - b), 'the keys go lowest first');
      assert.equal(due[0], 1000);
      await stats.flush();
      const hour = hourOf(T0);
      const day = new Date(T0).toISOString().slice(0, 10);
      for (const keyId of [1000, writes[failAt - 1]!.keys[0]!, 1000 + FLUSH_RECORDS - 1]) {
        assert.equal((await stats.usageBuckets(7, [keyId], [hour])).get(hour)?.get('e:/catalogue/:id'), 1, `key ${keyId} counted once`);
      }
      const all = Array.from({ length: FLUSH_RECORDS }, (_, n) => 1000 + n);
      assert.equal((await stats.usageBuckets(7, all, [day])).get(day)?.get('e:/catalogue/:id'), FLUSH_RECORDS, 'every request counted once');
      assert.equal((await stats.keysOutcomes(7, all, day, day))[0]?.counts.counted, FLUSH_RECORDS);
      assert.equal((await stats.lastUse(7, all)).size, FLUSH_RECORDS, 'every key has its last use');
    } finally {
      await stats.close();
      await store.close();
    }
  });

  // Every store: SQLite writes on the event loop, and PostgreSQL's statements and Redis's script calls are
  // built on it.
  for (const kind of kinds) {
    test(`${kind.name}: a busy write takes at most ${COUNT_ROWS_PER_WRITE} rows (and a key's); the rest go at the next turns by themselves`, async () => {
      const writes: number[] = [];
      // A request's rows: its last use, hour's endpoint, outcome and server time, and in Redis its day's outcome,
      // endpoint and server time (the database makes its days from the hours).
      const perKey = kind.name === 'Redis' ? 7 : 4;
      const { stats, close } = await kind.open();
      stats.onWrite = (batch) => writes.push(countRows(batch));
      try {
        for (let n = 0; n < FLUSH_RECORDS; n++) stats.record(record(1000 + n, T0 + n, n));
        const started = Date.now();
        while (writes.reduce((a, b) => a + b, 0) < FLUSH_RECORDS * perKey && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 20));
        assert.equal(writes.reduce((a, b) => a + b, 0), FLUSH_RECORDS * perKey, 'every count is written, without a flush() asking');
        assert.ok(writes.length >= (FLUSH_RECORDS * perKey) / COUNT_ROWS_PER_WRITE, `${writes.length} writes`);
        for (const rows of writes) assert.ok(rows <= COUNT_ROWS_PER_WRITE + perKey, `a write of ${rows} rows`);
      } finally {
        await close();
      }
    });
  }
});

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
