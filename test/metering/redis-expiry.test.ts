// Every key the Redis meter writes expires, so nothing grows without bound: the month's count 35 days after
// the month, a key's day 400 days after the request that created it, the burst window a minute after the
// last request, the record of the minute's admissions five minutes after the last. The counts get their
// expiry when an admission creates them; later admissions leave it as it is. The owners' statistics expire
// too: a hash of counts (named by its day or hour) gets its expiry when it is created, the request log at every
// write, the last use when a key's last use moves to another day.
// Runs on the machine's Redis under a prefix of its own, whatever TEST_STORE says.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import type { RequestRecord } from '../../src/usage-stats/usage-stats.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-app.js';

const T0 = Date.parse(FIXTURE_NOW); // 2026-11-20T12:00:00.000Z
const prefix = testRedisPrefix('expiry');
const redis = new Redis(TEST_REDIS_URL);

after(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

test('an admission leaves every key it wrote with an expiry, set once when the count is created', async (t) => {
  const meter = new RedisMeter(TEST_REDIS_URL, { prefix });
  t.after(() => meter.close());
  await meter.ready();
  const limits = { monthly: 100, perMinute: 100 };
  const admit = (now: number) => meter.admit({ accountId: 3, keyId: 30, limits, quota: true, now });

  assert.equal((await admit(T0)).quota?.used, 1);
  const month = `${prefix}{a:3}:quota:2026-11`;
  const day = `${prefix}{a:3}:keyday:30:2026-11-20`;
  const monthExpiry = Date.parse('2027-01-05T00:00:00Z') / 1000;
  assert.equal(await redis.call('expiretime', month), monthExpiry);
  const dayTtl = await redis.ttl(day);
  assert.ok(dayTtl > 399 * 86_400 && dayTtl <= 400 * 86_400, `the day's count is kept 400 days (ttl ${dayTtl} s)`);
  const burstTtl = await redis.pttl(`${prefix}{a:3}:burst`);
  assert.ok(burstTtl > 0 && burstTtl <= 60_000, `the burst window a minute (pttl ${burstTtl} ms)`);
  for (const key of await redis.keys(`${prefix}{a:3}:admitted:*`)) {
    const ttl = await redis.ttl(key);
    assert.ok(ttl > 0 && ttl <= 300, `${key} is kept five minutes (ttl ${ttl} s)`);
  }

  // A second admission counts on and leaves the month's expiry as it was; the day's is not reset either.
  await redis.expire(day, 1000);
  assert.equal((await admit(T0 + 1)).quota?.used, 2);
  assert.equal(await redis.call('expiretime', month), monthExpiry);
  const dayAfter = await redis.ttl(day);
  assert.ok(dayAfter > 0 && dayAfter <= 1000, `the day's expiry is set when it is created, not at every request (ttl ${dayAfter} s)`);

  // A count given back to zero and counted again is created again: it gets its expiry again.
  await redis.persist(month);
  await meter.refund(3, 30, '2026-11', '2026-11-20');
  await meter.refund(3, 30, '2026-11', '2026-11-20');
  assert.equal(await redis.get(month), '0');
  assert.equal((await admit(T0 + 2)).quota?.used, 1);
  assert.equal(await redis.call('expiretime', month), monthExpiry);
});

test("the statistics' hashes get their expiry when created, the request log's at every write, the last use's once a day", async (t) => {
  const stats = new RedisUsageStats(TEST_REDIS_URL, { prefix });
  t.after(() => stats.close());
  await stats.ready();
  const record = (at: number, status: number, outcome: RequestRecord['outcome']): RequestRecord => ({
    accountId: 4,
    keyId: 40,
    at,
    outcome,
    used: true,
    address: '192.0.2.4',
    rejection: null,
    call: { method: 'GET', url: '/developer/v1/catalogue/1', status, error: null, durationMs: 3, address: '192.0.2.4', requestId: `r${at}`, endpoint: '/catalogue/:id' },
  });
  stats.record(record(T0, 200, 'counted'));
  await stats.flush();
  const keys = (await redis.keys(`${prefix}stats:{4}:*`)).sort();
  const outcomes = `${prefix}stats:{4}:out:40:2026-11-20`;
  const hour = `${prefix}stats:{4}:use:40:2026-11-20T12`;
  const total = `${prefix}stats:{4}:acct:2026-11-20`;
  for (const hash of [outcomes, hour, total]) assert.ok(keys.includes(hash), `${hash} among ${keys.join(', ')}`);
  const log = keys.filter((key) => !key.includes(':out:') && !key.includes(':use:') && !key.includes(':acct:') && !key.endsWith(':lastuse') && !key.endsWith(':totals-since'));
  assert.equal(log.length, 1, `one request log list among ${keys.join(', ')}`);
  for (const key of keys) assert.ok((await redis.ttl(key)) > 0, `${key} expires`);
  assert.ok((await redis.ttl(outcomes)) > 399 * 86_400, "a day's counts are kept 400 days");
  assert.ok((await redis.ttl(hour)) <= 2 * 86_400, "an hour's counts two days");

  // The same counts again: each hash is only counted on, and keeps the expiry it was given; the request log
  // is kept from its latest write; the last use, written again the same day, keeps its expiry.
  for (const key of keys) await redis.expire(key, 1000);
  stats.record(record(T0 + 1, 200, 'counted'));
  await stats.flush();
  assert.equal(await redis.hget(outcomes, 'counted'), '2');
  for (const hash of [outcomes, hour, total]) assert.ok((await redis.ttl(hash)) <= 1000, `${hash} keeps the expiry it was created with`);
  const lastUse = `${prefix}stats:{4}:lastuse`;
  assert.ok((await redis.ttl(lastUse)) <= 1000, 'the last use of the same day keeps its expiry');
  assert.equal((await stats.lastUse(4, [40])).get(40)?.at, new Date(T0 + 1).toISOString(), 'and is written');
  assert.ok((await redis.ttl(log[0]!)) > 1000, 'the request log is kept from its latest write');

  // The key's first use of the next day sets the last use's expiry again: the hash is kept at least its time
  // to live less a day after its latest write. A use older than the one held changes nothing.
  const nextDay = T0 + 86_400_000;
  stats.record(record(nextDay, 200, 'counted'));
  await stats.flush();
  assert.ok((await redis.ttl(lastUse)) > 399 * 86_400, 'the last use of a new day is kept 400 days from it');
  await redis.expire(lastUse, 1000);
  stats.record(record(T0 + 5, 200, 'counted'));
  await stats.flush();
  assert.equal((await stats.lastUse(4, [40])).get(40)?.at, new Date(nextDay).toISOString(), 'an older use does not replace a newer one');
  assert.ok((await redis.ttl(lastUse)) <= 1000, 'nor sets the expiry');

  // A count the hash did not have (another outcome) is created with its field: the hash's expiry is set again.
  stats.record(record(T0 + 2, 500, 'server_error'));
  await stats.flush();
  assert.equal(await redis.hget(outcomes, 'server_error'), '1');
  assert.ok((await redis.ttl(outcomes)) > 399 * 86_400, 'a new field sets the expiry again');
});
