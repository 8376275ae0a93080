/**
 * The settings pages with a full account (issue 19: "pages with 20 keys, 90 days of statistics and a full
 * request log answer in under 30 ms at p95"): per store, seeds one account with 20 keys, 90 days of
 * statistics per key (written through the statistics' own record and flush, as a serving process writes
 * them: day outcomes, hour and day usage buckets, rejections, and a full request log of 100 lines per key;
 * in the database the purge of hours past 2 days then finished, as a serving process keeps it)
 * and the meter's counted requests per key and day (the rows or Redis keys the meter's admission writes),
 * starts `shelfapi serve` on it, signs in with a handover link, and requests each page N times in turn after
 * a warm-up, one request at a time. Prints p50 / p95 / max per page and store (client-side, to the last byte
 * of the body) and the machine's load average.
 *
 *   node --import tsx bench/settings-pages.ts        (BENCH_STORES=sqlite,postgres; PAGES_N=100; PAGES_WARMUP=20;
 *                                                     BENCH_PORT=8800, 4 ports from there)
 *
 * PAGES_ONLY=overview: only the pages whose name holds that text. PAGES_CPU_PROF=DIR: the server runs under
 * `node --cpu-prof`, its profile written to DIR when it stops.
 *
 * PostgreSQL + Redis: a private database shelfapi_pagebench_<pid> on BENCH_POSTGRES_URL's server and the key
 * prefix shelfapi_pagebench:<pid>: on BENCH_REDIS_URL, both removed at the end. The server runs from the
 * sources (`node --import tsx src/cli/bin.ts serve`): no build needed, and the same code once loaded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { accountKey } from '../src/metering/redis-meter.js';
import { createUsageStats } from '../src/usage-stats/create-usage-stats.js';
import { DatabaseUsageStats } from '../src/usage-stats/database-usage-stats.js';
import { dayOf } from '../src/metering/periods.js';
import type { Outcome, RequestRecord } from '../src/usage-stats/usage-stats.js';
import { createKey } from '../src/services/keys.service.js';
import { OPERATOR } from '../src/services/actor.js';
import { seedDemo } from '../src/services/demo-seed.service.js';
import { handoverSecret, mintHandoverToken } from '../src/services/settings-auth/handover-token.js';
import { migrateToLatest, openStore } from '../src/store/database.js';
import { API_ENDPOINTS } from '../src/http/settings/usage-depth-data.js';
import { deleteRedisKeys, log, ROOT, waitUntilUp } from './bench-support.js';

const KEYS = 20;
const N = Number(process.env.PAGES_N ?? 100);
const WARMUP = Number(process.env.PAGES_WARMUP ?? 20);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const PG_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const BASE_PORT = Number(process.env.BENCH_PORT ?? 8800);
/** Only the pages whose name holds this text (`overview`, `csv`, ...). */
const ONLY = process.env.PAGES_ONLY ?? '';
const HOUR = 3_600_000;
const DAY = 86_400_000;

interface StoreSetup {
  name: string;
  env: Record<string, string>;
  cleanup(): Promise<void>;
}

/** Outcomes as a busy key's days have them: mostly counted, some of each refusal. */
const OUTCOME_CYCLE: Outcome[] = ['counted', 'counted', 'counted', 'counted', 'not_modified', 'counted', 'rate_limited', 'counted', 'bad_request', 'counted', 'insufficient_scope', 'counted'];
const STATUS: Record<Outcome, number> = {
  counted: 200,
  not_modified: 304,
  bad_request: 400,
  insufficient_scope: 403,
  rate_limited: 429,
  quota_exceeded: 429,
  server_error: 500,
  revoked_or_expired: 401,
  refused_address: 401,
};

