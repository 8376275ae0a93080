// A normal stop loses no per-key statistics: a real `shelfapi serve` answers requests, gets SIGTERM at once
// (before its half-second flush is due), exits 0, and the owner's counts are all in the store it used
// (the database, or Redis when TEST_STORE=postgres).
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import { dayOf } from '../../src/metering/periods.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import type { UsageStats } from '../../src/usage-stats/usage-stats.js';
import type { Store } from '../../src/store/database.js';
import { loadDataset, type LoadResult } from '../../src/load/load-dataset.js';
import { keyByHashQuery } from '../../src/store/repositories/api-key.repository.js';
import { hashKey } from '../../src/keys/api-key.js';
import { fixture } from '../helpers/fixture.js';
import { startServerProcess } from '../helpers/server-process.js';
import { openTestStore, TEST_REDIS_URL, testRedisPrefix, TEST_STORE } from '../helpers/test-app.js';

let store: Store;
let databaseUrl: string;
let closeStore: () => Promise<void>;
let loaded: LoadResult;
const redisPrefix = testRedisPrefix('drain');

before(async () => {
  ({ store, databaseUrl, close: closeStore } = await openTestStore());
  loaded = await loadDataset(store, fixture(), { keyPrefix: 'shelf', now: Date.now() });
});
after(async () => {
  await closeStore();
  if (TEST_STORE === 'postgres') {
    const redis = new Redis(TEST_REDIS_URL);
    const keys = await redis.keys(`${redisPrefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
});

async function keyId(ref: string): Promise<number> {
  const row = await keyByHashQuery(store.db, hashKey(loaded.keys[ref]!)).executeTakeFirstOrThrow();
  return row.keyId;
}

it('SIGTERM writes the statistics still held in memory before the server exits', async () => {
  // STATS_THREAD=on: the statistics go through their own thread (into Redis with TEST_STORE=postgres, into the
  // SQLite file otherwise), whose close must write what it holds.
  const env: Record<string, string> = { DATABASE_URL: databaseUrl, STATS_THREAD: 'on' };
  if (TEST_STORE === 'postgres') Object.assign(env, { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: redisPrefix });
  const server = await startServerProcess(env);
  const get = (path: string, ref: string) => fetch(`${server.base}${path}`, { headers: { 'x-api-key': loaded.keys[ref]! } });
  const statuses = await Promise.all([
    ...Array.from({ length: 5 }, () => get('/catalogue/1', 'alice').then((r) => r.status)),
    get('/me', 'alice-revoked').then((r) => r.status),
  ]);
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 401]);
  assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null });

  let stats: UsageStats;
  if (TEST_STORE === 'postgres') {
    const redisStats = new RedisUsageStats(TEST_REDIS_URL, { prefix: redisPrefix });
    await redisStats.ready();
    stats = redisStats;
  } else {
    stats = new DatabaseUsageStats(store);
  }
  try {
    const today = dayOf(Date.now());
    const alice = loaded.accounts.alice!;
    const [aliceDay] = await stats.keyOutcomes(alice, await keyId('alice'), today, today);
    assert.equal(aliceDay?.counts.counted, 5);
    const [revokedDay] = await stats.keyOutcomes(alice, await keyId('alice-revoked'), today, today);
    assert.equal(revokedDay?.counts.revoked_or_expired, 1);
    assert.equal((await stats.lastUse(alice, [await keyId('alice')])).get(await keyId('alice'))?.address, '127.0.0.1');
  } finally {
    await stats.close();
  }
});
