// The owners' per-key statistics (docs/contract.md, "Metering"): requests per UTC day by outcome, the last use,
// the last 20 rejected requests, through the real pipeline, on the store TEST_STORE picks (the database, or
// Redis beside the Redis meter); the counts agree with /me; records are written without being asked to
// within a second or so, and on close. Also meter.burstUsed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { dayOf } from '../../src/metering/periods.js';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import { FLUSH_RECORDS } from '../../src/usage-stats/stats-pace.js';
import { REJECTIONS_KEPT, type RequestRecord, type StatsBatch, type UsageStats } from '../../src/usage-stats/usage-stats.js';
import { keyIdOf, me, nextWindow } from '../helpers/pipeline-helpers.js';
import { createTestContext, TEST_REDIS_URL, testRedisPrefix, TEST_STORE, V1, type TestContext } from '../helpers/test-app.js';

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext({ env: { PLAN_LIMITS: JSON.stringify({ addon: { monthly: 6, perMinute: 8 } }) } });
});
after(async () => {
  await ctx.close();
});

const today = () => dayOf(ctx.clock.now());

async function countsOf(keyRef: string) {
  const accountId = ctx.loaded.accounts[keyRef.split('-')[0]!]!;
  const keyId = await keyIdOf(ctx, keyRef);
  const days = await ctx.stats.keyOutcomes(accountId, keyId, today(), today());
  assert.equal(days.length, 1);
  return { accountId, keyId, counts: days[0]!.counts };
}

describe('outcomes by day, through the pipeline', () => {
  before(async () => {
    nextWindow(ctx);
    for (let i = 0; i < 3; i++) assert.equal((await ctx.get(`${V1}/catalogue/1`)).statusCode, 200);
    assert.equal((await ctx.get(`${V1}/catalogue/99999`)).statusCode, 404);
    const first = await ctx.get(`${V1}/catalogue/2`);
    assert.equal(first.statusCode, 200);
    assert.equal((await ctx.get(`${V1}/catalogue/2`, 'alice', { headers: { 'if-none-match': String(first.headers.etag) } })).statusCode, 304);
    assert.equal((await ctx.get(`${V1}/catalogue?nonsense=1`)).statusCode, 400);
    assert.equal((await ctx.get(`${V1}/no-such-route`)).statusCode, 404);
    assert.equal((await ctx.get(`${V1}/catalogue/1`, 'alice-noscope')).statusCode, 403);
    assert.equal((await ctx.get(`${V1}/me`, 'alice-revoked')).statusCode, 401);
    assert.equal((await ctx.get(`${V1}/me`, 'alice-expired')).statusCode, 401);
    assert.equal((await ctx.get(`${V1}/me`, 'carol')).statusCode, 403);
    // bob: 6 a month, 8 a minute.
    const bobStatuses = [];
    for (let i = 0; i < 9; i++) bobStatuses.push((await ctx.get(`${V1}/catalogue/1`, 'bob')).statusCode);
    assert.deepEqual(bobStatuses, [200, 200, 200, 200, 200, 200, 429, 429, 429]);
    await ctx.stats.flush();
  });

  it("a key's counted requests (200s and 404 item misses) agree with /me and with the meter", async () => {
    const { counts, keyId, accountId } = await countsOf('alice');
    assert.deepEqual(counts, {
      counted: 5, // 3 + 1 + the first /catalogue/2; the 404 for a missing item is counted, as the meter counts it
      not_modified: 1,
      bad_request: 2, // an unknown parameter (400), a path the API does not have (404)
      insufficient_scope: 0,
      rate_limited: 0,
      quota_exceeded: 0,
      server_error: 0,
      revoked_or_expired: 0,
      refused_address: 0,
    });
    const { used } = await me(ctx);
    assert.equal(used, counts.counted, 'the owner sees what /me shows');
    const metered = await ctx.meter.keyUsage(accountId, keyId, today(), today());
    assert.equal(metered[0]?.requests, counts.counted);
  });

  it('insufficient scope, revoked and expired keys count on their own key; a lapsed plan counts in no bucket', async () => {
    assert.equal((await countsOf('alice-noscope')).counts.insufficient_scope, 1);
    assert.equal((await countsOf('alice-revoked')).counts.revoked_or_expired, 1);
    assert.equal((await countsOf('alice-expired')).counts.revoked_or_expired, 1);
    const carol = await countsOf('carol');
    assert.equal(Object.values(carol.counts).reduce((a, b) => a + b, 0), 0);
    const [rejection] = await ctx.stats.recentRejections(carol.accountId, carol.keyId);
    assert.equal(rejection?.status, 403);
    assert.equal(rejection?.error, 'forbidden');
  });

  it('quota exceeded and rate limited, by their codes', async () => {
    const { counts } = await countsOf('bob');
    assert.equal(counts.counted, 6);
    assert.equal(counts.quota_exceeded, 2);
    assert.equal(counts.rate_limited, 1);
  });

  it('a revoked key: the attempt is the key\'s, with what the client was told; the client sees the usual 401', async () => {
    const res = await ctx.get(`${V1}/catalogue/1?secret=1`, 'alice-revoked');
    assert.deepEqual(res.json(), { error: 'unauthorized', message: 'The API key has been revoked.' });
    await ctx.stats.flush();
    const { accountId, keyId } = await countsOf('alice-revoked');
    const [latest] = await ctx.stats.recentRejections(accountId, keyId);
    assert.ok(latest);
    assert.equal(latest.method, 'GET');
    assert.equal(latest.path, `${V1}/catalogue/1`, 'the path without its query string');
    assert.equal(latest.status, 401);
    assert.equal(latest.error, 'unauthorized');
    assert.equal(latest.message, 'The API key has been revoked.');
    assert.equal(latest.requestId, res.headers['x-request-id']);
    assert.equal(latest.at, new Date(ctx.clock.now()).toISOString());
    const lastUse = await ctx.stats.lastUse(accountId, [keyId]);
    assert.equal(lastUse.has(keyId), false, 'a refused attempt is not a use');
  });

  it('last use: time and client address of the latest request past the key check', async () => {
    const { accountId, keyId } = await countsOf('alice');
    ctx.clock.advance(5000);
    await ctx.get(`${V1}/me`);
    await ctx.stats.flush();
    const use = (await ctx.stats.lastUse(accountId, [keyId, 987_654])).get(keyId);
    assert.deepEqual(use, { at: new Date(ctx.clock.now()).toISOString(), address: '127.0.0.1' });
  });
});

