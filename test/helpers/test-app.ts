/**
 * Builds the real app (the same buildApp as production) over a fresh store, with a clock the test sets.
 * TEST_STORE picks the store the whole suite runs against: `sqlite` (default: a temporary file, metering
 * in the database) or `postgres` (a fresh schema in a database of the test file's own on the machine's
 * PostgreSQL, metering in its Redis under a key prefix of the file's own; both are dropped when the file's
 * tests end, see testDatabaseUrl and testRedisPrefix).
 * `npm test` runs the suite once for each. With TEST_STORE=postgres and TEST_REDIS_CLUSTER_URLS (seed nodes
 * of a Redis Cluster, as test/cluster/redis-cluster.test.ts sets it), the meter and the statistics run on
 * that cluster instead.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { ManualClock } from '../../src/clock.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { Dataset } from '../../src/domain/dataset.js';
import { buildApp, type App } from '../../src/http/app.js';
import { SqliteMeter } from '../../src/metering/sqlite-meter.js';
import { PostgresMeter } from '../../src/metering/postgres-meter.js';
import type { Meter } from '../../src/metering/meter.js';
import { redisTargetOf } from '../../src/metering/redis-client.js';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { DatabaseUsageStats } from '../../src/usage-stats/database-usage-stats.js';
import { ThreadedUsageStats } from '../../src/usage-stats/usage-stats-thread.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import type { UsageStats } from '../../src/usage-stats/usage-stats.js';
import pg from 'pg';
import { Cluster, Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { migrateTo, migrateToLatest, openStore, type Store } from '../../src/store/database.js';
import { loadDataset, type LoadResult } from '../../src/load/load-dataset.js';
import { FIXTURE_NOW, fixture } from './fixture.js';
import { assertNoKeysLogged, assertNoServerErrors, LogCapture } from './log-capture.js';
import { KEY_PATTERN } from '../../src/keys/api-key.js';

export type StoreKind = 'sqlite' | 'postgres';
export const TEST_STORE: StoreKind = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';
/**
 * A PostgreSQL connection allowed to create databases: each test file makes its own database through it
 * (testDatabaseUrl) and drops it at the end, so no database needs to exist beforehand but this one.
 */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** The Redis of TEST_STORE=postgres runs; each test file keeps its keys under a prefix of its own (testRedisPrefix). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const TEST_REDIS_CLUSTER_URLS = process.env.TEST_REDIS_CLUSTER_URLS === undefined || process.env.TEST_REDIS_CLUSTER_URLS === '' ? null : process.env.TEST_REDIS_CLUSTER_URLS;

/** This test file's run: names its database and its Redis keys (node's test runner runs each file as a process). */
const RUN = `${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 8)}`;
const TEST_DATABASE = `shelfapi_test_${RUN}`;
let testDatabase: Promise<string> | null = null;
let redisUsed = false;

/**
 * The URL of this test file's own database, created from TEST_POSTGRES_URL at first use (template0: no
 * other session can be using it, and it holds nothing of the server's), and dropped when the file ends.
 */
export function testDatabaseUrl(): Promise<string> {
  testDatabase ??= (async () => {
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    try {
      await admin.query(`create database ${TEST_DATABASE} template template0 encoding 'UTF8'`);
    } finally {
      await admin.end();
    }
    const url = new URL(TEST_POSTGRES_URL);
    url.pathname = `/${TEST_DATABASE}`;
    return url.toString();
  })();
  return testDatabase;
}

/** A Redis key prefix of this test file's own, under which its keys are deleted when the file ends. */
export function testRedisPrefix(label: string): string {
  redisUsed = true;
  return `shelfapi_test:${RUN}:${label}:${randomUUID()}:`;
}

/**
 * Drops this file's database and deletes its Redis keys once everything else in the process is done:
 * every test, and every `after` hook of the file, which may still close stores and servers using them
 * (node:test runs the file's top-level hooks in the order they were registered, the helper's first).
 * A failure to clean up fails the file.
 */
