// What the request log's tests share: a request record as the pipeline hands it over, and the statistics
// writers of each store the statistics can use (the database of the suite's store and, in the PostgreSQL pass,
// Redis), each able to tell a test of every batch it is given to write.
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import type { RequestRecord, StatsBatch } from '../../src/usage-stats/usage-stats.js';
import { openTestStore, TEST_REDIS_URL, TEST_STORE, testRedisPrefix } from '../helpers/test-app.js';

export const T0 = Date.parse('2026-11-20T12:00:00.000Z');

export function record(keyId: number, at: number, i: number, over: Partial<RequestRecord['call'] & { outcome: RequestRecord['outcome'] }> = {}): RequestRecord {
  const { outcome = 'counted', ...call } = over;
  return {
    accountId: 7,
    keyId,
    at,
    outcome,
    used: true,
    address: '192.0.2.1',
    rejection: null,
    call: { method: 'GET', url: `/developer/v1/catalogue/${i}`, status: 200, error: null, durationMs: 3, address: '192.0.2.1', requestId: `r-${i}`, endpoint: '/catalogue/:id', ...call },
  };
}

/** The statistics writers, each telling `onWrite` of every batch it is given to write (null: nobody listens). */
export class WatchedDatabaseStats extends DatabaseUsageStats {
  onWrite: ((batch: StatsBatch) => void) | null = null;
  protected override async write(batch: StatsBatch): Promise<void> {
    this.onWrite?.(batch);
    await super.write(batch);
  }
}
export class WatchedRedisStats extends RedisUsageStats {
  onWrite: ((batch: StatsBatch) => void) | null = null;
  protected override async write(batch: StatsBatch): Promise<void> {
    this.onWrite?.(batch);
    await super.write(batch);
  }
}

// The database's writer; on PostgreSQL runs Redis's too (the app there records into Redis).
export const kinds: Array<{ name: string; open: () => Promise<{ stats: WatchedDatabaseStats | WatchedRedisStats; close: () => Promise<void> }> }> = [
  {
    name: `database (${TEST_STORE})`,
    open: async () => {
      const store = await openTestStore();
      const stats = new WatchedDatabaseStats(store.store);
      return { stats, close: async () => { await stats.close(); await store.close(); } };
    },
  },
];
if (TEST_STORE === 'postgres') {
  kinds.push({
    name: 'Redis',
    open: async () => {
      const stats = new WatchedRedisStats(TEST_REDIS_URL, { prefix: testRedisPrefix('reqlog') });
      await stats.ready();
      return { stats, close: () => stats.close() };
    },
  });
}