describe('the last 20 rejections', () => {
  it('keeps only the newest 20, newest first, across flushes', async () => {
    nextWindow(ctx);
    const { accountId, keyId } = await countsOf('alice-second');
    for (let i = 1; i <= 25; i++) {
      ctx.clock.advance(1000);
      assert.equal((await ctx.get(`${V1}/nope-${i}?x=${i}`, 'alice-second')).statusCode, 404);
      if (i === 12) await ctx.stats.flush();
    }
    await ctx.stats.flush();
    const rejections = await ctx.stats.recentRejections(accountId, keyId);
    assert.equal(rejections.length, REJECTIONS_KEPT);
    assert.deepEqual(
      rejections.map((r) => r.path),
      Array.from({ length: 20 }, (_, i) => `${V1}/nope-${25 - i}`),
    );
    assert.equal(rejections[0]?.error, 'not_found');
    assert.equal(rejections[0]?.message, 'No such route.');
    if (ctx.stats instanceof DatabaseUsageStats) {
      const stored = await ctx.store.db.selectFrom('key_rejections').select((eb) => eb.fn.countAll<number | string>().as('n')).where('key_id', '=', keyId).executeTakeFirstOrThrow();
      assert.equal(Number(stored.n), REJECTIONS_KEPT, 'the store keeps no more than it shows');
    }
  });
});

