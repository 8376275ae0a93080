/**
 * `npm run bench`: shelfapi against the raw node:http baseline, on the same machine, in one run.
 *
 * Starts (a) bench/baseline-server.ts, (b) shelfapi on SQLite, (c) shelfapi on PostgreSQL + Redis, each over
 * the same generated catalogue (BENCH_ITEMS, default 1,000,000 items), drives each with wrk (Debian's package,
 * installed when missing) at 50 connections with random ids and random keys over many accounts, and prints
 * requests per second, p50 and p99 and the ratio to (a), measured again after every scenario (Baseline).
 * Then streams the whole CSV export from each store while other requests are served (from the store, then
 * from the price guide file each server writes, then filtered by a platform), and reports rows per second,
 * the server's peak RSS and its event-loop delay.
 * Results go to bench/results/*.json, and the full run's tables to bench/results/latest.md; docs/performance.md
 * holds one table of today's figures, copied from a run by hand. BENCH_ONLY picks a shorter run (below).
 *
 * Last, the flood scenario (bench/flood.ts): one account at 200 connections beside another, on SQLite,
 * PostgreSQL metering, PostgreSQL + Redis and two servers on one database. BENCH_ONLY=flood runs only that
 * (BENCH_FLOOD_MODES picks modes, BENCH_FLOOD_DURATION its length, 10s by default).
 *
 * Data is generated once per size (items and accounts) and kept under bench/.data (SQLite) and in the database
 * shelfapi_bench_<items>_<accounts> (PostgreSQL; BENCH_DATABASE names another, so that a branch whose migrations
 * differ from main's does not migrate the database other runs share); delete them to start over.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { cli, deleteRedisKeys, downloadCsvRows, ensureWrk, log, peakRssMb, ROOT, waitUntilUp } from './bench-support.js';
import { seededRandom } from '../src/demo/random.js';
import { FLOOD_MODES, floodTable, runFloods, type FloodMode, type FloodServer } from './flood.js';

const DATA = join(ROOT, 'bench', '.data');
/**
 * `search`: only the data-drawn search and mixed scenarios (no baseline or exports); `flood`: only the flood
 * scenario; `workers`: only item GET with `serve --workers 1` and `--workers 2`, against the baseline;
 * `ratios`: only the baseline, its floors, and item GET and `/me` on each store; `quick`: the figures of
 * docs/performance.md's table in a few minutes (item GET, `/me`, list pages and the ten-term search on each
 * store, 20,000 items, 5 s each beside the baseline, then the flood); `ab`: the same server with each of the
 * settings of BENCH_AB in turns (see runAb); `tenants`: only the item GET over 10,000 accounts, 2,000 accounts and
 * one key on each store, beside the baseline; `pages`: only bench/settings-pages.ts (the settings pages of an
 * account with 20 keys, 90 days of statistics and a full request log).
 */
const ONLY = process.env.BENCH_ONLY ?? '';
const SHORT = ONLY === 'quick' || ONLY === 'ab' || ONLY === 'tenants';
const ITEMS = Number(process.env.BENCH_ITEMS ?? (SHORT ? 20_000 : 1_000_000));
const DURATION = process.env.BENCH_DURATION ?? (ONLY === 'quick' || ONLY === 'tenants' ? '5s' : ONLY === 'ab' ? '8s' : '10s');
/**
 * Long enough for a fresh server to have seen its keys: the item GET is the first scenario on each server,
 * and with 3 s it measured that server's first pass over 10,000 keys (a PostgreSQL read per principal, the
 * hour's new statistics hashes) where /me, after it, did not: PostgreSQL + Redis item GETs 2,135 a second
 * with 3 s, 2,921 with 10 s on one machine. 10 s at these rates touches ~92% of the keys.
 */
const WARMUP = process.env.BENCH_WARMUP ?? (ONLY === 'quick' || ONLY === 'tenants' ? '5s' : ONLY === 'ab' ? '8s' : '10s');
const FLOOD_DURATION = process.env.BENCH_FLOOD_DURATION ?? '10s';
const FLOOD_MODE_LIST = (process.env.BENCH_FLOOD_MODES ?? FLOOD_MODES.join('|')).split('|') as FloodMode[];
/** The item GET over keys from 2,000 accounts and with one key: many tenants against one (BENCH_ONLY=tenants). */
const TENANT_SCENARIOS = new Set(['GET /catalogue/:id', 'GET /catalogue/:id, 2,000 accounts', 'GET /catalogue/:id, one key']);
const RATIO_SCENARIOS = new Set([...TENANT_SCENARIOS, 'GET /catalogue/:id, keys with allowed addresses', 'GET /me']);
/** The scenarios of BENCH_ONLY=quick: docs/performance.md's table. */
const QUICK_SCENARIOS = new Set([...TENANT_SCENARIOS, 'GET /me', 'GET /prices?platform=', 'GET /catalogue?search=']);
/**
 * BENCH_ONLY=ab: settings to compare, `;` between them, each a space-separated list of NAME=VALUE given to the
 * server's environment (an empty one: the server as it is), e.g. `STATS_THREAD=on;STATS_THREAD=off`; TREE=DIR
 * runs the server of another checkout, built (`npm run build` there), on the same stores: a build without a
 * mechanism against this one. Run in
 * turns (A B A B ...) BENCH_AB_RUNS times (2), each on a fresh server, with BENCH_AB_SCENARIOS (`|` between
 * scenario names; item GET and `/me` by default), each measured beside the baseline.
 */
const AB_VARIANTS = (process.env.BENCH_AB ?? '').split(';').map((v) => v.trim());
const AB_RUNS = Number(process.env.BENCH_AB_RUNS ?? 2);
const AB_SCENARIOS = new Set((process.env.BENCH_AB_SCENARIOS ?? 'GET /catalogue/:id|GET /me').split('|'));
/**
 * The allowed addresses of the "keys with allowed addresses" scenario: ten IPv4 ranges, the bench's client
 * (127.0.0.1) in the last, so each request walks the whole list. Most lists owners set are shorter.
 */
