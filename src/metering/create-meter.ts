/**
 * Picks the meter once from configuration: Redis when REDIS_URL is set, a Redis Cluster when
 * REDIS_CLUSTER_URLS is, otherwise the database.
 */
import type { Config } from '../config.js';
import type { Store } from '../store/database.js';
import type { Meter } from './meter.js';
import { PostgresMeter } from './postgres-meter.js';
import { redisTargetOf } from './redis-client.js';
import { RedisMeter } from './redis-meter.js';
import { SqliteMeter } from './sqlite-meter.js';

export async function createMeter(config: Readonly<Config>, store: Store): Promise<Meter> {
  const target = redisTargetOf(config);
  if (target !== null) {
    const meter = new RedisMeter(target, { prefix: config.redisKeyPrefix });
    await meter.ready();
    return meter;
  }
  return store.sqlite !== null ? new SqliteMeter(store.sqlite) : new PostgresMeter(store);
}
