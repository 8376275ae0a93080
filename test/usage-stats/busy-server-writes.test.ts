// A busy server's statistics writes, paced so that the request thread is never held long: the request log
// written at most every LOG_WRITE_MS and in slices, counts held while writes follow one another and then
// summed, a second's counts of many keys written a slice a turn; a failed write loses and doubles nothing.
// In the PostgreSQL pass, Redis's flushes too large for one call (what an outage leaves held).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import { hourOf } from '../../src/usage-stats/usage-buckets.js';
import { mergeLog } from '../../src/usage-stats/stats-batch.js';
import { COUNT_ROWS_PER_WRITE, FLUSH_RECORDS, LOG_LINES_PER_WRITE, LOG_WRITE_MS } from '../../src/usage-stats/stats-pace.js';
import { REQUEST_LOG_KEPT, type RequestRecord, type StatsBatch } from '../../src/usage-stats/usage-stats.js';
import { openTestStore, TEST_REDIS_URL, TEST_STORE, testRedisPrefix } from '../helpers/test-app.js';
import { kinds, record, T0 } from './request-log-fixtures.js';

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