const LIMITED_ADDRESSES = [...Array.from({ length: 9 }, (_, i) => `10.${i}.0.0/16`), '127.0.0.0/8'];
/** Comma-separated stores to run (sqlite, postgres); both by default. */
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const CONNECTIONS = 50;
/** Accounts with a key each, picked at random per request: enough that no per-server cache holds them all cheaply. */
const BENCH_ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 10_000);
const PG_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
// Limits far above what the machine can serve: the benchmark measures throughput, not refusals.
const PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: 1_000_000_000, perMinute: 1_000_000_000 } });
/**
 * The run's Redis key space, deleted when the run ends: left behind, each run's 100,000-odd meter and statistics
 * keys slowed the next runs' Redis (370,000 keys after three ratio runs).
 */
const REDIS_PREFIX = `bench:${Date.now()}:`;


interface WrkResult {
  requests: number;
  rps: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  maxUs: number;
  non2xx: number;
  socketErrors: number;
}

interface Target {
  name: string;
  base: string;
  opsBase: string | null;
  child: ChildProcess;
}

interface Keys {
  demo: string;
  collector: string;
  bench: string[];
}

/**
 * Loads BENCH_ACCOUNTS accounts with one key each (`shelfapi load`), refs and emails numbered from `name`:
 * their ids and keys by ref.
 */
function loadAccounts(label: string, databaseUrl: string, name: string, scopes: readonly string[]): { accounts: Record<string, number>; keys: Record<string, string> } {
  const file = join(DATA, `${label}-${name === 'bench' ? '' : `${name}-`}accounts.json`);
  const ref = (i: number) => `${name[0]}${i}`;
  writeFileSync(
    file,
    JSON.stringify({
      accounts: Array.from({ length: BENCH_ACCOUNTS }, (_, i) => ({ ref: ref(i), email: `${name}${i}@shelfapi.dev`, plan: 'enthusiast' })),
      keys: Array.from({ length: BENCH_ACCOUNTS }, (_, i) => ({ ref: ref(i), account: ref(i), name, scopes })),
    }),
  );
  return JSON.parse(cli(['load', file, '--json'], { DATABASE_URL: databaseUrl })) as { accounts: Record<string, number>; keys: Record<string, string> };
}

