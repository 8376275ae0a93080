// Upgrading a single-Redis deployment to the key names under each account's hash tag
// (`shelfapi meter upgrade-keys`): the month's counts, the keys' days and last uses written by the old
// release are read by the new meter afterwards, added to what it counted meanwhile, and never twice.
// Runs on the machine's Redis under a prefix of its own, whatever TEST_STORE says.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { upgradeRedisKeys } from '../../src/metering/redis-upgrade-keys.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-app.js';

const T0 = Date.parse(FIXTURE_NOW); // 2026-11-20T12:00:00.000Z
const prefix = testRedisPrefix('upgrade');
const redis = new Redis(TEST_REDIS_URL);

after(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

test("the old release's counts move under the account's tag, once, added to the new ones", async (t) => {
  // What the release before wrote for account 7 (keys 70 and 71) and account 8 (key 80); key 99 is gone.
  await redis.set(`${prefix}quota:7:2026-11`, '40', 'EXAT', Math.floor(Date.parse('2027-01-05T00:00:00Z') / 1000));
  await redis.set(`${prefix}quota:8:2026-11`, '3');
  await redis.set(`${prefix}keyday:70:2026-11-20`, '25', 'EX', 86_400);
  await redis.set(`${prefix}keyday:71:2026-11-19`, '15');
  await redis.set(`${prefix}keyday:80:2026-11-20`, '3');
  await redis.set(`${prefix}keyday:99:2026-11-20`, '9');
  await redis.hset(`${prefix}lastused`, '70', String(T0 - 1000), '80', String(T0 - 5000), '99', String(T0));

  const meter = new RedisMeter(TEST_REDIS_URL, { prefix });
  t.after(() => meter.close());
  await meter.ready();
  // The new release counts one request of key 70 before the upgrade runs.
  const limits = { monthly: 41, perMinute: 100 };
  assert.equal((await meter.admit({ accountId: 7, keyId: 70, limits, quota: true, now: T0 })).quota?.used, 1);

  const accounts = new Map([
    [70, 7],
    [71, 7],
    [80, 8],
  ]);
  assert.deepEqual(await upgradeRedisKeys(TEST_REDIS_URL, prefix, accounts), { quotas: 2, keyDays: 3, lastUses: 2, unknownKeys: 2 });
  // Run again (a second operator, a retried deploy step): nothing left to move, nothing counted twice.
  assert.deepEqual(await upgradeRedisKeys(TEST_REDIS_URL, prefix, accounts), { quotas: 0, keyDays: 0, lastUses: 0, unknownKeys: 2 });

  assert.equal(await meter.used(7, '2026-11'), 41);
  assert.equal(await meter.used(8, '2026-11'), 3);
  assert.deepEqual(await meter.keyUsage(7, 70, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 26 }]);
  assert.deepEqual(await meter.keyUsage(7, 71, '2026-11-01', '2026-11-30'), [{ day: '2026-11-19', requests: 15 }]);
  assert.deepEqual(await meter.keyUsage(8, 80, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 3 }]);
  // The later of the two last uses wins: key 70 was used by the new release after the old one.
  assert.deepEqual(await meter.lastUsed(7, [70, 71]), new Map([[70, new Date(T0).toISOString()]]));
  assert.deepEqual(await meter.lastUsed(8, [80]), new Map([[80, new Date(T0 - 5000).toISOString()]]));
  // The month is exact across the upgrade: 41 counted, the 42nd refused.
  assert.equal((await meter.admit({ accountId: 7, keyId: 70, limits, quota: true, now: T0 + 1 })).quota?.allowed, false);
  // The month's count keeps its expiry (35 days after the month), the day's its own.
  assert.equal(await redis.call('expiretime', `${prefix}{a:7}:quota:2026-11`), Date.parse('2027-01-05T00:00:00Z') / 1000);
  assert.ok((await redis.ttl(`${prefix}{a:7}:keyday:70:2026-11-20`)) > 300 * 86_400, 'the new release set a year and a bit');
  // Counts the old release kept without an expiry get the meter's when they move (the meter sets one only
  // when it creates a count): the month's 35 days after it, the day's 400 days after it.
  assert.equal(await redis.call('expiretime', `${prefix}{a:8}:quota:2026-11`), Date.parse('2027-01-05T00:00:00Z') / 1000);
  assert.equal(await redis.call('expiretime', `${prefix}{a:7}:keyday:71:2026-11-19`), Date.parse('2026-11-19T00:00:00Z') / 1000 + 400 * 86_400);
  // Keys of API keys no longer in the store are left where they were.
  assert.equal(await redis.get(`${prefix}keyday:99:2026-11-20`), '9');
});