/** One key's requests: 8 a day for 89 days, then 5 an hour for the last 24 hours (the newest 100 are its request log). */
function recordsOf(accountId: number, keyId: number, now: number): RequestRecord[] {
  const times: number[] = [];
  for (let d = 89; d >= 1; d--) for (let i = 0; i < 8; i++) times.push(now - d * DAY - 24 * HOUR + i * 3 * HOUR + keyId * 1000);
  for (let h = 23; h >= 0; h--) for (let i = 0; i < 5; i++) times.push(now - h * HOUR - (5 - i) * 60_000 - keyId * 10);
  return times.map((at, n) => {
    const outcome = OUTCOME_CYCLE[n % OUTCOME_CYCLE.length]!;
    const endpoint = API_ENDPOINTS[n % API_ENDPOINTS.length]!;
    const status = STATUS[outcome];
    const error = status >= 400 ? outcome : null;
    const requestId = `00000000-0000-4000-8000-${String(keyId * 1_000_000 + n).padStart(12, '0')}`;
    const url = `/developer/v1${endpoint.replace(':id', String(n)).replace(':masterItemId', String(n))}?limit=20`;
    return {
      accountId,
      keyId,
      at,
      outcome,
      address: '203.0.113.7',
      used: true,
      rejection: error === null ? null : { at: new Date(at).toISOString(), method: 'GET', path: url.split('?')[0]!, status, error, message: `refused: ${error}`, requestId },
      call: { method: 'GET', url, status, error, durationMs: 0.4 + ((n * 37) % 200) / 10, address: '203.0.113.7', requestId, endpoint },
    };
  });
}

/** Seeds the store of `env`: the demo account (id 1) with keys up to 20, its statistics and the meter's day counts. */
export async function seed(env: Record<string, string>, now: number): Promise<{ accountId: number; keyIds: number[] }> {
  const config = loadConfig({ ...process.env, ...env, LOG_LEVEL: 'warn' } as Record<string, string>);
  const store = openStore(config.database);
  try {
    await migrateToLatest(store);
    await seedDemo(store, { items: 50, keyPrefix: config.keyPrefix, now });
    const accountId = 1;
    const existing = await store.db.selectFrom('api_keys').select('id').where('account_id', '=', accountId).execute();
    for (let i = existing.length; i < KEYS; i++) {
      await createKey(store, { accountId, name: `bench ${i + 1}`, scopes: ['catalogue:read', 'prices:read'], expiresAt: null, now, keyPrefix: config.keyPrefix, actor: OPERATOR });
    }
    const keyIds = (await store.db.selectFrom('api_keys').select('id').where('account_id', '=', accountId).orderBy('id').execute()).map((r) => r.id);
    const stats = await createUsageStats(config, store);
    const counted = new Map<string, number>();
    for (const keyId of keyIds) {
      for (const record of recordsOf(accountId, keyId, now)) {
        stats.record(record);
        if (record.outcome === 'counted') {
          const id = `${keyId}|${dayOf(record.at)}`;
          counted.set(id, (counted.get(id) ?? 0) + 1);
        }
      }
      // A key's 90 days a flush: all 20 keys' in one (16,640 records of one account) is one Redis script
      // call whose arguments, spread into the call, overflow the stack (a flush fails there, and close()
      // drops its records), and no server writes so much at once. A failed flush fails the seed.
      await stats.flush();
    }
    await stats.close();
    if (config.redisUrl === null) {
      // A serving process purges as it goes (hours past 2 days added to their days); the seed's 90 days came
      // in one go, so its purge, 2,000 rows a write, was left part done. Finished as a new process's first
      // write does it (every key, in one slice), with one request more of the first key.
      const purging = new DatabaseUsageStats(store, { purgeRowsPerWrite: Number.MAX_SAFE_INTEGER });
      purging.record(recordsOf(accountId, keyIds[0]!, now).at(-1)!);
      await purging.close();
    }
    // The meter's counted requests per key and day, where its admission keeps them.
    const rows = [...counted].map(([id, requests]) => {
      const [keyId, day] = id.split('|');
      return { key_id: Number(keyId), day: day!, requests };
    });
    if (config.redisUrl !== null) {
      const redis = new Redis(config.redisUrl);
      const pipeline = redis.pipeline();
      for (const r of rows) pipeline.set(accountKey(config.redisKeyPrefix, accountId, 'keyday', r.key_id, r.day), r.requests, 'EX', 100 * 86_400);
      await pipeline.exec();
      redis.disconnect();
    } else {
      for (let i = 0; i < rows.length; i += 500) await store.db.insertInto('key_usage_daily').values(rows.slice(i, i + 500)).execute();
    }
    return { accountId, keyIds };
  } finally {
    await store.close();
  }
}

