// The database's own rows of the statistics (SQLite, or PostgreSQL without Redis): the request log as a chunk
// per key and write, swept so that a key keeps its newest 100 lines however many servers write it and
// whichever process stopped; chunks past 7 days and hour buckets past 2 days purged a slice a write, the
// hours added to their day first, so that a failed write loses and doubles nothing; and migration 0017,
// which made the log's rows chunks.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import { PURGE_ROWS_PER_WRITE } from '../../src/usage-stats/database-usage-stats-purge.js';
import { chunkOf } from '../../src/usage-stats/request-log-chunks.js';
import { migrateTo, migrateToLatest } from '../../src/store/database.js';
import { hourOf, HOURS_KEPT_MS } from '../../src/usage-stats/usage-buckets.js';
import { REQUEST_LOG_KEPT, REQUEST_LOG_MS, type RequestLogEntry } from '../../src/usage-stats/usage-stats.js';
import { openTestStore, TEST_STORE } from '../helpers/test-app.js';
import { record, T0 } from './request-log-fixtures.js';

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
