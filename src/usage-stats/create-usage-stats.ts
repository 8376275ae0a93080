/** Picks the per-key statistics store like the meter: Redis (one or a cluster) when configured, otherwise the database. */
import type { Config } from '../config.js';
import type { Store } from '../store/database.js';
import { DatabaseUsageStats } from './database-usage-stats.js';
import { redisTargetOf } from '../metering/redis-client.js';
import { RedisUsageStats } from './redis-usage-stats.js';
import type { UsageStats } from './usage-stats.js';
import { ThreadedUsageStats } from './usage-stats-thread.js';

/**
 * With `thread` (`serve` with STATS_THREAD on), records are written from a thread of their own (usage-stats-thread.ts) and the
 * object returned reads; except into SQLite, where the thread's connection and the server's would take the
 * file's one write lock in turns, and the meter's commits waited for the statistics' (item GET p99 69-72 ms
 * with the statistics in the request thread, 92-106 ms with a thread of their own; docs/performance.md).
 */
export async function createUsageStats(
  config: Readonly<Config>,
  store: Store,
  options: { thread?: { onError: (error: Error) => void } } = {},
): Promise<UsageStats> {
  const reader = await createInThread(config, store);
  const redis = redisTargetOf(config);
  if (options.thread === undefined || (redis === null && config.database.dialect === 'sqlite')) return reader;
  try {
    return await ThreadedUsageStats.start({ redis, redisKeyPrefix: config.redisKeyPrefix, database: config.database, keyPrefix: config.keyPrefix }, reader, options.thread.onError);
  } catch (error) {
    await reader.close();
    throw error;
  }
}

async function createInThread(config: Readonly<Config>, store: Store): Promise<UsageStats> {
  const target = redisTargetOf(config);
  if (target !== null) {
    const stats = new RedisUsageStats(target, { prefix: config.redisKeyPrefix });
    await stats.ready();
    return stats;
  }
  return new DatabaseUsageStats(store);
}
