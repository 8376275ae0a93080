// shelfapi copy-store: an SQLite store with traffic on it (counted through the real app) copied into a
// fresh PostgreSQL schema, then served from there, with the meter in PostgreSQL and in Redis: every key
// answers as before with the same secret, usage and statistics carry over, every table's rows are the
// same. And every table a migrated store has, in either dialect, has a copy rule. Needs the machine's
// PostgreSQL and Redis (always present), whatever TEST_STORE says. The command line: copy-store-cli.test.ts.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { sql, type Kysely } from 'kysely';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { copyStore, type CopyReport } from '../../src/copy-store/copy-store.js';
import { TABLE_RULES, tablesWithoutRule } from '../../src/copy-store/table-rules.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { buildApp, type App } from '../../src/http/app.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import type { Meter } from '../../src/metering/meter.js';
import { dayOf, periodOf } from '../../src/metering/periods.js';
import { hourOf } from '../../src/usage-stats/usage-buckets.js';
import { PostgresMeter } from '../../src/metering/postgres-meter.js';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import { SqliteMeter } from '../../src/metering/sqlite-meter.js';
import type { UsageStats } from '../../src/usage-stats/usage-stats.js';
import { OPERATOR } from '../../src/services/actor.js';
import { createKey, revokeKey, rollKey } from '../../src/services/keys.service.js';
import { hideExpiryReminder } from '../../src/services/expiry-reminders.js';
import { handoverSecret } from '../../src/services/settings-auth/handover-token.js';
import { loadSession, startSession } from '../../src/services/settings-auth/sessions.js';
import { migrateToLatest, openStore, type Store } from '../../src/store/database.js';
import type { Database } from '../../src/store/schema.js';
import { V1 } from '../helpers/cli-helpers.js';
import { fixture } from '../helpers/fixture.js';
import { TEST_REDIS_URL } from '../helpers/test-app.js';
import { closeAfter, freshTarget, KEY_PREFIX, redisKeys, redisPrefix, sha256, tmp, useCopyStoreWorkspace } from './copy-store-fixtures.js';

useCopyStoreWorkspace();

/** Every row of a table, each as JSON with its columns in name order, sorted: comparable across the two dialects. */
async function rowsOf(db: Kysely<Database>, table: string, leaveOut: readonly string[] = []): Promise<string[]> {
  const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db);
  return rows
    .map((row) =>
      JSON.stringify(
        Object.keys(row)
          .filter((c) => !leaveOut.includes(c))
          .sort()
          .map((c) => [c, Buffer.isBuffer(row[c]) ? (row[c] as Buffer).toString('hex') : row[c]]),
      ),
    )
    .sort();
}

interface Served {
  store: Store;
  app: App;
  meter: Meter;
  stats: UsageStats;
  clock: ManualClock;
  me(key: string): Promise<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

async function serve(store: Store, meter: Meter, stats: UsageStats, clock: ManualClock, env: Record<string, string>): Promise<Served> {
  const app = await buildApp({ config: loadConfig({ KEY_PREFIX, ...env }), store, meter, clock, stats, logger: false });
  await app.ready();
  return {
    store,
    app,
    meter,
    stats,
    clock,
    async me(key) {
      const res = await app.inject({ method: 'GET', url: `${V1}/me`, headers: { 'x-api-key': key } });
      return { status: res.statusCode, body: res.json() as unknown };
    },
    async close() {
      await app.close();
      await stats.close();
      await meter.close();
      await store.close();
    },
  };
}

interface Source extends Served {
  path: string;
  keys: Record<string, string>;
  accounts: Record<string, number>;
  /** The cookie value of alice's settings session. */
  session: string;
  handoverSecret: Uint8Array;
}

/**
 * An SQLite store with the fixture, and traffic on it through the real app: requests last month (archived
 * by the SQLite meter into quota_usage when its row took up this month) and seconds ago (still only in the
 * meter's own row), refusals for the owners' statistics, and key changes for the security log.
 */
async function sourceWithTraffic(name: string, now: number): Promise<Source> {
  const path = tmp.db(name);
  const store = openStore({ dialect: 'sqlite', path });
  await migrateToLatest(store);
  const d = new Date(now);
  const lastMonth = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 15, 12);
  const clock = new ManualClock(lastMonth);
  const loaded = await loadDataset(store, fixture(), { keyPrefix: KEY_PREFIX, now: lastMonth });
  const keys = { ...loaded.keys };
  const served = await serve(store, new SqliteMeter(store.sqlite!), new DatabaseUsageStats(store), clock, { DATABASE_URL: path });
  const get = (url: string, key: string) => served.app.inject({ method: 'GET', url: `${V1}${url}`, headers: { 'x-api-key': key } });
  for (let i = 0; i < 3; i++) assert.equal((await get('/catalogue', keys.alice!)).statusCode, 200);

