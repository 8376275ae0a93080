/**
 * The statistics thread (usage-stats-thread.ts): opens its own writer, the one a server without the thread
 * writes with, and feeds it the records the server hands over.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { recogniseSecretsOf } from '../keys/secret-scan.js';
import type { Store } from '../store/database.js';
import { THREAD_PACE, type FromStatsThread, type StatsWriterTarget, type ToStatsThread } from './usage-stats-thread.js';
import type { BufferedUsageStats } from './buffered-usage-stats.js';

/** How long a write into SQLite waits for the lock before its records wait for the next second's write. */
const THREAD_LOCK_WAIT_MS = 500;
/**
 * Rows (and log lines) a write into SQLite takes at most. Each write holds the file's write lock, and the
 * meter's admissions wait behind it: over 2,000 accounts (24,000 rows a second) writes of 2,000 rows held
 * the lock 17 ms on average (up to 70), and the meter waited 490-680 ms in 5 s; writes of 1,000, 58 ms.
 * In turns, the item GET's p99 was 13-22 ms against 19-36, at the same rate (docs/performance.md).
 */
const SQLITE_ROWS_PER_WRITE = 1000;

const port = parentPort;
if (port === null) throw new Error('usage-stats-worker: not started as a worker thread');
const target = workerData as StatsWriterTarget;
recogniseSecretsOf(target.keyPrefix);
const reply = (message: FromStatsThread) => port.postMessage(message);
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

// Ready once Redis is connected, or after its start-up wait without it (a thread started again while Redis is
// away: its flushes fail and keep their records until Redis is back). The database connects on the first write.
let store: Store | null = null;
let stats: BufferedUsageStats;
// Each writer's module is loaded only when used: a Redis thread loads no SQLite driver.
if (target.redis !== null) {
  const { RedisUsageStats } = await import('./redis-usage-stats.js');
  const redis = new RedisUsageStats(target.redis, { prefix: target.redisKeyPrefix });
  await redis.ready().catch(() => {});
  stats = redis;
} else {
  const [{ openStore }, { DatabaseUsageStats }] = await Promise.all([import('../store/database.js'), import('./database-usage-stats.js')]);
  store = openStore(target.database);
  // Into SQLite: the meter's batches hold the file's write lock a moment at a time; waiting here holds up no request.
  stats = new DatabaseUsageStats(store, { lockWaitMs: THREAD_LOCK_WAIT_MS, ...(store.dialect === 'sqlite' ? { rowsPerWrite: SQLITE_ROWS_PER_WRITE } : {}) });
}
stats.pace = THREAD_PACE;

port.on('message', (message: ToStatsThread) => {
  if ('records' in message) {
    for (const record of message.records) stats.record(record);
    return;
  }
  if ('flush' in message) {
    stats.flush().then(
      () => reply({ done: message.flush, error: null }),
      (error: unknown) => reply({ done: message.flush, error: messageOf(error) }),
    );
    return;
  }
  // close: the last records written (or counted as dropped), then the connection let go.
  void (async () => {
    let error: string | null = null;
    try {
      await stats.close();
      await store?.close();
    } catch (thrown) {
      error = messageOf(thrown);
    }
    reply({ done: message.close, error });
  })();
});
reply({ ready: true });
