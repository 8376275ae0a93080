// A key's request log in Redis: each line an item of the key's list, stored as an array (the fields in a fixed
// order, as a SQLite chunk holds them), sent as an argument of its own beside the write's operations. Lines
// written as objects (before 2026-11-28) are still shown; an item that is neither is left out.
// Runs on the machine's Redis under a prefix of its own, whatever TEST_STORE says.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import { REQUEST_LOG_KEPT, type RequestRecord } from '../../src/usage-stats/usage-stats.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-app.js';

const T0 = Date.parse(FIXTURE_NOW);
const prefix = testRedisPrefix('request-log');
const redis = new Redis(TEST_REDIS_URL);

after(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const record = (i: number, url = `/developer/v1/catalogue/${i}`): RequestRecord => ({
  accountId: 5,
  keyId: 50,
  at: T0 + i,
  outcome: i % 2 === 0 ? 'counted' : 'bad_request',
  used: true,
  address: '192.0.2.5',
  rejection: null,
  call: { method: 'GET', url, status: i % 2 === 0 ? 200 : 400, error: i % 2 === 0 ? null : 'bad_request', durationMs: 2.5, address: '192.0.2.5', requestId: `req-${i}`, endpoint: '/catalogue/:id' },
});

test('request log lines are stored as arrays, read back whole, newest first, and trimmed to the newest 100', async (t) => {
  const stats = new RedisUsageStats(TEST_REDIS_URL, { prefix });
  t.after(() => stats.close());
  await stats.ready();
  // Quotes, backslashes and non-ASCII in the path travel as written (they are JSON inside an argument).
  stats.record(record(0, '/developer/v1/catalogue?search=%22a%5Cb%22&q="é\\"'));
  for (let i = 1; i <= 120; i++) stats.record(record(i));
  await stats.flush();
  const list = `${prefix}stats:{5}:log:50`;
  assert.equal(await redis.llen(list), REQUEST_LOG_KEPT);
  const head = JSON.parse((await redis.lindex(list, 0))!) as unknown;
  assert.deepEqual(head, [new Date(T0 + 120).toISOString(), 'GET', '/developer/v1/catalogue/120', 200, null, 'counted', 2.5, '192.0.2.5', 'req-120']);

  const lines = await stats.requestLog(5, 50, new Date(T0).toISOString());
  assert.equal(lines.length, REQUEST_LOG_KEPT);
  assert.deepEqual(lines[0], { at: new Date(T0 + 120).toISOString(), method: 'GET', path: '/developer/v1/catalogue/120', status: 200, error: null, outcome: 'counted', durationMs: 2.5, address: '192.0.2.5', requestId: 'req-120' });
  assert.deepEqual(lines[1]!.error, 'bad_request');
  assert.equal(lines.at(-1)!.requestId, 'req-21');

  // A key whose first lines are the awkward path: read back exactly.
  const other = new RedisUsageStats(TEST_REDIS_URL, { prefix });
  t.after(() => other.close());
  await other.ready();
  other.record({ ...record(0, '/developer/v1/catalogue?search=%22a%5Cb%22&q="é\\"'), keyId: 51 });
  await other.flush();
  assert.equal((await other.requestLog(5, 51, new Date(T0).toISOString()))[0]!.path, '/developer/v1/catalogue?search=%22a%5Cb%22&q="é\\"');
});

test('lines written as objects before are still shown; an item that is neither is left out', async (t) => {
  const stats = new RedisUsageStats(TEST_REDIS_URL, { prefix });
  t.after(() => stats.close());
  await stats.ready();
  const list = `${prefix}stats:{6}:log:60`;
  const old = { at: new Date(T0).toISOString(), method: 'GET', path: '/developer/v1/me', status: 200, error: null, outcome: 'not_counted', durationMs: 1.5, address: '192.0.2.6', requestId: 'old-1' };
  await redis.rpush(list, JSON.stringify(old), '{"at":', JSON.stringify({ ...old, outcome: 'invented' }), JSON.stringify([1, 2, 3]));
  stats.record({ ...record(2), accountId: 6, keyId: 60 });
  await stats.flush();
  const lines = await stats.requestLog(6, 60, new Date(T0 - 1).toISOString());
  assert.deepEqual(lines.map((l) => l.requestId), ['req-2', 'old-1']);
  assert.deepEqual(lines[1], old);
  // The 7 days' window applies to both.
  assert.deepEqual((await stats.requestLog(6, 60, new Date(T0 + 1).toISOString())).map((l) => l.requestId), ['req-2']);
});
