/** Picks the meter once from configuration: Redis when REDIS_URL is set, otherwise the database. */
import type { Config } from '../config.js';
import type { Store } from '../store/database.js';
import type { Meter } from './meter.js';
import { PostgresMeter } from './postgres-meter.js';
import { RedisMeter } from './redis-meter.js';
import { SqliteMeter } from './sqlite-meter.js';

export async function createMeter(config: Readonly<Config>, store: Store): Promise<Meter> {
  if (config.redisUrl !== null) {
    const meter = new RedisMeter(config.redisUrl, { prefix: config.redisKeyPrefix });
    await meter.ready();
    return meter;
  }
  return store.sqlite !== null ? new SqliteMeter(store.sqlite) : new PostgresMeter(store.db);
}
