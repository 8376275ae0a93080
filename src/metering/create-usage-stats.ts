/** Picks the per-key statistics store like the meter: Redis when REDIS_URL is set, otherwise the database. */
import type { Config } from '../config.js';
import type { Store } from '../store/database.js';
import { DatabaseUsageStats } from './database-usage-stats.js';
import { RedisUsageStats } from './redis-usage-stats.js';
import type { UsageStats } from './usage-stats.js';

export async function createUsageStats(config: Readonly<Config>, store: Store): Promise<UsageStats> {
  if (config.redisUrl !== null) {
    const stats = new RedisUsageStats(config.redisUrl, { prefix: config.redisKeyPrefix });
    await stats.ready();
    return stats;
  }
  return new DatabaseUsageStats(store);
}
