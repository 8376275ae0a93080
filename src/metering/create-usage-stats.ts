/** Picks the per-key statistics store like the meter: Redis (one or a cluster) when configured, otherwise the database. */
import type { Config } from '../config.js';
import type { Store } from '../store/database.js';
import { DatabaseUsageStats } from './database-usage-stats.js';
import { redisTargetOf } from './redis-client.js';
import { RedisUsageStats } from './redis-usage-stats.js';
import type { UsageStats } from './usage-stats.js';

export async function createUsageStats(config: Readonly<Config>, store: Store): Promise<UsageStats> {
  const target = redisTargetOf(config);
  if (target !== null) {
    const stats = new RedisUsageStats(target, { prefix: config.redisKeyPrefix });
    await stats.ready();
    return stats;
  }
  return new DatabaseUsageStats(store);
}