/** Seeds the store once (demo catalogue + collector) and adds bench accounts with a key each. */
function prepareData(label: string, databaseUrl: string): Keys {
  const marker = join(DATA, `${label}-${ITEMS}-${BENCH_ACCOUNTS}.keys.json`);
  if (existsSync(marker)) return JSON.parse(readFileSync(marker, 'utf8')) as Keys;
  const started = Date.now();
  log(`${label}: seeding ${ITEMS.toLocaleString('en-US')} items (once; kept for later runs)`);
  const seeded = JSON.parse(cli(['seed', '--demo', '--items', String(ITEMS), '--json'], { DATABASE_URL: databaseUrl })) as {
    keys: Record<string, string>;
  };
  const loaded = loadAccounts(label, databaseUrl, 'bench', ['catalogue:read', 'prices:read', 'export', 'collection:read', 'marketplace:read', 'transactions:read']);
  const keys: Keys = { demo: seeded.keys.demo!, collector: seeded.keys.collector!, bench: Object.values(loaded.keys) };
  writeFileSync(marker, JSON.stringify(keys));
  log(`${label}: data ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return keys;
}

/**
 * A second set of BENCH_ACCOUNTS accounts with a key each, every key limited to LIMITED_ADDRESSES (through
 * the keys service: bench/limit-keys.ts), made once per store: the item GET over them against the item GET
 * over the bench keys, which have no list, is what a list costs the hot path.
 */
function prepareLimitedKeys(label: string, databaseUrl: string): string[] {
  const marker = join(DATA, `${label}-${ITEMS}-${BENCH_ACCOUNTS}.limited-keys.json`);
  if (existsSync(marker)) return JSON.parse(readFileSync(marker, 'utf8')) as string[];
  const started = Date.now();
  log(`${label}: adding ${BENCH_ACCOUNTS.toLocaleString('en-US')} accounts whose keys have allowed addresses (once; kept for later runs)`);
  const loaded = loadAccounts(label, databaseUrl, 'limited', ['catalogue:read', 'prices:read']);
  const idsFile = join(DATA, `${label}-limited-account-ids.json`);
  writeFileSync(idsFile, JSON.stringify(Object.values(loaded.accounts)));
  execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'limit-keys.ts'), idsFile, LIMITED_ADDRESSES.join(' ')], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const keys = Object.values(loaded.keys);
  writeFileSync(marker, JSON.stringify(keys));
  log(`${label}: limited keys ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return keys;
}

async function preparePostgres(): Promise<string> {
  const name = process.env.BENCH_DATABASE ?? `shelfapi_bench_${ITEMS}_${BENCH_ACCOUNTS}`;
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`BENCH_DATABASE must be a plain lower-case name, got ${JSON.stringify(name)}`);
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  const exists = await admin.query('select 1 from pg_database where datname = $1', [name]);
  if (exists.rowCount === 0) await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The servers' ports count up from here (BENCH_PORT), two per shelfapi server, one per baseline. */
let nextPort = Number(process.env.BENCH_PORT ?? 18100);

/** Starts `shelfapi serve`; `env.TREE`, when given, names another checkout (built) whose server runs instead. */
async function startShelfapi(name: string, env: Record<string, string>): Promise<Target> {
  const port = nextPort++;
  const opsPort = nextPort++;
  const root = env.TREE ?? ROOT;
  const child = spawn(process.execPath, [join(root, 'bin', 'shelfapi.js'), 'serve'], {
    cwd: root,
    // A scenario may bring limits of its own (the flood's quota). No drain delay: the bench stops servers
    // with SIGTERM between scenarios.
    env: { ...process.env, DRAIN_DELAY_MS: '0', LOG_LEVEL: 'warn', PLAN_LIMITS, ...env, PORT: String(port), OPS_PORT: String(opsPort) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitUntilUp(`http://127.0.0.1:${opsPort}/healthz`, child);
  return { name, base: `http://127.0.0.1:${port}`, opsBase: `http://127.0.0.1:${opsPort}`, child };
}

/** The raw node:http baseline, or one of its floors (bench/baseline-server.ts, BASELINE_MODE). */
async function startBaseline(mode: 'plain' | 'headers' | 'fastify' = 'plain'): Promise<Target> {
  const port = nextPort++;
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'baseline-server.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), BASELINE_MODE: mode },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitUntilUp(`http://127.0.0.1:${port}/`, child);
  return { name: 'baseline', base: `http://127.0.0.1:${port}`, opsBase: null, child };
}

/** Paths for wrk: a list, or a file of one path a line (lists too long for an environment variable). */
type Paths = string[] | { file: string };

function wrkArgs(base: string, paths: Paths, keysFile: string | null, duration: string, connections: number, hotShare = 0) {
  return {
    args: ['-t1', `-c${connections}`, `-d${duration}`, '--timeout', '5s', '-s', join(ROOT, 'bench', 'wrk-random.lua'), base],
    env: {
      ...process.env,
      ...(Array.isArray(paths) ? { PATHS: paths.join('|') } : { PATHS_FILE: paths.file }),
      IDS: String(ITEMS),
      ...(keysFile ? { KEYS_FILE: keysFile } : {}),
      HOT_SHARE: String(hotShare),
    },
  };
}

function parseWrk(out: string): WrkResult {
  const line = out.trim().split('\n').at(-1)!;
  return JSON.parse(line) as WrkResult;
}

function wrk(base: string, paths: Paths, keysFile: string | null, duration: string, connections = CONNECTIONS, hotShare = 0): WrkResult {
  const { args, env } = wrkArgs(base, paths, keysFile, duration, connections, hotShare);
  return parseWrk(execFileSync('wrk', args, { env, encoding: 'utf8' }));
}

/** wrk without blocking: several run side by side against one server (the mixed scenario). */
function wrkAsync(base: string, paths: Paths, keysFile: string | null, duration: string, connections: number): Promise<WrkResult> {
  const { args, env } = wrkArgs(base, paths, keysFile, duration, connections);
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { env, encoding: 'utf8' }, (error, stdout) => (error ? reject(error) : resolve(parseWrk(stdout))));
  });
}

interface Scenario {
  name: string;
  paths: string[];
  /** bench: a key from each of BENCH_ACCOUNTS accounts; accounts2000: the first 2,000 of them; one: the first. */
  keys: 'bench' | 'collector' | 'limited' | 'accounts2000' | 'one';
  /** The share of requests sent with the first key: one account far busier than the rest (docs/scaling.md). */
  hotShare?: number;
  /** Ask for published items only (every answer a 200), not any id of the range (some 404). */
  publishedOnly?: boolean;
}

const V1 = '/developer/v1';
const SEARCHES = ['super', 'ii', 'sonic', 'zelda', 'dragon%20quest', 'super%20mario', 'pok%C3%A9mon', 'ex', '64', 'chrono%20crystal'];
const PLATFORMS = ['NES', 'Nintendo%2064', 'PlayStation%202', 'Sega%20Genesis', 'Game%20Boy', 'Xbox%20360', 'Wii', 'Dreamcast'];

const SCENARIOS: Scenario[] = [
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
const LATENCY_SCENARIOS: Scenario[] = [
  { name: 'GET /catalogue?search= (mix)', paths: SEARCHES.map((s) => `${V1}/catalogue?search=${s}`), keys: 'bench' },
  { name: 'GET /collection/value (10,000 items)', paths: [`${V1}/collection/value`], keys: 'collector' },
  { name: 'GET /catalogue/:id', paths: [`${V1}/catalogue/{id}`], keys: 'bench', publishedOnly: true },
  // Many tenants and one: keys drawn from the first 2,000 accounts, and every request with one key.
  { name: 'GET /catalogue/:id, 2,000 accounts', paths: [`${V1}/catalogue/{id}`], keys: 'accounts2000', publishedOnly: true },
  { name: 'GET /catalogue/:id, one key', paths: [`${V1}/catalogue/{id}`], keys: 'one', publishedOnly: true },
];

// ---------------------------------------------------------------------------------------------------
// Searches drawn from the data (issue 12, item 6)

/** Names read to draw terms from, and the searches made of them. */
const DRAWN_NAMES = 3000;
const DRAWN_SEARCHES = 3000;
const MAX_DRAWN_OFFSET = 2000;

async function readNames(store: string, databaseUrl: string, ids: number[]): Promise<string[]> {
  return readColumn(store, databaseUrl, `select name from catalogue_items where status = 'PUBLISHED' and master_item_id in (${ids.join(',')})`);
}

/** The ids of the published items: the item GET scenarios ask for these only, so every answer is a 200. */
async function publishedIds(store: string, databaseUrl: string): Promise<number[]> {
  const ids = await readColumn(store, databaseUrl, `select master_item_id from catalogue_items where status = 'PUBLISHED' order by master_item_id`);
  return ids.map(Number);
}

async function readColumn(store: string, databaseUrl: string, sqlText: string): Promise<string[]> {
  if (store === 'sqlite') {
    const db = new SqliteDatabase(databaseUrl, { readonly: true });
    try {
      return (db.prepare(sqlText).pluck().all() as unknown[]).map(String);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<Record<string, unknown>>(sqlText)).rows.map((r) => String(Object.values(r)[0]));
  } finally {
    await client.end();
  }
}

interface DrawnSearches {
  /** Request paths, one per search (80% /catalogue, 20% /prices). */
  paths: string[];
  distinctTerms: number;
  twoCharacterTerms: number;
}

/**
 * Searches made of the catalogue's own names: whole words and two-character pieces of words, one to three
 * terms each, offsets up to 2,000 on a third of them, so that common, rare and short terms all come up
 * in the proportions the data has.
 */
async function drawSearches(store: string, databaseUrl: string): Promise<DrawnSearches> {
  const rnd = seededRandom(12);
  const ids = Array.from({ length: DRAWN_NAMES }, () => 1 + Math.floor(rnd() * ITEMS));
  const words = (await readNames(store, databaseUrl, ids)).flatMap((name) => name.split(/\s+/u)).filter((w) => w.length >= 2);
  if (words.length === 0) throw new Error('no names to draw searches from');
  // Half the words as often as the names use them (common terms come up often), half uniformly over the
  // distinct words (rare ones come up too).
  const distinctWords = [...new Set(words)];
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const terms = new Set<string>();
  let twoCharacterTerms = 0;
  const term = () => {
    const word = pick(rnd() < 0.5 ? words : distinctWords);
    if (rnd() < 0.25) {
      const at = Math.floor(rnd() * (word.length - 1));
      twoCharacterTerms++;
      return word.slice(at, at + 2);
    }
    return word;
  };
  const paths = Array.from({ length: DRAWN_SEARCHES }, () => {
    const roll = rnd();
    const count = roll < 0.5 ? 1 : roll < 0.85 ? 2 : 3;
    const chosen = Array.from({ length: count }, term);
    for (const t of chosen) terms.add(t.toLowerCase());
    const offset = rnd() < 0.33 ? `&offset=${Math.floor(rnd() * (MAX_DRAWN_OFFSET + 1))}` : '';
    const list = rnd() < 0.8 ? 'catalogue' : 'prices';
    return `${V1}/${list}?search=${encodeURIComponent(chosen.join(' '))}${offset}`;
  });
  if (terms.size < 1000) throw new Error(`only ${terms.size} distinct terms drawn; the workload wants at least 1,000`);
  return { paths, distinctTerms: terms.size, twoCharacterTerms };
}

interface Percentiles {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
}

/** Each distinct path once, one at a time, timed one by one: per request latency with nothing queued. */
async function eachOnce(base: string, paths: readonly string[], key: string): Promise<Percentiles> {
  const times: number[] = [];
  let non2xx = 0;
  for (const path of new Set(paths)) {
    const started = performance.now();
    const res = await fetch(`${base}${path}`, { headers: { 'x-api-key': key } });
    await res.arrayBuffer();
    times.push(performance.now() - started);
    if (res.status < 200 || res.status > 299) non2xx++;
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round((times[Math.min(times.length - 1, Math.floor(times.length * q))] ?? 0) * 100) / 100;
  return { requests: times.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: Math.round((times.at(-1) ?? 0) * 100) / 100, non2xx };
}

interface SearchIndexMemory {
  items: number;
  bytes: number;
}

async function searchIndexGauges(opsBase: string): Promise<SearchIndexMemory & { ready: boolean }> {
  const text = await (await fetch(`${opsBase}/metrics`)).text();
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { items: gauge('shelfapi_search_index_items'), bytes: gauge('shelfapi_search_index_bytes'), ready: gauge('shelfapi_search_index_ready') === 1 };
}

/**
 * Waits until the server's search index is built (a server starts serving after 8 s even when it is not,
 * and the store answers searches meanwhile); returns the index's size and the seconds since `since`.
 */
async function searchIndexReady(target: Target, since: number): Promise<SearchIndexMemory & { readySeconds: number }> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const gauges = await searchIndexGauges(target.opsBase!);
    if (gauges.ready) return { items: gauges.items, bytes: gauges.bytes, readySeconds: Math.round((Date.now() - since) / 100) / 10 };
    if (Date.now() > deadline) throw new Error(`${target.name}: the search index was not built within 5 minutes`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface MixedKind {
  kind: string;
  connections: number;
  paths: Paths;
  keys: 'bench' | 'collector';
}

/** Item and price GETs with searches and list pages beside them, each kind its own wrk, all at once. */
function mixedKinds(searchFile: string): MixedKind[] {
  return [
    { kind: 'GET /catalogue/:id', connections: 20, paths: [`${V1}/catalogue/{id}`], keys: 'bench' },
    { kind: 'GET /prices/:id', connections: 10, paths: [`${V1}/prices/{id}`], keys: 'bench' },
    { kind: 'search (data-drawn)', connections: 15, paths: { file: searchFile }, keys: 'bench' },
    {
      kind: 'list pages (platform)',
      connections: 5,
      paths: PLATFORMS.flatMap((p) => [`${V1}/catalogue?platform=${p}`, `${V1}/prices?platform=${p}`]),
      keys: 'bench',
    },
  ];
}

interface SearchRun {
  target: string;
  distinctTerms: number;
  twoCharacterTerms: number;
  searches: number;
  index: SearchIndexMemory & { readySeconds: number };
  firstRequestsAfterStart: Percentiles;
  eachOnceWarm: Percentiles;
  cold: WrkResult;
  warm: WrkResult;
  mixed: Array<{ kind: string; connections: number; result: WrkResult }>;
}

/**
 * The data-drawn search workload on one store: a fresh process answers every distinct search once (the
 * first request of each after start), then wrk at 50 connections right after a restart (cold) and again
 * (warm), every search once more one at a time (warm), and the mixed scenario.
 */
async function runSearches(store: string, databaseUrl: string, start: () => Promise<Target>, keyFiles: Record<'bench' | 'collector', string>, key: string): Promise<SearchRun> {
  const drawn = await drawSearches(store, databaseUrl);
  const searchFile = join(DATA, `${store}-drawn-searches.txt`);
  writeFileSync(searchFile, `${drawn.paths.join('\n')}\n`);
  log(`${store}: ${drawn.paths.length} data-drawn searches, ${drawn.distinctTerms} distinct terms (${drawn.twoCharacterTerms} two-character)`);
  const stop = async (target: Target) => {
    target.child.kill('SIGTERM');
    await new Promise((r) => target.child.once('exit', r));
  };

  let started = Date.now();
  let target = await start();
  const index = await searchIndexReady(target, started);
  log(`${target.name}: search index ${index.items} items, ${(index.bytes / 2 ** 20).toFixed(1)} MiB, ready ${index.readySeconds} s after the process started; each search once`);
  const firstRequestsAfterStart = await eachOnce(target.base, drawn.paths, key);
  await stop(target);

  started = Date.now();
  target = await start();
  await searchIndexReady(target, started);
  log(`${target.name}: data-drawn searches at ${CONNECTIONS} connections, cold (fresh process) then warm`);
  const cold = wrk(target.base, { file: searchFile }, keyFiles.bench, DURATION);
  const warm = wrk(target.base, { file: searchFile }, keyFiles.bench, DURATION);
  const eachOnceWarm = await eachOnce(target.base, drawn.paths, key);

  log(`${target.name}: mixed scenario (items, prices, searches, list pages at once)`);
  const kinds = mixedKinds(searchFile);
  const results = await Promise.all(kinds.map((k) => wrkAsync(target.base, k.paths, keyFiles[k.keys], DURATION, k.connections)));
  await stop(target);
  return {
    target: target.name,
    distinctTerms: drawn.distinctTerms,
    twoCharacterTerms: drawn.twoCharacterTerms,
    searches: drawn.paths.length,
    index,
    firstRequestsAfterStart,
    eachOnceWarm,
    cold,
    warm,
    mixed: kinds.map((k, i) => ({ kind: k.kind, connections: k.connections, result: results[i]! })),
  };
}

function searchTables(runs: readonly SearchRun[]): string {
  const ms = (us: number) => (us / 1000).toFixed(2);
  return [
    'Searches drawn from the data (one- to three-term searches of words and two-character pieces of item names, offsets up to 2,000; 80% /catalogue, 20% /prices):',
    '',
    '| target | searches (distinct terms, two-character) | index items | index MiB | index ready after start s | each once after start p50 / p99 / max ms | each once warm p50 / p99 / max ms | 50 conn. cold req/s, p99 ms | 50 conn. warm req/s, p99 ms |',
    '|---|---|---:|---:|---:|---|---|---|---|',
    ...runs.map(
      (r) =>
        `| ${r.target} | ${r.searches} (${r.distinctTerms}, ${r.twoCharacterTerms}) | ${r.index.items} | ${(r.index.bytes / 2 ** 20).toFixed(1)} | ${r.index.readySeconds} | ` +
        `${r.firstRequestsAfterStart.p50Ms} / ${r.firstRequestsAfterStart.p99Ms} / ${r.firstRequestsAfterStart.maxMs} | ` +
        `${r.eachOnceWarm.p50Ms} / ${r.eachOnceWarm.p99Ms} / ${r.eachOnceWarm.maxMs} | ` +
        `${Math.round(r.cold.rps)}, ${ms(r.cold.p99Us)} | ${Math.round(r.warm.rps)}, ${ms(r.warm.p99Us)} |`,
    ),
    '',
    'Mixed: each kind its own wrk, all at once against one server (50 connections in all):',
    '',
    '| target | kind | connections | req/s | p50 ms | p99 ms | non-2xx |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...runs.flatMap((r) =>
      r.mixed.map((m) => `| ${r.target} | ${m.kind} | ${m.connections} | ${Math.round(m.result.rps)} | ${ms(m.result.p50Us)} | ${ms(m.result.p99Us)} | ${m.result.non2xx} |`),
    ),
  ].join('\n');
}

async function eventLoopP99Ms(opsBase: string): Promise<number> {
  const text = await (await fetch(`${opsBase}/metrics`)).text();
  return Number(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text)?.[1] ?? NaN) * 1000;
}

interface ExportResult {
  rows: number;
  seconds: number;
  rowsPerSecond: number;
  peakRssMb: number;
  eventLoopP99Ms: number;
  concurrentRequests: number;
  concurrentP99Ms: number;
}

/** Waits until a server has written the price guide file into `dir` (src/export/price-guide.ts). */
async function guideWritten(dir: string): Promise<void> {
  const deadline = Date.now() + 15 * 60_000;
  while (!(existsSync(dir) && readdirSync(dir).some((name) => /^prices-.*\.csv$/.test(name)))) {
    if (Date.now() > deadline) throw new Error(`no price guide file in ${dir}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** A platform with many items, for the filtered export. */
const EXPORT_FILTER = 'platform=PlayStation%202';

/** Streams the whole export (or a filtered one) while a client keeps asking for single items; measures both sides. */
async function runExport(target: Target, key: string, query = ''): Promise<ExportResult> {
  await eventLoopP99Ms(target.opsBase!); // resets the server's event-loop histogram
  let done = false;
  const latencies: number[] = [];
  const sideLoad = (async () => {
    while (!done) {
      const started = performance.now();
      const res = await fetch(`${target.base}${V1}/catalogue/${1 + Math.floor(Math.random() * ITEMS)}`, { headers: { 'x-api-key': key } });
      await res.arrayBuffer();
      latencies.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const started = performance.now();
  const rows = await downloadCsvRows(`${target.base}${V1}/prices/export.csv${query}`, key);
  const seconds = (performance.now() - started) / 1000;
  done = true;
  await sideLoad;
  latencies.sort((a, b) => a - b);
  return {
    rows,
    seconds: Math.round(seconds * 100) / 100,
    rowsPerSecond: Math.round(rows / seconds),
    peakRssMb: peakRssMb(target.child.pid!),
    eventLoopP99Ms: Math.round((await eventLoopP99Ms(target.opsBase!)) * 10) / 10,
    concurrentRequests: latencies.length,
    concurrentP99Ms: Math.round((latencies[Math.floor(latencies.length * 0.99)] ?? 0) * 10) / 10,
  };
}

/** The flood scenario on every mode in BENCH_FLOOD_MODES; its table. */
async function floodRun(stamp: string): Promise<string> {
  for (const mode of FLOOD_MODE_LIST) if (!FLOOD_MODES.includes(mode)) throw new Error(`BENCH_FLOOD_MODES: unknown mode ${mode} (modes: ${FLOOD_MODES.join('|')})`);
  const startServer = async (name: string, env: Record<string, string>): Promise<FloodServer> => {
    const target = await startShelfapi(name, env);
    return {
      base: target.base,
      stop: async () => {
        target.child.kill('SIGTERM');
        await new Promise((r) => target.child.once('exit', r));
      },
    };
  };
  const run = await runFloods({ dataDir: DATA, pgAdminUrl: PG_ADMIN_URL, redisUrl: REDIS_URL, duration: FLOOD_DURATION, modes: FLOOD_MODE_LIST, startServer });
  writeFileSync(join(ROOT, 'bench', 'results', `flood-${stamp}.json`), `${JSON.stringify(run, null, 2)}\n`);
  return floodTable(run, FLOOD_DURATION);
}

// ---------------------------------------------------------------------------------------------------
// Every core (issue 17, item 3): item GET from one process, then from a primary and two workers

const WORKER_COUNTS = [1, 2] as const;

/** Item GET at CONNECTIONS connections with `serve --workers N` for each N, one server at a time. */
async function runWorkers(start: (workers: number) => Promise<Target>, keysFile: string, baseline: Baseline): Promise<Row[]> {
  const rows: Row[] = [];
  for (const workers of WORKER_COUNTS) {
    const target = await start(workers);
    const scenario = `GET /catalogue/:id, --workers ${workers}`;
    log(`${target.name}: ${scenario}`);
    wrk(target.base, [`${V1}/catalogue/{id}`], keysFile, WARMUP);
    rows.push(baseline.beside(scenario, target.name, () => wrk(target.base, [`${V1}/catalogue/{id}`], keysFile, DURATION)));
    target.child.kill('SIGTERM');
    await new Promise((r) => target.child.once('exit', r));
  }
  return rows;
}

interface Row {
  scenario: string;
  target: string;
  result: WrkResult;
  /** The result's requests a second over `baselineRps`. */
  ratio: number;
  /** The mean of the baseline measured just before and just after this row's result. */
  baselineRps: number;
}

/**
 * The raw node:http baseline, kept up for the whole run and measured again after every scenario: each
 * scenario's ratio is to the mean of the baseline measured just before it and just after it. On these
 * virtual machines the baseline moved from 53,000 to 68,000 requests a second within the hour (2026-11-28),
 * so one baseline at the start of a run made the ratios of its last scenarios a measure of the machine.
 */
class Baseline {
  /** The latest measurement: the one before the next scenario. */
  private last: WrkResult;

  private constructor(
    private readonly server: Target,
    /** The first measurement: the run's baseline row. */
    readonly first: WrkResult,
  ) {
    this.last = first;
  }

  static async start(): Promise<Baseline> {
    const server = await startBaseline();
    log(`baseline: ${DURATION} at ${CONNECTIONS} connections`);
    wrk(server.base, ['/'], null, WARMUP);
    return new Baseline(server, wrk(server.base, ['/'], null, DURATION));
  }

  /** Runs `measure` (a target's measured wrk run, warmed up already) and measures the baseline again after it. */
  beside(scenario: string, target: string, measure: () => WrkResult): Row {
    const before = this.last;
    const result = measure();
    // A short warm-up: the baseline server has run all along; it only needs its connections again.
    wrk(this.server.base, ['/'], null, '2s');
    this.last = wrk(this.server.base, ['/'], null, DURATION);
    const baselineRps = (before.rps + this.last.rps) / 2;
    return { scenario, target, result, ratio: Math.round((result.rps / baselineRps) * 1000) / 1000, baselineRps };
  }

  stop(): void {
    this.server.child.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  if (ONLY === 'pages') {
    // The settings pages with a full account (bench/settings-pages.ts): its own seeding and servers, no build.
    execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'settings-pages.ts')], { cwd: ROOT, stdio: 'inherit' });
    return;
  }
  mkdirSync(DATA, { recursive: true });
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  ensureWrk();
  // BENCH_BUILD=no: the build is there already (runs one after another on an unchanged tree).
  if (process.env.BENCH_BUILD !== 'no') {
    log('building');
    execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  if (ONLY === 'flood') {
    const table = await floodRun(new Date().toISOString().replace(/[:.]/g, '-'));
    process.stdout.write(`\n${table}\n`);
    return;
  }

  const sqliteUrl = join(DATA, `bench-${ITEMS}-${BENCH_ACCOUNTS}.sqlite`);
  const pgUrl = STORES.includes('postgres') ? await preparePostgres() : '';
  const urls: Record<'sqlite' | 'postgres', string> = { sqlite: sqliteUrl, postgres: pgUrl };
  const keysByStore: Partial<Record<'sqlite' | 'postgres', Keys>> = {};
  for (const store of ['sqlite', 'postgres'] as const) if (STORES.includes(store)) keysByStore[store] = prepareData(store, urls[store]);

  const keyFiles: Record<string, Record<Scenario['keys'], string>> = {};
  const publishedPaths: Record<string, { file: string }> = {};
  for (const [store, keys] of Object.entries(keysByStore)) {
    const bench = join(DATA, `${store}-bench-keys.txt`);
    const collector = join(DATA, `${store}-collector-key.txt`);
    writeFileSync(bench, `${keys.bench.join('\n')}\n`);
    writeFileSync(collector, `${keys.collector}\n`);
    const accounts2000 = join(DATA, `${store}-accounts2000-keys.txt`);
    const one = join(DATA, `${store}-one-key.txt`);
    writeFileSync(accounts2000, `${keys.bench.slice(0, 2000).join('\n')}\n`);
    writeFileSync(one, `${keys.bench[0]!}\n`);
    // The searches and the workers' comparison use the bench keys only.
    const limited = join(DATA, `${store}-limited-keys.txt`);
    if (ONLY === '' || ONLY === 'ratios') writeFileSync(limited, `${prepareLimitedKeys(store, urls[store as 'sqlite' | 'postgres']).join('\n')}\n`);
    keyFiles[store] = { bench, collector, limited, accounts2000, one };
    const published = join(DATA, `${store}-published-paths.txt`);
    writeFileSync(published, `${(await publishedIds(store, urls[store as 'sqlite' | 'postgres'])).map((id) => `${V1}/catalogue/${id}`).join('\n')}\n`);
    publishedPaths[store] = { file: published };
  }

  const guideDirs = { sqlite: join(DATA, 'price-guide-sqlite'), postgres: join(DATA, 'price-guide-postgres') };
  const startSqlite = (exportDir = guideDirs.sqlite, env: Record<string, string> = {}) =>
    startShelfapi('sqlite', { DATABASE_URL: sqliteUrl, EXPORT_DIR: exportDir, ...env });
  const startPostgres = (exportDir = guideDirs.postgres, env: Record<string, string> = {}) =>
    startShelfapi('postgres+redis', { DATABASE_URL: pgUrl, REDIS_URL: REDIS_URL, REDIS_KEY_PREFIX: REDIS_PREFIX, EXPORT_DIR: exportDir, ...env });

  const rows: Row[] = [];
  const exports: Record<string, ExportResult> = {};
  const latency: Array<{ scenario: string; target: string; result: WrkResult }> = [];
  const searchRuns: SearchRun[] = [];
  const searchOnly = ONLY === 'search';
  const workersOnly = ONLY === 'workers';
  // quick and ab measure as ratios does (the baseline beside each scenario), over their own scenarios.
  const ratiosOnly = ONLY === 'ratios' || ONLY === 'quick' || ONLY === 'ab' || ONLY === 'tenants';
  const measured = ONLY === 'quick' ? QUICK_SCENARIOS : ONLY === 'tenants' ? TENANT_SCENARIOS : RATIO_SCENARIOS;

  let baseline: Baseline | null = null;
  if (!searchOnly) {
    baseline = await Baseline.start();
    const base = baseline.first;
    rows.push({ scenario: 'raw node:http, fixed body', target: 'baseline', result: base, ratio: 1, baselineRps: base.rps });
    // The floors: an item GET's response shape from raw node:http, then from one Fastify route, doing
    // nothing else. No server that sends these bytes on this machine can pass them.
    for (const [mode, scenario] of workersOnly || SHORT ? [] : ([
      ['headers', "raw node:http, an item GET's headers and body"],
      ['fastify', "one Fastify route, an item GET's headers and body"],
    ] as const)) {
      const floor = await startBaseline(mode);
      log(`floor (${mode}): ${DURATION} at ${CONNECTIONS} connections`);
      wrk(floor.base, ['/'], null, WARMUP);
      rows.push(baseline.beside(scenario, 'floor', () => wrk(floor.base, ['/'], null, DURATION)));
      floor.child.kill('SIGKILL');
    }
  }

  const startWorkers = (store: 'sqlite' | 'postgres') => (workers: number) =>
    store === 'sqlite'
      ? startShelfapi(`sqlite`, { DATABASE_URL: sqliteUrl, EXPORT_DIR: guideDirs.sqlite, WORKERS: String(workers) })
      : startShelfapi('postgres+redis', { DATABASE_URL: pgUrl, REDIS_URL: REDIS_URL, REDIS_KEY_PREFIX: REDIS_PREFIX, EXPORT_DIR: guideDirs.postgres, WORKERS: String(workers) });

  for (const [store, start] of [['sqlite', startSqlite], ['postgres', startPostgres]] as const) {
    const keys = keysByStore[store];
    if (keys === undefined) continue;
    if (workersOnly && baseline !== null) {
      rows.push(...(await runWorkers(startWorkers(store), keyFiles[store]!.bench, baseline)));
      continue;
    }
    if (!ratiosOnly) searchRuns.push(await runSearches(store, urls[store], start, keyFiles[store]!, keys.bench[0]!));
    if (searchOnly || baseline === null) continue;
    if (ONLY === 'ab') {
      rows.push(...(await runAb(store, (env) => start(guideDirs[store], env), guideDirs[store], keyFiles[store]!, baseline, publishedPaths[store]!)));
      continue;
    }
    let target = await start();
    // The price guide file is written in the background after start: not while the scenarios are measured.
    await guideWritten(guideDirs[store]);
    let first = true;
    for (const scenario of SCENARIOS) {
      if (ratiosOnly && !measured.has(scenario.name)) continue;
      const keysFile = keyFiles[store]![scenario.keys];
      log(`${target.name}: ${scenario.name}`);
      // A fresh server's first pass reads each key's principal once: quick's 5 s warm-up, twice for the first scenario.
      const paths = scenario.publishedOnly ? publishedPaths[store]! : scenario.paths;
      if (first && (ONLY === 'quick' || ONLY === 'tenants')) wrk(target.base, paths, keysFile, WARMUP, CONNECTIONS, scenario.hotShare);
      first = false;
      wrk(target.base, paths, keysFile, WARMUP, CONNECTIONS, scenario.hotShare);
      rows.push(baseline.beside(scenario.name, target.name, () => wrk(target.base, paths, keysFile, DURATION, CONNECTIONS, scenario.hotShare)));
    }
    if (ratiosOnly) {
      target.child.kill('SIGTERM');
      await new Promise((r) => target.child.once('exit', r));
      continue;
    }
    for (const scenario of LATENCY_SCENARIOS) {
      log(`${target.name}: ${scenario.name}, one connection`);
      latency.push({ scenario: scenario.name, target: target.name, result: wrk(target.base, scenario.paths, keyFiles[store]![scenario.keys], DURATION, 1) });
    }
    target.child.kill('SIGTERM');
    await new Promise((r) => target.child.once('exit', r));
    rows.push(...(await runWorkers(startWorkers(store), keyFiles[store]!.bench, baseline)));
    // A fresh process for each export, so that its peak RSS is the export's own.
    const cases = [
      { label: `${target.name}, from the store`, exportDir: 'off', query: '' },
      { label: `${target.name}, from the guide file`, exportDir: guideDirs[store], query: '' },
      { label: `${target.name}, filtered (${decodeURIComponent(EXPORT_FILTER)})`, exportDir: guideDirs[store], query: `?${EXPORT_FILTER}` },
    ];
    for (const exportCase of cases) {
      target = await start(exportCase.exportDir);
      log(`${exportCase.label}: export with requests served meanwhile`);
      try {
        exports[exportCase.label] = await runExport(target, keys.bench[0]!, exportCase.query);
      } catch (error) {
        log(`${exportCase.label}: the export failed: ${(error as Error).message}`);
      }
      target.child.kill('SIGTERM');
      await new Promise((r) => target.child.once('exit', r));
    }
  }

  baseline?.stop();
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGb: Math.round(totalmem() / 2 ** 30), node: process.version };
  const results = { date: new Date().toISOString(), items: ITEMS, duration: DURATION, connections: CONNECTIONS, machine, rows, latency, exports, searchRuns };
  const stamp = results.date.replace(/[:.]/g, '-');
  const ms = (us: number) => (us / 1000).toFixed(2);
  const table = [
    '| scenario | target | req/s | p50 ms | p99 ms | baseline req/s beside it | ratio to baseline | non-2xx |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${r.target} | ${Math.round(r.result.rps)} | ${ms(r.result.p50Us)} | ${ms(r.result.p99Us)} | ${Math.round(r.baselineRps)} | ${r.ratio.toFixed(2)} | ${r.result.non2xx} |`,
    ),
  ].join('\n');
  if (workersOnly || ratiosOnly) {
    writeFileSync(join(ROOT, 'bench', 'results', `${workersOnly ? 'workers' : ONLY}-${stamp}.json`), `${JSON.stringify(results, null, 2)}\n`);
    process.stdout.write(`\n${table}\n`);
    if (ONLY === 'quick') process.stdout.write(`\n${await floodRun(stamp)}\n`);
    return;
  }
  if (searchOnly) {
    writeFileSync(join(ROOT, 'bench', 'results', `search-${stamp}.json`), `${JSON.stringify(results, null, 2)}\n`);
    process.stdout.write(`\n${searchTables(searchRuns)}\n`);
    return;
  }
  writeFileSync(join(ROOT, 'bench', 'results', `${stamp}.json`), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(ROOT, 'bench', 'results', 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);

  const latencyTable = [
    '| scenario (one connection) | target | req/s | p50 ms | p99 ms | non-2xx |',
    '|---|---|---:|---:|---:|---:|',
    ...latency.map((r) => `| ${r.scenario} | ${r.target} | ${Math.round(r.result.rps)} | ${ms(r.result.p50Us)} | ${ms(r.result.p99Us)} | ${r.result.non2xx} |`),
  ].join('\n');
  const exportTable = [
    '| export | rows | seconds | rows/s | peak RSS MB | event-loop p99 ms | requests served meanwhile | their p99 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...Object.entries(exports).map(
      ([name, e]) => `| ${name} | ${e.rows} | ${e.seconds} | ${e.rowsPerSecond} | ${e.peakRssMb} | ${e.eventLoopP99Ms} | ${e.concurrentRequests} | ${e.concurrentP99Ms} |`,
    ),
  ].join('\n');
  const searchTable = searchTables(searchRuns);
  process.stdout.write(`\n${table}\n\n${latencyTable}\n\n${searchTable}\n\n${exportTable}\n`);
  const flood = await floodRun(stamp);
  process.stdout.write(`\n${flood}\n`);
  writeLatest(
    results.date,
    machine,
    `${table}\n\nLatency of single requests (one connection, nothing queued):\n\n${latencyTable}\n\n${searchTable}`,
    exportTable,
    flood,
  );
}

/**
 * The full run's tables, as markdown, in bench/results/latest.md (beside latest.json): docs/performance.md
 * holds one table of today's figures, copied from here by hand with the machine and the run named.
 */
function writeLatest(date: string, machine: Record<string, unknown>, table: string, exportTable: string, flood: string): void {
  const text = [
    `Run of ${date}: ${ITEMS.toLocaleString('en-US')} catalogue items, ${CONNECTIONS} connections, ${DURATION} per scenario, ` +
      `wrk on the same machine (${String(machine.cpus)} cores, ${String(machine.cpuModel)}, Node ${String(machine.node)}).`,
    '',
    table,
    '',
    'Export of every current price row (`/prices/export.csv`), a fresh server process, one client reading as fast as it can ' +
      'while another asks for a random item every 5 ms:',
    '',
    exportTable,
    '',
    flood,
    '',
  ].join('\n');
  writeFileSync(join(ROOT, 'bench', 'results', 'latest.md'), text);
}

/**
 * BENCH_ONLY=ab on one store: for each of BENCH_AB_RUNS rounds, each variant of BENCH_AB in turn on a fresh
 * server (its settings added to the server's environment), each of AB_SCENARIOS warmed up then measured beside
 * the baseline. The rows' target names the variant; compare a variant's ratios with the others' of the same round.
 */
async function runAb(
  store: 'sqlite' | 'postgres',
  start: (env: Record<string, string>) => Promise<Target>,
  guideDir: string,
  keyFiles: Record<Scenario['keys'], string>,
  baseline: Baseline,
  published: { file: string },
): Promise<Row[]> {
  const variants = AB_VARIANTS.map((text) => ({
    label: text === '' ? 'as it is' : text,
    env: Object.fromEntries(
      text
        .split(/\s+/)
        .filter((pair) => pair !== '')
        .map((pair) => {
          const at = pair.indexOf('=');
          if (at < 1) throw new Error(`BENCH_AB: expected NAME=VALUE, got ${JSON.stringify(pair)}`);
          return [pair.slice(0, at), pair.slice(at + 1)];
        }),
    ),
  }));
  if (variants.length < 2) throw new Error('BENCH_AB: give at least two settings, separated by ";" (e.g. "STATS_THREAD=on;STATS_THREAD=off")');
  const rows: Row[] = [];
  for (let round = 1; round <= AB_RUNS; round++) {
    for (const variant of variants) {
      const target = await start(variant.env);
      await guideWritten(guideDir);
      for (const scenario of SCENARIOS) {
        if (!AB_SCENARIOS.has(scenario.name)) continue;
        const keysFile = keyFiles[scenario.keys];
        const name = `${store}, ${variant.label}, round ${round}`;
        log(`${name}: ${scenario.name}`);
        const paths = scenario.publishedOnly ? published : scenario.paths;
        wrk(target.base, paths, keysFile, WARMUP);
        rows.push(baseline.beside(scenario.name, name, () => wrk(target.base, paths, keysFile, DURATION)));
      }
      log(`${store}, ${variant.label}, round ${round}: peak RSS ${peakRssMb(target.child.pid!)} MB`);
      target.child.kill('SIGTERM');
      await new Promise((r) => target.child.once('exit', r));
    }
  }
  return rows;
}

main()
  .finally(() => deleteRedisKeys(REDIS_URL, REDIS_PREFIX))
  .catch((error: unknown) => {
    process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