describe('a key in a rejected URL', () => {
  it('is not kept in the path the owner is shown, however it is percent-encoded', async () => {
    nextWindow(ctx);
    const { accountId, keyId } = await countsOf('alice-second');
    const key = ctx.loaded.keys['alice-second']!;
    const once = key.replace(/_/g, '%5F');
    const twice = key.replace(/_/g, '%255F');
    for (const written of [key, once, twice]) {
      ctx.clock.advance(1000);
      assert.equal((await ctx.get(`${V1}/catalogue/${written}`, 'alice-second')).statusCode, 400);
    }
    await ctx.stats.flush();
    const kept = (await ctx.stats.recentRejections(accountId, keyId)).slice(0, 3);
    assert.deepEqual(kept.map((r) => r.path), Array.from({ length: 3 }, () => `${V1}/catalogue/[redacted]`));
    for (const rejection of kept) assert.ok(!JSON.stringify(rejection).includes(key.slice(-20)), JSON.stringify(rejection));
  });
});

describe('a key without its prefix in a rejected URL', () => {
  it('is not kept in the path the owner is shown (live_<secret>, with or without the underscore before it)', async () => {
    nextWindow(ctx);
    const { accountId, keyId } = await countsOf('alice-second');
    const key = ctx.loaded.keys['alice-second']!;
    const bare = key.slice(key.indexOf('_') + 1);
    for (const written of [bare, `_${bare}`, bare.replace('_', '%5F')]) {
      ctx.clock.advance(1000);
      assert.equal((await ctx.get(`${V1}/catalogue/${written}`, 'alice-second')).statusCode, 400);
    }
    await ctx.stats.flush();
    const kept = (await ctx.stats.recentRejections(accountId, keyId)).slice(0, 3);
    assert.deepEqual(kept.map((r) => r.path).sort(), [`${V1}/catalogue/[redacted]`, `${V1}/catalogue/[redacted]`, `${V1}/catalogue/_[redacted]`]);
    for (const rejection of kept) assert.ok(!JSON.stringify(rejection).includes(key.slice(-20)), JSON.stringify(rejection));
  });
});

