// The overview's and the account CSV's usage read from the account's day totals (issue 19: 90 days read as
// 90 days' rows or hashes, not 20 keys x 90): on the suite's store (SQLite with the statistics in the
// database, or PostgreSQL with them in Redis), the numbers equal the per-key sums of the keys the overview
// lists: with a key no longer listed (expired over 90 days ago) still being tried, with statistics written
// before the totals existed (rows before migration 0015; Redis hashes before a release that writes totals),
// and with late records for an older day.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { AppDeps } from '../../src/http/app-types.js';
import { accountKeyIds } from '../../src/http/settings/overview-data.js';
import { usageCsv } from '../../src/http/settings/routes/usage-csv.js';
import { API_ENDPOINTS, usageDepth, type RangeName } from '../../src/http/settings/usage-depth-data.js';
import { dayOf } from '../../src/metering/periods.js';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import { OUTCOMES, type Outcome, type RequestRecord } from '../../src/usage-stats/usage-stats.js';
import { migrateTo, migrateToLatest } from '../../src/store/database.js';
import { createTestContext, TEST_REDIS_URL, TEST_STORE, type TestContext } from '../helpers/test-app.js';
import { keyIdOf } from '../helpers/pipeline-helpers.js';
import { SettingsClient } from './settings-helpers.js';

const DAY = 86_400_000;
const NOW = '2026-11-20T12:00:00.000Z';

/** `count` records of the key at `at` + i ms, cycling through outcomes and endpoints. */
function records(accountId: number, keyId: number, at: number, count: number, outcomes: readonly Outcome[] = OUTCOMES): RequestRecord[] {
  return Array.from({ length: count }, (_, i) => {
    const outcome = outcomes[i % outcomes.length]!;
    const endpoint = i % 5 === 4 ? null : API_ENDPOINTS[(i + keyId) % API_ENDPOINTS.length]!;
    return {
      accountId,
      keyId,
      at: at + i,
      outcome,
      address: '203.0.113.7',
      used: true,
      rejection: null,
      call: { method: 'GET', url: '/developer/v1/catalogue', status: 200, error: null, durationMs: (i * 7) % 90, address: '203.0.113.7', requestId: `r-${keyId}-${at}-${i}`, endpoint },
    };
  });
}

