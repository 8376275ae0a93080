/** Picks the meter once from configuration: Redis when REDIS_URL is set, otherwise the database. */
import type { Config } from '../config.js';
import type { Store } from '../store/database.js';
import type { Meter } from './meter.js';
import { SqliteMeter } from './sqlite-meter.js';

export async function createMeter(config: Readonly<Config>, store: Store): Promise<Meter> {
  if (config.redisUrl !== null) {
    throw new Error('REDIS_URL: the Redis meter is not available in this build');
  }
  if (store.sqlite !== null) return new SqliteMeter(store.sqlite);
  throw new Error('DATABASE_URL: metering in PostgreSQL needs REDIS_URL in this build');
}