async function sqliteSetup(): Promise<StoreSetup> {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-pagebench-'));
  return {
    name: 'sqlite',
    env: { DATABASE_URL: join(dir, 'pages.sqlite') },
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function postgresSetup(): Promise<StoreSetup> {
  const database = `shelfapi_pagebench_${process.pid}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${database}`;
  const prefix = `shelfapi_pagebench:${process.pid}:`;
  return {
    name: 'postgres+redis',
    env: { DATABASE_URL: url.toString(), REDIS_URL, REDIS_KEY_PREFIX: prefix },
    cleanup: async () => {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await client.end();
      await deleteRedisKeys(REDIS_URL, prefix);
    },
  };
}

function startServer(env: Record<string, string>, port: number): ChildProcess {
  const profile = process.env.PAGES_CPU_PROF === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', process.env.PAGES_CPU_PROF];
  return spawn(process.execPath, [...profile, '--import', 'tsx', join(ROOT, 'src', 'cli', 'bin.ts'), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), OPS_PORT: String(port + 1), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** A session cookie for the account, from a handover link as the platform mints it. */
async function signIn(env: Record<string, string>, base: string, accountId: number): Promise<string> {
  const config = loadConfig({ ...process.env, ...env } as Record<string, string>);
  const store = openStore(config.database);
  try {
    const now = Date.now();
    const { token } = await mintHandoverToken({ secret: await handoverSecret(store, config, now), accountId, now });
    const res = await fetch(`${base}/settings/sign-in?token=${token}`, { redirect: 'manual' });
    if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
    return res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .join('; ');
  } finally {
    await store.close();
  }
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
const ms = (x: number) => Math.round(x * 10) / 10;

async function timePage(url: string, cookie: string): Promise<{ p50: number; p95: number; max: number; bytes: number }> {
  let bytes = 0;
  const once = async () => {
    const start = performance.now();
    const res = await fetch(url, { headers: { cookie } });
    const body = await res.arrayBuffer();
    const took = performance.now() - start;
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${Buffer.from(body).toString('utf8').slice(0, 500)}`);
    bytes = body.byteLength;
    return took;
  };
  for (let i = 0; i < WARMUP; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < N; i++) times.push(await once());
  times.sort((a, b) => a - b);
  return { p50: ms(quantile(times, 0.5)), p95: ms(quantile(times, 0.95)), max: ms(times[times.length - 1]!), bytes };
}

async function benchStore(setup: StoreSetup, port: number): Promise<Array<Record<string, string | number>>> {
  const now = Date.now();
  const seedStart = performance.now();
  const { accountId, keyIds } = await seed(setup.env, now);
  log(`${setup.name}: seeded ${keyIds.length} keys in ${Math.round(performance.now() - seedStart)} ms`);
  const child = startServer(setup.env, port);
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitUntilUp(`${base}/developer/v1/me`, child);
    const cookie = await signIn(setup.env, base, accountId);
    const key = keyIds[keyIds.length - 1]!;
    const pages: Array<[string, string]> = [
      ['overview ?range=90d', '/settings/developer-api?range=90d'],
      ['key details ?range=90d', `/settings/developer-api/keys/${key}?range=90d`],
      ['key details ?range=24h', `/settings/developer-api/keys/${key}?range=24h`],
      ['usage.csv ?range=90d (20 keys)', '/settings/developer-api/usage.csv?range=90d'],
      ['key usage.csv ?range=90d', `/settings/developer-api/keys/${key}/usage.csv?range=90d`],
    ];
    const rows: Array<Record<string, string | number>> = [];
    for (const [name, path] of pages.filter(([page]) => page.includes(ONLY))) {
      const t = await timePage(`${base}${path}`, cookie);
      log(`${setup.name}  ${name}: p50 ${t.p50} ms, p95 ${t.p95} ms, max ${t.max} ms (${t.bytes} bytes)`);
      rows.push({ store: setup.name, page: name, ...t });
    }
    return rows;
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();

async function main(): Promise<void> {
  const load = loadavg().map((x) => x.toFixed(2)).join(' ');
  log(`load average before: ${load}; ${N} requests per page after ${WARMUP} warm-up`);
  const results: Array<Record<string, string | number>> = [];
  let port = BASE_PORT;
  for (const name of STORES) {
    const setup = name === 'sqlite' ? await sqliteSetup() : await postgresSetup();
    try {
      results.push(...(await benchStore(setup, port)));
    } finally {
      await setup.cleanup();
    }
    port += 2;
  }
  const after = loadavg().map((x) => x.toFixed(2)).join(' ');
  process.stdout.write(`${JSON.stringify({ loadBefore: load, loadAfter: after, n: N, warmup: WARMUP, results })}\n`);
}
