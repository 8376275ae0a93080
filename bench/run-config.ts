/**
 * `npm run bench`'s settings, read once from the environment, and its scenarios: what bench/run.ts and its
 * parts (run-*.ts) measure and how long.
 */
import { join } from 'node:path';
import { ROOT } from './bench-support.js';
import { FLOOD_MODES, type FloodMode } from './flood.js';

export const DATA = join(ROOT, 'bench', '.data');
/**
 * `search`: only the data-drawn search and mixed scenarios (no baseline or exports); `flood`: only the flood
 * scenario; `workers`: only item GET with `serve --workers 1` and `--workers 2`, against the baseline;
 * `ratios`: only the baseline, its floors, and item GET and `/me` on each store; `quick`: the figures of
 * docs/performance.md's table in a few minutes (item GET, `/me`, list pages and the ten-term search on each
 * store, 20,000 items, 5 s each beside the baseline, then the flood); `ab`: the same server with each of the
 * settings of BENCH_AB in turns (runAb, bench/run-ab.ts); `tenants`: only the item GET over 10,000 accounts,
 * 2,000 accounts and one key on each store, beside the baseline; `pages`: only bench/settings-pages.ts (the
 * settings pages of an account with 20 keys, 90 days of statistics and a full request log).
 */
export const ONLY = process.env.BENCH_ONLY ?? '';
export const SHORT = ONLY === 'quick' || ONLY === 'ab' || ONLY === 'tenants';
export const ITEMS = Number(process.env.BENCH_ITEMS ?? (SHORT ? 20_000 : 1_000_000));
export const DURATION = process.env.BENCH_DURATION ?? (ONLY === 'quick' || ONLY === 'tenants' ? '5s' : ONLY === 'ab' ? '8s' : '10s');
/**
 * Long enough for a fresh server to have seen its keys: the item GET is the first scenario on each server,
 * and with 3 s it measured that server's first pass over 10,000 keys (a PostgreSQL read per principal, the
 * hour's new statistics hashes) where /me, after it, did not: PostgreSQL + Redis item GETs 2,135 a second
 * with 3 s, 2,921 with 10 s on one machine. 10 s at these rates touches ~92% of the keys.
 */
export const WARMUP = process.env.BENCH_WARMUP ?? (ONLY === 'quick' || ONLY === 'tenants' ? '5s' : ONLY === 'ab' ? '8s' : '10s');
export const FLOOD_DURATION = process.env.BENCH_FLOOD_DURATION ?? '10s';
export const FLOOD_MODE_LIST = (process.env.BENCH_FLOOD_MODES ?? FLOOD_MODES.join('|')).split('|') as FloodMode[];
/** The item GET over keys from 2,000 accounts and with one key: many tenants against one (BENCH_ONLY=tenants). */
export const TENANT_SCENARIOS = new Set(['GET /catalogue/:id', 'GET /catalogue/:id, 2,000 accounts', 'GET /catalogue/:id, one key']);
export const RATIO_SCENARIOS = new Set([...TENANT_SCENARIOS, 'GET /catalogue/:id, keys with allowed addresses', 'GET /me']);
/** The scenarios of BENCH_ONLY=quick: docs/performance.md's table. */
export const QUICK_SCENARIOS = new Set([...TENANT_SCENARIOS, 'GET /me', 'GET /prices?platform=', 'GET /catalogue?search=']);
/**
 * BENCH_ONLY=ab: settings to compare, `;` between them, each a space-separated list of NAME=VALUE given to the
 * server's environment (an empty one: the server as it is), e.g. `STATS_THREAD=on;STATS_THREAD=off`; TREE=DIR
 * runs the server of another checkout, built (`npm run build` there), on the same stores: a build without a
 * mechanism against this one. Run in
 * turns (A B A B ...) BENCH_AB_RUNS times (2), each on a fresh server, with BENCH_AB_SCENARIOS (`|` between
 * scenario names; item GET and `/me` by default), each measured beside the baseline.
 */
export const AB_VARIANTS = (process.env.BENCH_AB ?? '').split(';').map((v) => v.trim());
export const AB_RUNS = Number(process.env.BENCH_AB_RUNS ?? 2);
export const AB_SCENARIOS = new Set((process.env.BENCH_AB_SCENARIOS ?? 'GET /catalogue/:id|GET /me').split('|'));
/**
 * The allowed addresses of the "keys with allowed addresses" scenario: ten IPv4 ranges, the bench's client
 * (127.0.0.1) in the last, so each request walks the whole list. Most lists owners set are shorter.
 */
