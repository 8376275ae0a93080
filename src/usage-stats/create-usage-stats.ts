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
 * object returned reads. Into SQLite the thread's connection takes the file's write lock between the meter's
 * batches, waiting for it there rather than on the request thread.
 */
export async function createUsageStats(
  config: Readonly<Config>,
  store: Store,
  options: { thread?: { onError: (error: Error) => void } } = {},
): Promise<UsageStats> {
  const reader = await createInThread(config, store);
  const redis = redisTargetOf(config);
  // A database in memory is this connection's alone: a thread's connection would open another.
  if (options.thread === undefined || (config.database.dialect === 'sqlite' && config.database.path === ':memory:')) return reader;
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
