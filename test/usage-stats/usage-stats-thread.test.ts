// The owners' statistics written from a thread of their own (src/usage-stats/usage-stats-thread.ts), as `serve`
// writes them into Redis or PostgreSQL (and into the database TEST_STORE picks, through the thread's own connection): what is handed over is written by a flush and by close; a thread that
// dies is started again and what comes after is written; a flush asked of no thread fails rather than hangs.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Worker } from 'node:worker_threads';
import { once } from 'node:events';
import { dayOf } from '../../src/metering/periods.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import { ThreadedUsageStats } from '../../src/usage-stats/usage-stats-thread.js';
import type { RequestRecord } from '../../src/usage-stats/usage-stats.js';
import { parseStatsThread } from '../../src/config.js';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import { createTestContext, TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-app.js';

const opened: Array<{ close(): Promise<void> }> = [];
after(async () => {
  for (const stats of opened) await stats.close().catch(() => {});
});

async function threaded(prefix: string, errors: Error[] = []) {
  const reader = new RedisUsageStats(TEST_REDIS_URL, { prefix });
  await reader.ready();
  const stats = await ThreadedUsageStats.start({ redis: TEST_REDIS_URL, redisKeyPrefix: prefix, database: { dialect: 'sqlite', path: ':memory:' }, keyPrefix: 'shelf' }, reader, (error) =>
    errors.push(error),
  );
  opened.push(stats);
  return stats;
}

/** A second reader of the same prefix: what a server started later (or another server) would see. */
async function readerOf(prefix: string) {
  const reader = new RedisUsageStats(TEST_REDIS_URL, { prefix });
  await reader.ready();
  opened.push(reader);
  return reader;
}

const NOW = Date.now();
const today = dayOf(NOW);
const counted = (keyId: number, n: number, requestId = 'r'): RequestRecord[] =>
  Array.from({ length: n }, (_, i) => ({
    accountId: 7,
    keyId,
    at: NOW + i,
    outcome: 'counted',
    address: '203.0.113.9',
    used: true,
    rejection: null,
    call: { method: 'GET', url: `/developer/v1/catalogue/${i}`, status: 200, error: null, durationMs: 1.5, address: '203.0.113.9', requestId: `${requestId}-${i}`, endpoint: '/catalogue/:id' },
  }));

async function countedOf(reader: RedisUsageStats, keyId: number): Promise<number> {
  const [day] = await reader.keyOutcomes(7, keyId, today, today);
  return day?.counts.counted ?? 0;
}

describe('statistics written from their own thread', () => {
  it('a flush resolves once what was handed over is written: counts, last use and request log', async () => {
    const prefix = testRedisPrefix('thread-flush');
    const stats = await threaded(prefix);
    for (const r of counted(1, 25)) stats.record(r);
    await stats.flush();
    const reader = await readerOf(prefix);
    assert.equal(await countedOf(reader, 1), 25);
    assert.equal((await reader.lastUse(7, [1])).get(1)?.address, '203.0.113.9');
    const log = await reader.requestLog(7, 1, new Date(NOW - 60_000).toISOString());
    assert.equal(log.length, 25);
    assert.equal(log[0]!.requestId, 'r-24', 'newest first');
    // The thread's object reads too (the settings screen's reads).
    assert.equal(await countedOf(stats as unknown as RedisUsageStats, 1), 25);
  });

  it('close writes what was handed over and not yet flushed', async () => {
    const prefix = testRedisPrefix('thread-close');
    const stats = await threaded(prefix);
    for (const r of counted(2, 40)) stats.record(r);
    await stats.close();
    assert.equal(await countedOf(await readerOf(prefix), 2), 40);
  });

  it('a thread that dies is started again; what it held is lost, what comes after is written', async () => {
    const prefix = testRedisPrefix('thread-restart');
    const errors: Error[] = [];
    const stats = await threaded(prefix, errors);
    for (const r of counted(3, 5, 'before')) stats.record(r);
    await stats.flush();
    // Fault injection: the thread ends as an out-of-memory kill or a crash would end it.
    const worker = (stats as unknown as { worker: Worker }).worker;
    await worker.terminate();
    // Until the new thread is up, a flush fails at once (never hangs) and records handed over are dropped.
    await assert.rejects(stats.flush(), /statistics thread is not running/);
    const deadline = Date.now() + 10_000;
    let flushed = false;
    while (!flushed && Date.now() < deadline) {
      flushed = await stats.flush().then(
        () => true,
        () => false,
      );
      if (!flushed) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(flushed, 'the thread came back within 10 s');
    assert.equal(stats.restarts, 1);
    for (const r of counted(3, 6, 'after')) stats.record(r);
    await stats.flush();
    assert.equal(await countedOf(await readerOf(prefix), 3), 11, 'the 5 written before and the 6 after');
    assert.deepEqual(errors, [], 'a terminated thread is no error of its own');
  });

  it('close after close does nothing, and the thread is gone', async () => {
    const prefix = testRedisPrefix('thread-twice');
    const stats = await threaded(prefix);
    const worker = (stats as unknown as { worker: Worker }).worker;
    const exited = once(worker, 'exit');
    await stats.close();
    await exited;
    await stats.close();
  });

  it("into the database, over the thread's own connection: what a flush wrote, the server's connection reads", async () => {
    const ctx = await createTestContext();
    try {
      const errors: Error[] = [];
      // Its reads go through the server's own connection (ctx.store), its writes through the thread's.
      const stats = await ThreadedUsageStats.start({ redis: null, redisKeyPrefix: '', database: ctx.config.database, keyPrefix: ctx.config.keyPrefix }, new DatabaseUsageStats(ctx.store), (error) =>
        errors.push(error),
      );
      const key = await ctx.store.db.selectFrom('api_keys').select(['id', 'account_id']).orderBy('id').executeTakeFirstOrThrow();
      const accountId = Number(key.account_id);
      const keyId = Number(key.id);
      for (const r of counted(keyId, 12)) stats.record({ ...r, accountId });
      await stats.flush();
      const [day] = await stats.keyOutcomes(accountId, keyId, today, today);
      assert.equal(day?.counts.counted, 12);
      assert.equal((await stats.requestLog(accountId, keyId, new Date(NOW - 60_000).toISOString())).length, 12);
      await stats.close();
      assert.deepEqual(errors, []);
    } finally {
      await ctx.close();
    }
  });
});

describe('STATS_THREAD', () => {
  it('auto: into Redis on with 2 cores per server process, into SQLite off, into PostgreSQL with at least 4 and 2 a process; on and off as said; anything else refused', () => {
    assert.equal(parseStatsThread(undefined, 2, 1, 'redis'), true, 'into Redis, one process on 2 cores');
    assert.equal(parseStatsThread('auto', 2, 2, 'redis'), false, 'two workers on 2 cores: no core to share');
    assert.equal(parseStatsThread('auto', 3, 2, 'redis'), false);
    assert.equal(parseStatsThread('', 4, 2, 'redis'), true);
    assert.equal(parseStatsThread(undefined, 2, 1, 'postgres'), false, 'into PostgreSQL, a 2-core machine');
    assert.equal(parseStatsThread('auto', 4, 1, 'postgres'), true);
    assert.equal(parseStatsThread('auto', 4, 3, 'postgres'), false, 'three processes on four cores');
    assert.equal(parseStatsThread('auto', 16, 8, 'postgres'), true);
    assert.equal(parseStatsThread(undefined, 2, 1, 'sqlite'), false, 'into SQLite: off, for memory');
    assert.equal(parseStatsThread('auto', 16, 1, 'sqlite'), false, 'into SQLite, however many cores');
    assert.equal(parseStatsThread('on', 2, 1, 'sqlite'), true, 'into SQLite when asked for');
    assert.equal(parseStatsThread('on', 1, 1, 'postgres'), true);
    assert.equal(parseStatsThread('off', 64, 1, 'redis'), false);
    assert.throws(() => parseStatsThread('yes', 8, 1, 'redis'), /^ConfigError: STATS_THREAD: expected "on", "off" or "auto", got "yes"$/);
  });
});