export const LIMITED_ADDRESSES = [...Array.from({ length: 9 }, (_, i) => `10.${i}.0.0/16`), '127.0.0.0/8'];
/** Comma-separated stores to run (sqlite, postgres); both by default. */
export const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
export const CONNECTIONS = 50;
/** Accounts with a key each, picked at random per request: enough that no per-server cache holds them all cheaply. */
export const BENCH_ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 10_000);
export const PG_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
// Limits far above what the machine can serve: the benchmark measures throughput, not refusals.
export const PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: 1_000_000_000, perMinute: 1_000_000_000 } });
/**
 * The run's Redis key space, deleted when the run ends: left behind, each run's 100,000-odd meter and statistics
 * keys slowed the next runs' Redis (370,000 keys after three ratio runs).
 */
export const REDIS_PREFIX = `bench:${Date.now()}:`;

export interface Scenario {
  name: string;
  paths: string[];
  /** bench: a key from each of BENCH_ACCOUNTS accounts; accounts2000: the first 2,000 of them; one: the first. */
  keys: 'bench' | 'collector' | 'limited' | 'accounts2000' | 'one';
  /** The share of requests sent with the first key: one account far busier than the rest (docs/scaling.md). */
  hotShare?: number;
  /** Ask for published items only (every answer a 200), not any id of the range (some 404). */
  publishedOnly?: boolean;
}

export const V1 = '/developer/v1';
export const SEARCHES = ['super', 'ii', 'sonic', 'zelda', 'dragon%20quest', 'super%20mario', 'pok%C3%A9mon', 'ex', '64', 'chrono%20crystal'];
export const PLATFORMS = ['NES', 'Nintendo%2064', 'PlayStation%202', 'Sega%20Genesis', 'Game%20Boy', 'Xbox%20360', 'Wii', 'Dreamcast'];

export const SCENARIOS: Scenario[] = [
  { name: 'GET /catalogue/:id', paths: [`${V1}/catalogue/{id}`], keys: 'bench', publishedOnly: true },
  // Many tenants and one: keys drawn from the first 2,000 accounts, and every request with one key.
  { name: 'GET /catalogue/:id, 2,000 accounts', paths: [`${V1}/catalogue/{id}`], keys: 'accounts2000', publishedOnly: true },
  { name: 'GET /catalogue/:id, one key', paths: [`${V1}/catalogue/{id}`], keys: 'one', publishedOnly: true },
  // The same over as many keys, each with ten allowed addresses (LIMITED_ADDRESSES): what a list costs.
  { name: 'GET /catalogue/:id, keys with allowed addresses', paths: [`${V1}/catalogue/{id}`], keys: 'limited' },
  { name: 'GET /prices/:id', paths: [`${V1}/prices/{id}`], keys: 'bench' },
  { name: 'GET /catalogue?search=', paths: SEARCHES.map((s) => `${V1}/catalogue?search=${s}`), keys: 'bench' },
  { name: 'GET /prices?platform=', paths: PLATFORMS.map((p) => `${V1}/prices?platform=${p}`), keys: 'bench' },
  { name: 'GET /collection/value', paths: [`${V1}/collection/value`], keys: 'collector' },
  { name: 'GET /me', paths: [`${V1}/me`], keys: 'bench' },
  // The hot spot of docs/scaling.md: one account sends a tenth of the traffic (mostly 429s past its burst),
  // the rest spread over every other account (BENCH_ACCOUNTS=100000 for the plan's 100,000 accounts).
  { name: 'GET /catalogue/:id, one account 10%', paths: [`${V1}/catalogue/{id}`], keys: 'bench', hotShare: 0.1 },
];

/** Latency targets are per request: measured with one connection, so that no queueing is counted. */
export const LATENCY_SCENARIOS: Scenario[] = [
  { name: 'GET /catalogue?search= (mix)', paths: SEARCHES.map((s) => `${V1}/catalogue?search=${s}`), keys: 'bench' },
  { name: 'GET /collection/value (10,000 items)', paths: [`${V1}/collection/value`], keys: 'collector' },
  { name: 'GET /catalogue/:id', paths: [`${V1}/catalogue/{id}`], keys: 'bench', publishedOnly: true },
  // Many tenants and one: keys drawn from the first 2,000 accounts, and every request with one key.
  { name: 'GET /catalogue/:id, 2,000 accounts', paths: [`${V1}/catalogue/{id}`], keys: 'accounts2000', publishedOnly: true },
  { name: 'GET /catalogue/:id, one key', paths: [`${V1}/catalogue/{id}`], keys: 'one', publishedOnly: true },
];