/** Alice's key ids, lowest first (the migration tests' rows are written for the first two). */
async function aliceKeyIds(ctx: TestContext): Promise<number[]> {
  return (await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', ctx.loaded.accounts.alice!).orderBy('id').execute()).map((r) => r.id);
}

/**
 * A fresh store migrated up to `migration`, its statistics read from the database: `body` writes rows as an
 * earlier release did, migrates and reads; both are closed after.
 */
async function fromMigration(migration: string, body: (ctx: TestContext, stats: DatabaseUsageStats, keys: { alice: number; k1: number; k2: number }) => Promise<void>): Promise<void> {
  const ctx = await createTestContext({ now: NOW });
  const stats = new DatabaseUsageStats(ctx.store);
  try {
    const [k1, k2] = await aliceKeyIds(ctx);
    await migrateTo(ctx.store, migration);
    await body(ctx, stats, { alice: ctx.loaded.accounts.alice!, k1: k1!, k2: k2! });
  } finally {
    await stats.close();
    await ctx.close();
  }
}

/** The usage as the key details read it (each key's buckets and outcomes summed), and as the account view does. */
async function bothWays(ctx: TestContext, accountId: number, range: RangeName) {
  const deps: AppDeps = { config: ctx.config, store: ctx.store, meter: ctx.meter, clock: ctx.clock, stats: ctx.stats };
  const now = ctx.clock.now();
  const ids = await accountKeyIds(deps, accountId, now);
  const perKey = await usageDepth(deps, accountId, ids.shown, range, now);
  const totals = await usageDepth(deps, accountId, ids.shown, range, now, ids.hidden);
  return { perKey, totals, ids };
}

describe('the account usage from day totals', () => {
  let ctx: TestContext;
  let alice: number;
  /** Alice's key ids by fixture ref without `alice-` (`default` for `alice`). */
  let keys: Record<string, number>;

  before(async () => {
    ctx = await createTestContext({ now: NOW });
    alice = ctx.loaded.accounts.alice!;
    keys = {};
    for (const ref of ['alice', 'alice-second', 'alice-noscope', 'alice-revoked', 'alice-expired', 'alice-expiring']) keys[ref === 'alice' ? 'default' : ref.slice(6)] = await keyIdOf(ctx, ref);
  });
  after(async () => ctx.close());

  test('equals the sum of the listed keys, a key no longer listed still being tried taken away', async () => {
    const now = ctx.clock.now();
    for (const [name, keyId] of Object.entries(keys)) {
      for (const daysAgo of [0, 1, 2, 30, 89]) for (const r of records(alice, keyId, now - daysAgo * DAY - 3_600_000, 7 + name.length)) ctx.stats.record(r);
    }
    // The expired key (expired 2026-01-01, over 90 days ago: not listed) is still tried today.
    for (const r of records(alice, keys.expired!, now - 60_000, 11, ['revoked_or_expired'])) ctx.stats.record(r);
    // Another account's requests are not alice's.
    const bob = ctx.loaded.accounts.bob!;
    const bobKey = (await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', bob).executeTakeFirstOrThrow()).id;
    for (const r of records(bob, bobKey, now - 3_600_000, 50)) ctx.stats.record(r);
    await ctx.stats.flush();

    for (const range of ['7d', '30d', '90d'] as const) {
      const { perKey, totals, ids } = await bothWays(ctx, alice, range);
      assert.ok(ids.hidden.includes(keys.expired!), 'the expired key is not listed');
      assert.deepEqual(totals, perKey, range);
    }
    const { totals, ids } = await bothWays(ctx, alice, '90d');
    const today = totals.periods.length - 1;
    assert.ok(totals.endpoints.some((e) => e.perPeriod[today]! > 0), 'today has requests');
    const deps: AppDeps = { config: ctx.config, store: ctx.store, meter: ctx.meter, clock: ctx.clock, stats: ctx.stats };
    const everyKey = await usageDepth(deps, alice, [...ids.shown, ...ids.hidden], '90d', ctx.clock.now());
    const [expiredToday] = await ctx.stats.keyOutcomes(alice, keys.expired!, dayOf(ctx.clock.now()), dayOf(ctx.clock.now()));
    assert.ok(expiredToday!.counts.revoked_or_expired >= 11);
    assert.equal(everyKey.outcomes.revoked_or_expired[today]! - totals.outcomes.revoked_or_expired[today]!, expiredToday!.counts.revoked_or_expired, "the expired key's attempts are not the listed keys'");

    // The pages: the account CSV is the per-key sum's CSV; the overview answers.
    const browser = new SettingsClient(ctx);
    await browser.signIn(alice);
    const csv = await browser.get('/settings/developer-api/usage.csv?range=90d');
    assert.equal(csv.statusCode, 200, csv.body);
    assert.equal(csv.body, usageCsv((await bothWays(ctx, alice, '90d')).perKey));
    assert.equal((await browser.get('/settings/developer-api?range=90d')).statusCode, 200);
  });

  test('late records for an older day, and a key revoked now (still listed), keep them equal', async () => {
    const now = ctx.clock.now();
    ctx.clock.advance(1000);
    await ctx.store.db.updateTable('api_keys').set({ revoked_at: new Date(now).toISOString() }).where('id', '=', keys.second!).execute();
    for (const r of records(alice, keys.second!, now - 5 * DAY, 13, ['revoked_or_expired', 'counted'])) ctx.stats.record(r);
    for (const r of records(alice, keys.default!, now - 40 * DAY, 9)) ctx.stats.record(r);
    await ctx.stats.flush();
    const { perKey, totals, ids } = await bothWays(ctx, alice, '90d');
    assert.ok(ids.shown.includes(keys.second!));
    assert.deepEqual(totals, perKey);
  });

  test('statistics written before the totals existed are in them', { skip: TEST_STORE !== 'postgres' && 'Redis: TEST_STORE=postgres' }, async () => {
    // A release before wrote the keys' hashes alone: written here through the statistics, then the
    // totals and the account's totals-since removed, as that release would have left them.
    const prefix = `${ctx.config.redisKeyPrefix}upgrade-${process.pid}:`;
    const carol = ctx.loaded.accounts.carol!;
    const carolKeys = (await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', carol).execute()).map((r) => r.id);
    const now = ctx.clock.now();
    const old = new RedisUsageStats(TEST_REDIS_URL, { prefix });
    const redis = new Redis(TEST_REDIS_URL);
    try {
      await old.ready();
      for (const keyId of carolKeys) for (const daysAgo of [0, 1, 2, 10, 80]) for (const r of records(carol, keyId, now - daysAgo * DAY - 7_200_000, 6)) old.record(r);
      await old.close();
      const totalsKeys = await redis.keys(`${prefix}stats:{${carol}}:acct:*`);
      assert.ok(totalsKeys.length >= 5);
      await redis.del(...totalsKeys, `${prefix}stats:{${carol}}:totals-since`);

      const deps = { config: ctx.config, store: ctx.store, meter: ctx.meter, clock: ctx.clock };
      const reader = new RedisUsageStats(TEST_REDIS_URL, { prefix });
      await reader.ready();
      const withStats = (stats: RedisUsageStats): AppDeps => ({ ...deps, stats });
      const compare = async (label: string) => {
        const ids = await accountKeyIds(withStats(reader), carol, ctx.clock.now());
        const perKey = await usageDepth(withStats(reader), carol, ids.shown, '90d', ctx.clock.now());
        const totals = await usageDepth(withStats(reader), carol, ids.shown, '90d', ctx.clock.now(), ids.hidden);
        assert.deepEqual(totals, perKey, label);
        return totals;
      };
      try {
        // No totals-since yet: the keys' hashes, every day.
        const first = await compare('before any flush of this release');
        assert.ok(first.endpoints.reduce((n, e) => n + e.total, 0) > 0);
        // This release's first flush (today) marks tomorrow; yesterday and before are filled when read.
        for (const keyId of carolKeys) for (const r of records(carol, keyId, now - 60_000, 4)) reader.record(r);
        await reader.flush();
        assert.equal(await redis.get(`${prefix}stats:{${carol}}:totals-since`), dayOf(now + DAY));
        await compare('after the first flush, before any day is filled');
        assert.equal(await redis.hget(`${prefix}stats:{${carol}}:acct:${dayOf(now - 10 * DAY)}`, '_c'), '1', 'an older day is filled once read');
        // Records for days already filled, and for today, add to both.
        for (const keyId of carolKeys) for (const daysAgo of [0, 10, 80]) for (const r of records(carol, keyId, now - daysAgo * DAY - 1000, 3)) reader.record(r);
        await reader.flush();
        await compare('after more records');
        // Days from totals-since on are read from the totals alone.
        ctx.clock.advance(2 * DAY);
        for (const keyId of carolKeys) for (const r of records(carol, keyId, ctx.clock.now() - 1000, 5)) reader.record(r);
        await reader.flush();
        await compare('two days later');
      } finally {
        await reader.close();
        ctx.clock.set(NOW);
      }
    } finally {
      const left = await redis.keys(`${prefix}*`);
      if (left.length > 0) await redis.del(...left);
      redis.disconnect();
    }
  });
});

test('migration 0015 fills the totals from the rows written before it; its triggers, as 0016 made them, keep them', async () => {
  const ctx = await createTestContext({ now: NOW });
  try {
    const { store } = ctx;
    const [k1, k2] = await aliceKeyIds(ctx);
    // The store as before 0015 (its triggers and table gone), then rows written, then the migrations again.
    await migrateTo(store, '0014-version-notify');
    await store.db
      .insertInto('key_usage_buckets')
      .values([
        { key_id: k1!, period: '2026-11-01', field: 'e:/me', requests: 3 },
        { key_id: k2!, period: '2026-11-01', field: 'e:/me', requests: 4 },
        { key_id: k2!, period: '2026-11-01T08', field: 'e:/me', requests: 4 },
      ])
      .execute();
    await store.db.insertInto('key_outcomes_daily').values([{ key_id: k1!, day: '2026-11-01', outcome: 'counted', requests: 5 }]).execute();
    // Up to the migration before 0019, which takes the hours kept out of the days' rows (tested on its own).
    await migrateTo(store, '0018-truncate-access');
    const alice = ctx.loaded.accounts.alice!;
    const totals = async () =>
      (await store.db.selectFrom('account_usage_days').select(['account_id', 'day', 'field', 'requests']).orderBy('field').execute()).map((r) => [Number(r.account_id), r.day, r.field, Number(r.requests)]);
    assert.deepEqual(await totals(), [
      [alice, '2026-11-01', 'e:/me', 7],
      [alice, '2026-11-01', 'o:counted', 5],
    ]);
    // An upsert adds; a row changed or deleted by hand moves the total with it.
    await store.db
      .insertInto('key_usage_buckets')
      .values({ key_id: k1!, period: '2026-11-01', field: 'e:/me', requests: 2 })
      .onConflict((oc) => oc.columns(['key_id', 'period', 'field']).doUpdateSet({ requests: sql`key_usage_buckets.requests + excluded.requests` }))
      .execute();
    await store.db.updateTable('key_outcomes_daily').set({ requests: 1 }).where('key_id', '=', k1!).execute();
    await store.db.deleteFrom('key_usage_buckets').where('key_id', '=', k2!).execute();
    assert.deepEqual(await totals(), [
      [alice, '2026-11-01', 'e:/me', 5],
      [alice, '2026-11-01', 'o:counted', 1],
    ]);
    // An hour row adds nothing; a row moved by hand to another day, field or key moves its requests.
    await store.db.insertInto('key_usage_buckets').values({ key_id: k1!, period: '2026-11-01T09', field: 'e:/me', requests: 6 }).execute();
    await store.db.updateTable('key_usage_buckets').set({ requests: 8 }).where('period', '=', '2026-11-01T09').execute();
    await store.db.updateTable('key_outcomes_daily').set({ day: '2026-11-02', outcome: 'bad_request' }).where('key_id', '=', k1!).execute();
    await store.db.updateTable('key_usage_buckets').set({ period: '2026-11-03', field: 'e:/catalogue/:id' }).where('period', '=', '2026-11-01').execute();
    await store.db.updateTable('key_usage_buckets').set({ period: '2026-11-04' }).where('period', '=', '2026-11-01T09').execute();
    const byFieldAndDay = (rows: unknown[][]) => rows.sort((a, b) => `${String(a[2])} ${String(a[1])}`.localeCompare(`${String(b[2])} ${String(b[1])}`));
    assert.deepEqual(byFieldAndDay(await totals()), [
      [alice, '2026-11-03', 'e:/catalogue/:id', 5],
      [alice, '2026-11-01', 'e:/me', 0],
      [alice, '2026-11-04', 'e:/me', 8],
      [alice, '2026-11-02', 'o:bad_request', 1],
      [alice, '2026-11-01', 'o:counted', 0],
    ]);
  } finally {
    await ctx.close();
  }
});

test("migration 0016 undone gives back 0015's triggers, which keep the totals too", async () => {
  const ctx = await createTestContext({ now: NOW });
  try {
    const { store } = ctx;
    const [k1] = await aliceKeyIds(ctx);
    await migrateTo(store, '0015-account-usage-days');
    const upsert = () =>
      store.db
        .insertInto('key_usage_buckets')
        .values({ key_id: k1!, period: '2026-10-01', field: 'e:/me', requests: 2 })
        .onConflict((oc) => oc.columns(['key_id', 'period', 'field']).doUpdateSet({ requests: sql`key_usage_buckets.requests + excluded.requests` }))
        .execute();
    const total = async () =>
      Number((await store.db.selectFrom('account_usage_days').select('requests').where('day', '=', '2026-10-01').where('field', '=', 'e:/me').executeTakeFirst())?.requests);
    await upsert();
    await upsert();
    assert.equal(await total(), 4);
    await migrateToLatest(store);
    await upsert();
    assert.equal(await total(), 6);
  } finally {
    await ctx.close();
  }
});

test("migration 0019 takes the hours kept out of their days' rows: every day and hour reads the same, and down gives them back", async () => {
  await fromMigration('0018-truncate-access', async ({ store }, stats, { alice, k1, k2 }) => {
    // As a flush wrote them before: each hour's counts in its day's row too (the day's other hours purged).
    await store.db
      .insertInto('key_usage_buckets')
      .values([
        { key_id: k1, period: '2026-11-19T08', field: 'e:/me', requests: 4 },
        { key_id: k1, period: '2026-11-19T08', field: 'o:counted', requests: 4 },
        { key_id: k1, period: '2026-11-19T08', field: 's:3', requests: 4 },
        { key_id: k1, period: '2026-11-19T09', field: 'e:/me', requests: 1 },
        { key_id: k1, period: '2026-11-19', field: 'e:/me', requests: 11 },
        { key_id: k1, period: '2026-11-19', field: 's:3', requests: 4 },
        { key_id: k2, period: '2026-11-19', field: 'e:/me', requests: 2 },
        { key_id: k2, period: '2026-11-18', field: 'e:/me', requests: 5 },
      ])
      .execute();
    const periods = ['2026-11-18', '2026-11-19', '2026-11-19T08', '2026-11-19T09'];
    const days = ['2026-11-18', '2026-11-19'];
    const rowsOf = async () =>
      (await store.db.selectFrom('key_usage_buckets').select(['key_id', 'period', 'field', 'requests']).where('key_id', 'in', [k1, k2]).where(sql<number>`length(period)`, '=', 10).orderBy('key_id').orderBy('period').orderBy('field').execute()).map(
        (r) => [r.key_id === k1 ? 'k1' : 'k2', r.period, r.field, Number(r.requests)],
      );
    const before = await rowsOf();
    // What these rows read as, once the days hold the hours purged only.
    const expected = new Map([
      ['2026-11-18', new Map([['e:/me', 5]])],
      ['2026-11-19', new Map([['e:/me', 13], ['s:3', 4]])],
      ['2026-11-19T08', new Map([['e:/me', 4], ['o:counted', 4], ['s:3', 4]])],
      ['2026-11-19T09', new Map([['e:/me', 1]])],
    ]);
    await migrateToLatest(store);
    assert.deepEqual(await stats.usageBuckets(alice, [k1, k2], periods), expected);
    const account = await stats.accountDays(alice, [k1, k2], [], days);
    assert.equal(account.get('2026-11-19')?.get('e:/me'), 13, "the account's day: its keys' rows and hours");
    assert.equal(account.get('2026-11-19')?.get('s:3'), 4);
    assert.equal(account.get('2026-11-18')?.get('e:/me'), 5);
    assert.deepEqual(await rowsOf(), [
      ['k1', '2026-11-19', 'e:/me', 6],
      ['k1', '2026-11-19', 's:3', 0],
      ['k2', '2026-11-18', 'e:/me', 5],
      ['k2', '2026-11-19', 'e:/me', 2],
    ]);
    await migrateTo(store, '0018-truncate-access');
    assert.deepEqual(await rowsOf(), before, 'down: the hours added to their days again');
    await migrateToLatest(store);
  });
});

test("migration 0020 takes the outcome hours kept out of key_outcomes_daily: every day reads the same, the account's too, and down gives them back", async () => {
  await fromMigration('0019-days-from-hours', async ({ store }, stats, { alice, k1, k2 }) => {
    // As a flush wrote them before: each outcome's hours in its day's row too (the day's other hours purged).
    await store.db
      .insertInto('key_usage_buckets')
      .values([
        { key_id: k1, period: '2026-11-19T08', field: 'o:counted', requests: 4 },
        { key_id: k1, period: '2026-11-19T09', field: 'o:counted', requests: 1 },
        { key_id: k1, period: '2026-11-19T09', field: 'o:bad_request', requests: 2 },
        { key_id: k1, period: '2026-11-19T09', field: 'e:/me', requests: 3 },
      ])
      .execute();
    await store.db
      .insertInto('key_outcomes_daily')
      .values([
        { key_id: k1, day: '2026-11-19', outcome: 'counted', requests: 9 },
        { key_id: k1, day: '2026-11-19', outcome: 'bad_request', requests: 2 },
        { key_id: k2, day: '2026-11-19', outcome: 'counted', requests: 3 },
        { key_id: k2, day: '2026-11-18', outcome: 'server_error', requests: 1 },
      ])
      .execute();
    const rowsOf = async () =>
      (await store.db.selectFrom('key_outcomes_daily').select(['key_id', 'day', 'outcome', 'requests']).where('key_id', 'in', [k1, k2]).orderBy('key_id').orderBy('day').orderBy('outcome').execute()).map(
        (r) => [r.key_id === k1 ? 'k1' : 'k2', r.day, r.outcome, Number(r.requests)],
      );
    const reads = async () => ({
      k1: (await stats.keyOutcomes(alice, k1, '2026-11-18', '2026-11-19')).map((d) => [d.day, d.counts.counted, d.counts.bad_request, d.counts.server_error]),
      both: (await stats.keysOutcomes(alice, [k1, k2], '2026-11-18', '2026-11-19')).map((d) => [d.day, d.counts.counted, d.counts.bad_request, d.counts.server_error]),
      account: [...((await stats.accountDays(alice, [k1, k2], [], ['2026-11-19'])).get('2026-11-19') ?? new Map())].filter(([field]) => field.startsWith('o:')).sort(),
    });
    const before = await rowsOf();
    await migrateToLatest(store);
    const expected = {
      k1: [
        ['2026-11-19', 9, 2, 0],
        ['2026-11-18', 0, 0, 0],
      ],
      both: [
        ['2026-11-19', 12, 2, 0],
        ['2026-11-18', 0, 0, 1],
      ],
      account: [
        ['o:bad_request', 2],
        ['o:counted', 12],
      ],
    };
    assert.deepEqual(await reads(), expected, 'each day: its rows plus its hours kept');
    assert.deepEqual(await rowsOf(), [
      ['k1', '2026-11-19', 'bad_request', 0],
      ['k1', '2026-11-19', 'counted', 4],
      ['k2', '2026-11-18', 'server_error', 1],
      ['k2', '2026-11-19', 'counted', 3],
    ]);
    await migrateTo(store, '0019-days-from-hours');
    assert.deepEqual(await rowsOf(), before, 'down: the hours added to their days again');
    await migrateToLatest(store);
  });
});