describe('writing', () => {
  it('records are written by themselves shortly after the request (no flush asked)', async () => {
    const { accountId, keyId, counts } = await countsOf('alice-expiring');
    await ctx.get(`${V1}/catalogue/1`, 'alice-expiring');
    // Written FLUSH_DELAY_MS (0.5 s) after the request; polled generously for a loaded machine.
    const deadline = Date.now() + 10_000;
    let counted = counts.counted;
    while (counted === counts.counted && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      counted = (await ctx.stats.keyOutcomes(accountId, keyId, today(), today()))[0]!.counts.counted;
    }
    assert.equal(counted, counts.counted + 1);
  });

  it(`${FLUSH_RECORDS} records held are written at once, without waiting for the timer (a short write, not a long one later)`, async () => {
    const accountId = ctx.loaded.accounts.alice!;
    const keyId = await keyIdOf(ctx, 'alice-expiring');
    const writes: number[] = [];
    class Counting extends DatabaseUsageStats {
      protected override async write(batch: StatsBatch): Promise<void> {
        // The database's outcomes go by the hour (`o:` buckets), made into days when the purge takes them.
        writes.push(batch.buckets.filter((b) => b.field.startsWith('o:')).reduce((n, o) => n + o.requests, 0));
        await super.write(batch);
      }
    }
    const stats = new Counting(ctx.store);
    // A day nothing else writes, in the past, so that the last use other tests read stays theirs.
    const at = ctx.clock.now() - 3 * 86_400_000;
    const record: RequestRecord = { accountId, keyId, at, outcome: 'counted', used: true, address: '192.0.2.7', rejection: null };
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    try {
      for (let i = 1; i < FLUSH_RECORDS; i++) stats.record(record);
      await turns(3);
      assert.deepEqual(writes, [], 'fewer records wait for the timer');
      stats.record(record);
      await turns(3);
      assert.deepEqual(writes, [FLUSH_RECORDS], 'the batch is written at the next turn');
      const deadline = Date.now() + 10_000;
      let counted = 0;
      while (counted !== FLUSH_RECORDS && Date.now() < deadline) {
        counted = (await stats.keyOutcomes(accountId, keyId, dayOf(at), dayOf(at)))[0]?.counts.counted ?? 0;
        if (counted !== FLUSH_RECORDS) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(counted, FLUSH_RECORDS);
    } finally {
      await stats.close();
    }
  });

  // On PostgreSQL runs, the database implementation is tried too (the app there records into Redis).
  const kinds: Array<'database' | 'redis'> = TEST_STORE === 'postgres' ? ['database', 'redis'] : ['database'];
  for (const kind of kinds) {
    it(`close writes what is still held; the reads of another instance see it (${kind})`, async () => {
      const accountId = ctx.loaded.accounts.alice!;
      const keyId = await keyIdOf(ctx, 'alice-expiring');
      const prefix = testRedisPrefix('stats');
      const open = async (): Promise<UsageStats> => {
        if (kind === 'database') return new DatabaseUsageStats(ctx.store);
        const stats = new RedisUsageStats(TEST_REDIS_URL, { prefix });
        await stats.ready();
        return stats;
      };
      const writer = await open();
      const at = ctx.clock.now() + 86_400_000; // tomorrow: a day nothing else wrote
      const record: RequestRecord = { accountId, keyId, at, outcome: 'server_error', used: true, address: '192.0.2.9', rejection: null };
      writer.record(record);
      writer.record({ ...record, at: at + 1 });
      const rejected = (i: number): RequestRecord => ({
        ...record,
        at: at + i,
        outcome: 'bad_request',
        used: false,
        rejection: { at: new Date(at + i).toISOString(), method: 'GET', path: `/r${i}`, status: 400, error: 'bad_request', message: `#${i}`, requestId: `req-${i}` },
      });
      for (let i = 1; i <= 22; i++) writer.record(rejected(i));
      await writer.close();
      const reader = await open();
      try {
        const [day] = await reader.keyOutcomes(accountId, keyId, dayOf(at), dayOf(at));
        assert.equal(day?.counts.server_error, 2);
        assert.equal(day?.counts.bad_request, 22);
        assert.deepEqual((await reader.recentRejections(accountId, keyId)).map((r) => r.path), Array.from({ length: 20 }, (_, i) => `/r${22 - i}`));
        assert.deepEqual((await reader.lastUse(accountId, [keyId])).get(keyId), { at: new Date(at + 1).toISOString(), address: '192.0.2.9' });
        // An older use written later does not move the last use back.
        reader.record({ ...record, at: at - 60_000, address: '192.0.2.1' });
        await reader.flush();
        assert.deepEqual((await reader.lastUse(accountId, [keyId])).get(keyId), { at: new Date(at + 1).toISOString(), address: '192.0.2.9' });
        if (kind === 'redis') {
          const redis = new Redis(TEST_REDIS_URL);
          try {
            const keys = await redis.keys(`${prefix}*`);
            assert.ok(keys.length >= 2);
            // One hash slot per account: the only braces of every key hold the account id.
            for (const key of keys) assert.deepEqual(key.match(/\{[^}]*\}/g), [`{${accountId}}`], key);
            await redis.del(...keys);
          } finally {
            redis.disconnect();
          }
        }
      } finally {
        await reader.close();
      }
    });
  }
});

describe('meter.burstUsed', () => {
  it('counts the requests of the last 60 seconds, per account', async () => {
    nextWindow(ctx);
    const alice = ctx.loaded.accounts.alice!;
    const bob = ctx.loaded.accounts.bob!;
    assert.equal(await ctx.meter.burstUsed(alice, ctx.clock.now()), 0);
    for (let i = 0; i < 3; i++) await ctx.get(`${V1}/me`);
    ctx.clock.advance(30_000);
    await ctx.get(`${V1}/catalogue/1`);
    assert.equal(await ctx.meter.burstUsed(alice, ctx.clock.now()), 4);
    assert.equal(await ctx.meter.burstUsed(bob, ctx.clock.now()), 0);
    ctx.clock.advance(30_000);
    assert.equal(await ctx.meter.burstUsed(alice, ctx.clock.now()), 1, 'the first three have left the window');
    ctx.clock.advance(30_000);
    assert.equal(await ctx.meter.burstUsed(alice, ctx.clock.now()), 0);
  });
});