  clock.set(now - 5000);
  for (let i = 0; i < 5; i++) assert.equal((await get(`/catalogue/${i + 1}`, keys.alice!)).statusCode, i === 4 ? 404 : 200);
  for (let i = 0; i < 2; i++) assert.equal((await get('/prices/1', keys['alice-second']!)).statusCode, 200);
  for (let i = 0; i < 4; i++) assert.equal((await get('/collection', keys.bob!)).statusCode, 200);
  assert.equal((await get('/catalogue', keys['alice-noscope']!)).statusCode, 403);
  assert.equal((await get('/catalogue', keys['alice-revoked']!)).statusCode, 401);

  // Key changes: a created key revoked, and bob's key rolled with the old one working a day longer.
  const made = await createKey(store, { accountId: loaded.accounts.bob!, name: 'short-lived', scopes: [...SCOPES], expiresAt: null, now: now - 4000, keyPrefix: KEY_PREFIX, actor: OPERATOR });
  await revokeKey(store, { keyId: made.id, now: now - 3000, keyPrefix: KEY_PREFIX, actor: OPERATOR });
  keys['bob-made-revoked'] = made.key;
  const bobKeyId = (await store.db.selectFrom('api_keys').select('id').where('account_id', '=', loaded.accounts.bob!).where('name', '=', 'all scopes').executeTakeFirstOrThrow()).id;
  const rolled = await rollKey(store, { keyId: bobKeyId, stopOld: '24h', now: now - 2000, keyPrefix: KEY_PREFIX, actor: OPERATOR });
  keys['bob-rolled'] = rolled.created.key;
  assert.equal((await get('/catalogue', keys['bob-rolled'])).statusCode, 200);

  // The settings screen's state: a signed-in owner, an expiry reminder hidden, and the generated sign-in secret.
  const { token: session } = await startSession(store, loaded.accounts.alice!, now - 1000, '203.0.113.9');
  const expiring = await store.db.selectFrom('api_keys').select('id').where('account_id', '=', loaded.accounts.alice!).where('name', '=', 'expires later').executeTakeFirstOrThrow();
  await hideExpiryReminder(store, { accountId: loaded.accounts.alice!, keyId: expiring.id, now: now - 1000 });
  const secret = await handoverSecret(store, { settingsHandoverSecret: null }, now - 1000);

  clock.set(now);
  await served.stats.flush();
  return { ...served, path, keys, accounts: loaded.accounts, session, handoverSecret: secret };
}

/** The copied store served, metering in PostgreSQL or in Redis under `prefix`. */
async function servedTarget(url: string, clock: ManualClock, prefix: string | null): Promise<Served> {
  const store = openStore({ dialect: 'postgres', url });
  if (prefix === null) return serve(store, new PostgresMeter(store), new DatabaseUsageStats(store), clock, { DATABASE_URL: url });
  const meter = new RedisMeter(TEST_REDIS_URL, { prefix });
  const stats = new RedisUsageStats(TEST_REDIS_URL, { prefix });
  await meter.ready();
  await stats.ready();
  return serve(store, meter, stats, clock, { DATABASE_URL: url, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix });
}

/** The key ids of the source, by account. */
async function keyIds(store: Store): Promise<Array<{ id: number; account_id: number }>> {
  return store.db.selectFrom('api_keys').select(['id', 'account_id']).orderBy('id').execute();
}

/** What a server of each store tells about every account and key: usage, day counts, last uses, burst, statistics. */
async function meterView(s: Served, now: number, lastMonth: string) {
  const view: Record<string, unknown> = {};
  for (const { id, account_id } of await keyIds(s.store)) {
    view[`account ${account_id} month`] = await s.meter.used(account_id, periodOf(now));
    view[`account ${account_id} last month`] = await s.meter.used(account_id, lastMonth);
    view[`account ${account_id} burst`] = await s.meter.burstUsed(account_id, now);
    view[`key ${id} days`] = await s.meter.keyUsage(account_id, id, '2000-01-01', dayOf(now));
    view[`key ${id} last used`] = (await s.meter.lastUsed(account_id, [id])).get(id) ?? null;
    view[`key ${id} outcomes`] = await s.stats.keyOutcomes(account_id, id, dayOf(now - 40 * 86_400_000), dayOf(now));
    view[`key ${id} rejections`] = await s.stats.recentRejections(account_id, id);
    view[`key ${id} stats last use`] = (await s.stats.lastUse(account_id, [id])).get(id) ?? null;
    // The database's day is its row plus its hours kept; Redis's day holds its hours (copy-store adds them).
    view[`key ${id} usage today and this hour`] = await s.stats.usageBuckets(account_id, [id], [dayOf(now), hourOf(now)]);
  }
  const keys = await keyIds(s.store);
  for (const accountId of new Set(keys.map((k) => k.account_id))) {
    const ids = keys.filter((k) => k.account_id === accountId).map((k) => k.id);
    view[`account ${accountId} usage today`] = await s.stats.accountDays(accountId, ids, [], [dayOf(now)]);
  }
  return view;
}

