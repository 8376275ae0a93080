/**
 * Where the settings pages' time goes (docs/performance.md): seeds a store as
 * bench/settings-pages.ts does (20 keys, 90 days) and times each read the overview and the account-wide
 * usage.csv make, in process, one after another (N=50 each after 10 of warm-up; p50 / p95 in ms).
 *
 *   node --import tsx bench/settings-pages-parts.ts       (BENCH_STORES=sqlite,postgres)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { deleteRedisKeys } from './bench-support.js';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { createMeter } from '../src/metering/create-meter.js';
import { createUsageStats } from '../src/usage-stats/create-usage-stats.js';
import { dayOf } from '../src/metering/periods.js';
import { accountKeys } from '../src/services/key-lookup.js';
import type { AppDeps } from '../src/http/app-types.js';
import { accountAndKeys, accountKeyIds, lastDays, overviewData } from '../src/http/settings/overview-data.js';
import { usageDepth } from '../src/http/settings/usage-depth-data.js';
import { openStore } from '../src/store/database.js';
import { seed } from './settings-pages.js';

const N = 50;
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const PG_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function time(name: string, fn: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 10; i++) await fn();
  const t: number[] = [];
  for (let i = 0; i < N; i++) {
    const s = performance.now();
    await fn();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  const q = (p: number) => Math.round(t[Math.min(t.length - 1, Math.ceil(p * t.length) - 1)]! * 10) / 10;
  console.log(`  ${name}: p50 ${q(0.5)} ms, p95 ${q(0.95)} ms`);
}

async function run(name: string, env: Record<string, string>): Promise<void> {
  const now = Date.now();
  const { accountId, keyIds } = await seed(env, now);
  const config = loadConfig({ ...process.env, ...env, LOG_LEVEL: 'warn' } as Record<string, string>);
  const store = openStore(config.database);
  const meter = await createMeter(config, store);
  const stats = await createUsageStats(config, store);
  console.log(`${name} (load ${loadavg().map((x) => x.toFixed(2)).join(' ')})`);
  const days90 = lastDays(now, 90);
  const days30 = lastDays(now, 30);
  try {
    await time('accountKeys', () => accountKeys(store, meter, accountId, now));
    await time('stats.usageBuckets 20 keys x 90 days', () => stats.usageBuckets(accountId, keyIds, days90));
    await time('stats.keysOutcomes 20 keys x 90 days', () => stats.keysOutcomes(accountId, keyIds, days90[0]!, dayOf(now)));
    await time('meter.keyUsage x 20 keys, 90 days', () => Promise.all(keyIds.map((k) => meter.keyUsage(accountId, k, days90[0]!, dayOf(now)))));
    await time('meter.keyUsage x 20 keys, 30 days', () => Promise.all(keyIds.map((k) => meter.keyUsage(accountId, k, days30[0]!, dayOf(now)))));
    await time('stats.accountDays 90 days (the account totals)', () => stats.accountDays(accountId, keyIds, [], days90));
    const deps = { config, store, meter, stats, clock: { now: () => now } } as unknown as AppDeps;
    await time('accountAndKeys', () => accountAndKeys(deps, accountId, now));
    const read = await accountAndKeys(deps, accountId, now);
    await time('overviewData (the overview but usage in depth)', () => overviewData(deps, read, now));
    await time('accountKeyIds', () => accountKeyIds(deps, accountId, now));
    await time('usageDepth 90d, account totals', () => usageDepth(deps, accountId, keyIds, '90d', now, []));
    await time('usageDepth 90d, per key (as before)', () => usageDepth(deps, accountId, keyIds, '90d', now));
    await time('stats.usageBuckets 1 key x 90 days', () => stats.usageBuckets(accountId, [keyIds[0]!], days90));
  } finally {
    await stats.close();
    await meter.close?.();
    await store.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'shelfapi-parts-'));
try {
  if (STORES.includes('sqlite')) await run('sqlite', { DATABASE_URL: join(dir, 'p.sqlite') });
  if (STORES.includes('postgres')) {
    const database = `shelfapi_pageparts_${process.pid}`;
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    const url = new URL(PG_ADMIN_URL);
    url.pathname = `/${database}`;
    const prefix = `shelfapi_pageparts:${process.pid}:`;
    try {
      await run('postgres+redis', { DATABASE_URL: url.toString(), REDIS_URL, REDIS_KEY_PREFIX: prefix });
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
      await deleteRedisKeys(REDIS_URL, prefix);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