async function cleanUpRun(): Promise<void> {
  try {
    if (testDatabase !== null && (await testDatabase.then(() => true, () => false))) {
      const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await admin.connect();
      // FORCE: a server a failed test left running must not keep the database alive.
      await admin.query(`drop database if exists ${TEST_DATABASE} with (force)`);
      await admin.end();
    }
    // Only where Redis was used: the SQLite pass needs no Redis.
    if (TEST_STORE === 'postgres' || redisUsed) await deleteRedisKeys({ url: TEST_REDIS_URL }, `shelfapi_test:${RUN}:`);
  } catch (error) {
    process.stderr.write(`test-app: could not drop ${TEST_DATABASE} or its Redis keys: ${String(error)}\n`);
    process.exitCode = 1;
  }
}
process.once('beforeExit', () => void cleanUpRun());

/** A schema of its own in this test file's database: the URL reaching it, and a function dropping it. */
export async function freshPostgresSchema(): Promise<{ url: string; drop: () => Promise<void> }> {
  const database = await testDatabaseUrl();
  const schema = `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: database });
  await admin.connect();
  // The extension is database-wide: kept in public so that no test schema takes it along when dropped.
  await admin.query('create extension if not exists pg_trgm with schema public');
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const url = new URL(database);
  url.searchParams.set('options', `-c search_path=${schema},public`);
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: database });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    },
  };
}

async function deleteRedisKeys(target: { url: string } | { cluster: readonly string[] }, prefix: string): Promise<void> {
  const client = 'url' in target ? new Redis(target.url) : new Cluster(target.cluster.map((url) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) })));
  try {
    if (client instanceof Cluster) await new Promise((resolve) => client.once('ready', resolve));
    // Each master holds its own keys; one DEL per key, as keys of a cluster may lie in different slots.
    for (const node of client instanceof Cluster ? client.nodes('master') : [client]) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        for (const key of keys) await node.del(key);
        cursor = next;
      } while (cursor !== '0');
    }
  } finally {
    client.disconnect();
  }
}

/** A fresh, migrated store of the kind TEST_STORE names, and the DATABASE_URL that reaches it (for CLI runs). */
export async function openTestStore(
  options: { upTo?: string } = {},
): Promise<{ store: Store; databaseUrl: string; close(): Promise<void> }> {
  const migrate = (store: Store) => (options.upTo === undefined ? migrateToLatest(store) : migrateTo(store, options.upTo));
  if (TEST_STORE === 'postgres') {
    const pg = await freshPostgresSchema();
    const store = openStore({ dialect: 'postgres', url: pg.url });
    await migrate(store);
    return { store, databaseUrl: pg.url, close: async () => { await store.close(); await pg.drop(); } };
  }
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-store-'));
  const path = join(dir, 'store.sqlite');
  const store = openStore({ dialect: 'sqlite', path });
  await migrate(store);
  return { store, databaseUrl: path, close: async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); } };
}

export interface TestContext {
  kind: StoreKind;
  /** The DATABASE_URL of this context's store, for command-line runs against it. */
  databaseUrl: string;
  app: App;
  store: Store;
  meter: Meter;
  /** The owners' per-key statistics the app records into (database, or Redis with the Redis meter). */
  stats: UsageStats;
  clock: ManualClock;
  config: Readonly<Config>;
  loaded: LoadResult;
  /** The app's log (the production logger, at debug level); checked for keys when the context closes. */
  logs: LogCapture;
  /** GET (or another method) with a key from the fixture by ref, or a raw header set. */
  get(url: string, key?: string | null, options?: { method?: string; headers?: Record<string, string> }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface ContextOptions {
  env?: Record<string, string>;
  dataset?: Dataset;
  now?: string;
  /**
   * The test makes the app fail on purpose (500 server_error). Otherwise closing the context fails when its
   * log holds an 'unexpected error' line: a run of the suite shows no 500 that nobody meant.
   */
  expectServerErrors?: boolean;
}

/** The Redis of a TEST_STORE=postgres run, unless the test brings its own (REDIS_URL or REDIS_CLUSTER_URLS). */
function suiteRedis(env: Record<string, string>): Record<string, string> {
  if (env.REDIS_URL !== undefined || env.REDIS_CLUSTER_URLS !== undefined) return {};
  return TEST_REDIS_CLUSTER_URLS === null ? { REDIS_URL: TEST_REDIS_URL } : { REDIS_CLUSTER_URLS: TEST_REDIS_CLUSTER_URLS };
}

export async function createTestContext(options: ContextOptions = {}): Promise<TestContext> {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-test-'));
  const postgres = TEST_STORE === 'postgres' ? await freshPostgresSchema() : null;
  const config = loadConfig({
    LOG_LEVEL: 'debug',
    DATABASE_URL: postgres ? postgres.url : join(dir, 'test.sqlite'),
    ...(postgres ? suiteRedis(options.env ?? {}) : {}),
    // The price guide file goes to this context's directory (removed at close), on PostgreSQL too.
    EXPORT_DIR: join(dir, 'price-guide'),
    ...options.env,
  });
  const store = openStore(config.database);
  await migrateToLatest(store);
  const clock = new ManualClock(Date.parse(options.now ?? FIXTURE_NOW));
  const loaded = await loadDataset(store, options.dataset ?? fixture(), { keyPrefix: config.keyPrefix, now: clock.now() });
  const redisPrefix = testRedisPrefix('app');
  let meter: Meter;
  const redisTarget = redisTargetOf(config);
  if (redisTarget !== null) {
    const redisMeter = new RedisMeter(redisTarget, { prefix: redisPrefix });
    await redisMeter.ready();
    meter = redisMeter;
  } else {
    meter = store.sqlite ? new SqliteMeter(store.sqlite) : new PostgresMeter(store);
  }
  let stats: UsageStats;
  // As `serve` does: statistics in Redis are written from a thread of their own (usage-stats-thread.ts).
  const threadErrors: Error[] = [];
  if (redisTarget !== null) {
    const redisStats = new RedisUsageStats(redisTarget, { prefix: redisPrefix });
    await redisStats.ready();
    stats = await ThreadedUsageStats.start({ redis: redisTarget, redisKeyPrefix: redisPrefix, database: config.database, keyPrefix: config.keyPrefix }, redisStats, (error) =>
      threadErrors.push(error),
    );
  } else {
    stats = new DatabaseUsageStats(store);
  }
  const logs = new LogCapture();
  const app = await buildApp({ config, store, meter, clock, logStream: logs, stats });
  await app.ready();
  // Every key a test can present: the fixture's, and any a test creates later and sends through `get`.
  const presented = new Set<string>(Object.values(loaded.keys));
  return {
    kind: TEST_STORE,
    databaseUrl: postgres ? postgres.url : join(dir, 'test.sqlite'),
    app,
    store,
    meter,
    stats,
    clock,
    config,
    loaded,
    logs,
    get(url, key = 'alice', opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      for (const text of [url, ...Object.values(headers)]) for (const found of text.match(KEY_PATTERN) ?? []) presented.add(found);
      if (key !== null) {
        const full = loaded.keys[key];
        if (full === undefined) throw new Error(`no fixture key ${key}`);
        headers['x-api-key'] = full;
      }
      return app.inject({ method: (opts.method ?? 'GET') as 'GET', url, headers });
    },
    async close() {
      await app.close();
      await stats.close();
      assert.deepEqual(threadErrors, [], 'the statistics thread failed');
      await meter.close();
      await store.close();
      await postgres?.drop();
      if (redisTarget !== null) {
        await deleteRedisKeys(config.redisClusterUrls === null ? { url: config.redisUrl ?? TEST_REDIS_URL } : { cluster: config.redisClusterUrls }, redisPrefix);
      }
      rmSync(dir, { recursive: true, force: true });
      assertNoKeysLogged(logs.text(), presented, 'app log');
      if (options.expectServerErrors !== true) assertNoServerErrors(logs);
    },
  };
}

export const V1 = '/developer/v1';