const ROW_TABLES = Object.entries(TABLE_RULES).flatMap(([t, r]) => (r.kind === 'rows' || r.kind === 'single-row' ? [t] : []));

for (const metering of ['postgres', 'redis'] as const) {
  describe(`copy-store of an SQLite store with traffic, served from PostgreSQL with the meter in ${metering}`, () => {
    const now = Date.now();
    const lastMonth = periodOf(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth() - 1, 15));
    let source: Source;
    let target: Served;
    let report: CopyReport;
    let sourceHash: string;
    let beforeView: Record<string, unknown>;
    let beforeMe: Record<string, { status: number; body: unknown }>;
    let afterView: Record<string, unknown>;
    const rows: Record<string, { source: string[]; target: string[] }> = {};
    const prefix = metering === 'redis' ? redisPrefix() : null;

    before(async () => {
      source = await sourceWithTraffic(`traffic-${metering}`, now);
      closeAfter(source);
      beforeMe = {};
      for (const [ref, key] of Object.entries(source.keys)) beforeMe[ref] = await source.me(key);
      await source.stats.flush();
      beforeView = await meterView(source, now, lastMonth);
      sourceHash = sha256(source.path);
      const url = await freshTarget();
      report = await copyStore({ from: source.path, to: url, redis: prefix === null ? null : { target: TEST_REDIS_URL, prefix }, now });
      target = closeAfter(await servedTarget(url, new ManualClock(now), prefix));
      // Read before any request reaches the target (each adds to its burst window and statistics).
      afterView = await meterView(target, now, lastMonth);
      for (const table of [...ROW_TABLES, 'api_keys']) {
        const leaveOut = table === 'api_keys' ? ['last_used_at'] : [];
        rows[table] = { source: await rowsOf(source.store.db, table, leaveOut), target: await rowsOf(target.store.db, table, leaveOut) };
      }
    });

    it('reports the rows of every table it copied, and what it left out and why', () => {
      assert.equal(report.tables.accounts, 4);
      assert.equal(report.tables.api_keys, fixture().keys!.length + 2);
      assert.equal(report.tables.catalogue_items, fixture().catalogue!.length);
      assert.ok(report.tables.security_events! >= 2, 'the revoke and the roll');
      assert.deepEqual(Object.keys(report.skipped).sort(), ['catalogue_fts', 'kysely_migration', 'kysely_migration_lock']);
      assert.ok(report.meter.monthCounts >= 2, "alice's and bob's month, held only in the SQLite meter's rows");
      assert.ok(report.meter.burstTimes > 0);
      if (metering === 'redis') assert.ok(report.redis !== null && report.redis.monthCounts >= 2 && report.redis.statsKeys > 0);
      else assert.equal(report.redis, null);
    });

    it('every key answers /me as on the source, with the same secret: same scopes and usage; revoked, expired and lapsed stay so', async () => {
      for (const [ref, key] of Object.entries(source.keys)) {
        const after = await target.me(key);
        assert.deepEqual(after, beforeMe[ref], `key ${ref}`);
      }
      assert.equal(beforeMe.alice!.status, 200);
      assert.ok((beforeMe.alice!.body as { usage: { used: number } }).usage.used >= 4);
      assert.equal(beforeMe['alice-revoked']!.status, 401);
      assert.equal(beforeMe['alice-expired']!.status, 401);
      assert.equal(beforeMe['bob-made-revoked']!.status, 401);
      assert.equal(beforeMe.carol!.status, 403);
      assert.equal(beforeMe['alice-noscope']!.status, 200);
      assert.deepEqual((beforeMe['alice-noscope']!.body as { scopes: string[] }).scopes, []);
      // bob's rolled key still works until its stop time, beside its replacement.
      assert.equal(beforeMe.bob!.status, 200);
      assert.equal(beforeMe['bob-rolled']!.status, 200);
    });

    it("the month's and the day's counts copied into Redis expire as the meter's own do", { skip: metering !== 'redis' }, async () => {
      const counts = (await redisKeys(prefix ?? '')).filter((k) => /:(quota|keyday):/.test(k));
      assert.ok(counts.length >= 2, counts.join(', '));
      const redis = new Redis(TEST_REDIS_URL);
      try {
        for (const key of counts) assert.ok((await redis.ttl(key)) > 0, `${key} has an expiry`);
      } finally {
        redis.disconnect();
      }
    });

    it("usage, day counts, last uses, burst windows and the owners' statistics are the source's", async () => {
      assert.deepEqual(afterView, beforeView);
    });

    it('every table copied row for row (catalogue, prices, accounts, keys, security log, sessions, ...)', async () => {
      // api_keys' last_used_at aside: the SQLite meter keeps the latest in its own row (compared through the meters).
      for (const [table, { source: from, target: to }] of Object.entries(rows)) assert.deepEqual(to, from, table);
      assert.ok(rows.security_events!.source.length >= 2 && rows.catalogue_items!.source.length > 0);
      assert.equal(rows.expiry_reminder_dismissals!.source.length, 1);
      assert.equal(sha256(source.path), sourceHash, 'the source file is unchanged');
    });

    it("owners stay signed in to the settings screen, and sign-in links made with the store's secret still work", async () => {
      assert.equal((await loadSession(target.store, source.session, now))?.accountId, source.accounts.alice);
      assert.deepEqual(await handoverSecret(target.store, { settingsHandoverSecret: null }, now), source.handoverSecret);
    });

    it('catalogue and prices answer the same, ETag included (the data version came along)', async () => {
      for (const url of ['/catalogue?limit=100', '/prices/1', '/catalogue?search=zelda', '/collection']) {
        const [a, b] = await Promise.all(
          [source, target].map((s) => s.app.inject({ method: 'GET', url: `${V1}${url}`, headers: { 'x-api-key': source.keys.alice! } })),
        );
        assert.equal(b!.statusCode, a!.statusCode, url);
        assert.equal(b!.body, a!.body, url);
        assert.equal(b!.headers.etag, a!.headers.etag, url);
      }
    });

    it('the target counts on from there, and makes new ids past the copied ones', async () => {
      const before = ((await target.me(source.keys.alice!)).body as { usage: { used: number } }).usage.used;
      const res = await target.app.inject({ method: 'GET', url: `${V1}/catalogue/1`, headers: { 'x-api-key': source.keys['alice-second']! } });
      assert.equal(res.statusCode, 200);
      assert.equal(((await target.me(source.keys.alice!)).body as { usage: { used: number } }).usage.used, before + 1);
      const maxId = Math.max(...(await keyIds(target.store)).map((k) => k.id));
      const made = await createKey(target.store, { accountId: source.accounts.alice!, name: 'after the move', scopes: ['catalogue:read'], expiresAt: null, now, keyPrefix: KEY_PREFIX, actor: OPERATOR });
      assert.equal(made.id, maxId + 1);
      assert.equal((await target.me(made.key)).status, 200);
    });
  });
}

describe('copy-store knows every table', () => {
  it('every table of a migrated PostgreSQL and SQLite store has a copy rule, and every rule a table', async () => {
    const url = await freshTarget();
    // Closed after the file even if a step fails: an open pool would keep the test process alive.
    const pgStore = closeAfter(openStore({ dialect: 'postgres', url }));
    await migrateToLatest(pgStore);
    const pgTables = (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(pgStore.db)).rows.map((r) => r.name);
    const sqliteStore = openStore({ dialect: 'sqlite', path: tmp.db('rules') });
    await migrateToLatest(sqliteStore);
    const sqliteTables = sqliteStore.sqlite!.prepare("select name from sqlite_master where type = 'table'").pluck().all() as string[];
    await sqliteStore.close();
    assert.deepEqual(tablesWithoutRule(pgTables), [], 'a table of the PostgreSQL schema without a rule in src/copy-store/table-rules.ts');
    assert.deepEqual(tablesWithoutRule(sqliteTables), [], 'a table of the SQLite schema without a rule in src/copy-store/table-rules.ts');
    const stale = Object.keys(TABLE_RULES).filter((t) => !pgTables.includes(t) && !sqliteTables.includes(t));
    assert.deepEqual(stale, [], 'rules for tables no store has');
  });
});
