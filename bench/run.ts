/**
 * `npm run bench`: shelfapi against the raw node:http baseline, on the same machine, in one run.
 *
 * Starts (a) bench/baseline-server.ts, (b) shelfapi on SQLite, (c) shelfapi on PostgreSQL + Redis, each over
 * the same generated catalogue (BENCH_ITEMS, default 1,000,000 items), drives each with wrk (Debian's package,
 * installed when missing) at 50 connections with random ids and random keys over many accounts, and prints
 * requests per second, p50 and p99 and the ratio to (a). Then streams the whole CSV export from each store
 * while other requests are served, and reports rows per second, the server's peak RSS and its event-loop
 * delay. Results go to bench/results/*.json and a table to docs/performance.md.
 *
 * Data is generated once per size and kept under bench/.data (SQLite) and in the database
 * shelfapi_bench_<items> (PostgreSQL); delete them to start over.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DATA = join(ROOT, 'bench', '.data');
const ITEMS = Number(process.env.BENCH_ITEMS ?? 1_000_000);
const DURATION = process.env.BENCH_DURATION ?? '10s';
const WARMUP = process.env.BENCH_WARMUP ?? '3s';
const CONNECTIONS = 50;
const BENCH_ACCOUNTS = 200;
const PG_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
// Limits far above what the machine can serve: the benchmark measures throughput, not refusals.
const PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: 1_000_000_000, perMinute: 1_000_000_000 } });

const log = (line: string) => process.stderr.write(`${line}\n`);

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

function ensureWrk(): void {
  if (spawnSync('wrk', ['--version']).error === undefined) return;
  log('wrk is missing: installing it from Debian packages (apt-get install wrk)');
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'wrk'], { stdio: 'inherit' });
}

function cli(args: string[], env: Record<string, string>): string {
  const result = spawnSync(process.execPath, [join(ROOT, 'bin', 'shelfapi.js'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (result.status !== 0) throw new Error(`shelfapi ${args.join(' ')} failed`);
  return result.stdout;
}

/** Seeds the store once (demo catalogue + collector) and adds bench accounts with a key each. */
function prepareData(label: string, databaseUrl: string): Keys {
  const marker = join(DATA, `${label}-${ITEMS}.keys.json`);
  if (existsSync(marker)) return JSON.parse(readFileSync(marker, 'utf8')) as Keys;
  const started = Date.now();
  log(`${label}: seeding ${ITEMS.toLocaleString('en-US')} items (once; kept for later runs)`);
  const seeded = JSON.parse(cli(['seed', '--demo', '--items', String(ITEMS), '--json'], { DATABASE_URL: databaseUrl })) as {
    keys: Record<string, string>;
  };
  const file = join(DATA, `${label}-accounts.json`);
  writeFileSync(
    file,
    JSON.stringify({
      accounts: Array.from({ length: BENCH_ACCOUNTS }, (_, i) => ({ ref: `b${i}`, email: `bench${i}@shelfapi.dev`, plan: 'enthusiast' })),
      keys: Array.from({ length: BENCH_ACCOUNTS }, (_, i) => ({
        ref: `b${i}`,
        account: `b${i}`,
        name: 'bench',
        scopes: ['catalogue:read', 'prices:read', 'export', 'collection:read', 'marketplace:read', 'transactions:read'],
      })),
    }),
  );
  const loaded = JSON.parse(cli(['load', file, '--json'], { DATABASE_URL: databaseUrl })) as { keys: Record<string, string> };
  const keys: Keys = { demo: seeded.keys.demo!, collector: seeded.keys.collector!, bench: Object.values(loaded.keys) };
  writeFileSync(marker, JSON.stringify(keys));
  log(`${label}: data ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return keys;
}

async function preparePostgres(): Promise<string> {
  const name = `shelfapi_bench_${ITEMS}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  const exists = await admin.query('select 1 from pg_database where datname = $1', [name]);
  if (exists.rowCount === 0) await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

let nextPort = 18100;

async function waitUntilUp(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`${url} did not come up`);
}

async function startShelfapi(name: string, env: Record<string, string>): Promise<Target> {
  const port = nextPort++;
  const opsPort = nextPort++;
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'shelfapi.js'), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), OPS_PORT: String(opsPort), LOG_LEVEL: 'warn', PLAN_LIMITS },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitUntilUp(`http://127.0.0.1:${opsPort}/healthz`, child);
  return { name, base: `http://127.0.0.1:${port}`, opsBase: `http://127.0.0.1:${opsPort}`, child };
}

async function startBaseline(): Promise<Target> {
  const port = nextPort++;
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'baseline-server.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitUntilUp(`http://127.0.0.1:${port}/`, child);
  return { name: 'baseline', base: `http://127.0.0.1:${port}`, opsBase: null, child };
}

function wrk(base: string, paths: string[], keysFile: string | null, duration: string, connections = CONNECTIONS): WrkResult {
  const out = execFileSync(
    'wrk',
    ['-t1', `-c${connections}`, `-d${duration}`, '--timeout', '5s', '-s', join(ROOT, 'bench', 'wrk-random.lua'), base],
    {
      env: { ...process.env, PATHS: paths.join('|'), IDS: String(ITEMS), ...(keysFile ? { KEYS_FILE: keysFile } : {}) },
      encoding: 'utf8',
    },
  );
  const line = out.trim().split('\n').at(-1)!;
  return JSON.parse(line) as WrkResult;
}

interface Scenario {
  name: string;
  paths: string[];
  keys: 'bench' | 'collector';
}

const V1 = '/developer/v1';
const SEARCHES = ['super', 'ii', 'sonic', 'zelda', 'dragon%20quest', 'super%20mario', 'pok%C3%A9mon', 'ex', '64', 'chrono%20crystal'];
const PLATFORMS = ['NES', 'Nintendo%2064', 'PlayStation%202', 'Sega%20Genesis', 'Game%20Boy', 'Xbox%20360', 'Wii', 'Dreamcast'];

const SCENARIOS: Scenario[] = [
  { name: 'GET /catalogue/:id', paths: [`${V1}/catalogue/{id}`], keys: 'bench' },
  { name: 'GET /prices/:id', paths: [`${V1}/prices/{id}`], keys: 'bench' },
  { name: 'GET /catalogue?search=', paths: SEARCHES.map((s) => `${V1}/catalogue?search=${s}`), keys: 'bench' },
  { name: 'GET /prices?platform=', paths: PLATFORMS.map((p) => `${V1}/prices?platform=${p}`), keys: 'bench' },
  { name: 'GET /collection/value', paths: [`${V1}/collection/value`], keys: 'collector' },
  { name: 'GET /me', paths: [`${V1}/me`], keys: 'bench' },
];

/** Latency targets are per request: measured with one connection, so that no queueing is counted. */
const LATENCY_SCENARIOS: Scenario[] = [
  { name: 'GET /catalogue?search= (mix)', paths: SEARCHES.map((s) => `${V1}/catalogue?search=${s}`), keys: 'bench' },
  { name: 'GET /collection/value (10,000 items)', paths: [`${V1}/collection/value`], keys: 'collector' },
  { name: 'GET /catalogue/:id', paths: [`${V1}/catalogue/{id}`], keys: 'bench' },
];

function readPeakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
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

/** Streams the whole export while a client keeps asking for single items; measures both sides. */
async function runExport(target: Target, key: string): Promise<ExportResult> {
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
  const rows = await new Promise<number>((resolve, reject) => {
    const req = request(`${target.base}${V1}/prices/export.csv`, { headers: { 'x-api-key': key } }, (res) => {
      let lines = 0;
      res.on('data', (chunk: Buffer) => {
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      });
      res.on('end', () => resolve(lines - 1));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  const seconds = (performance.now() - started) / 1000;
  done = true;
  await sideLoad;
  latencies.sort((a, b) => a - b);
  return {
    rows,
    seconds: Math.round(seconds * 100) / 100,
    rowsPerSecond: Math.round(rows / seconds),
    peakRssMb: readPeakRssMb(target.child.pid!),
    eventLoopP99Ms: Math.round((await eventLoopP99Ms(target.opsBase!)) * 10) / 10,
    concurrentRequests: latencies.length,
    concurrentP99Ms: Math.round((latencies[Math.floor(latencies.length * 0.99)] ?? 0) * 10) / 10,
  };
}

async function main(): Promise<void> {
  mkdirSync(DATA, { recursive: true });
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  ensureWrk();
  log('building');
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });

  const sqliteUrl = join(DATA, `bench-${ITEMS}.sqlite`);
  const pgUrl = await preparePostgres();
  const keysByStore = { sqlite: prepareData('sqlite', sqliteUrl), postgres: prepareData('postgres', pgUrl) };

  const keyFiles: Record<string, Record<'bench' | 'collector', string>> = {};
  for (const [store, keys] of Object.entries(keysByStore)) {
    const bench = join(DATA, `${store}-bench-keys.txt`);
    const collector = join(DATA, `${store}-collector-key.txt`);
    writeFileSync(bench, `${keys.bench.join('\n')}\n`);
    writeFileSync(collector, `${keys.collector}\n`);
    keyFiles[store] = { bench, collector };
  }

  const redisPrefix = `bench:${Date.now()}:`;
  const startSqlite = () => startShelfapi('sqlite', { DATABASE_URL: sqliteUrl });
  const startPostgres = () => startShelfapi('postgres+redis', { DATABASE_URL: pgUrl, REDIS_URL: REDIS_URL, REDIS_KEY_PREFIX: redisPrefix });

  const baseline = await startBaseline();
  log(`baseline: ${DURATION} at ${CONNECTIONS} connections`);
  wrk(baseline.base, ['/'], null, WARMUP);
  const base = wrk(baseline.base, ['/'], null, DURATION);
  baseline.child.kill('SIGKILL');

  const rows: Array<{ scenario: string; target: string; result: WrkResult; ratio: number }> = [];
  rows.push({ scenario: 'raw node:http, fixed body', target: 'baseline', result: base, ratio: 1 });
  const exports: Record<string, ExportResult> = {};
  const latency: Array<{ scenario: string; target: string; result: WrkResult }> = [];

  for (const [store, start] of [['sqlite', startSqlite], ['postgres', startPostgres]] as const) {
    let target = await start();
    for (const scenario of SCENARIOS) {
      const keysFile = keyFiles[store]![scenario.keys];
      log(`${target.name}: ${scenario.name}`);
      wrk(target.base, scenario.paths, keysFile, WARMUP);
      const result = wrk(target.base, scenario.paths, keysFile, DURATION);
      rows.push({ scenario: scenario.name, target: target.name, result, ratio: Math.round((result.rps / base.rps) * 1000) / 1000 });
    }
    for (const scenario of LATENCY_SCENARIOS) {
      log(`${target.name}: ${scenario.name}, one connection`);
      latency.push({ scenario: scenario.name, target: target.name, result: wrk(target.base, scenario.paths, keyFiles[store]![scenario.keys], DURATION, 1) });
    }
    // A fresh process for the export, so that its peak RSS is the export's own.
    target.child.kill('SIGTERM');
    await new Promise((r) => target.child.once('exit', r));
    target = await start();
    log(`${target.name}: export of every price row, with requests served meanwhile`);
    try {
      exports[target.name] = await runExport(target, keysByStore[store].bench[0]!);
    } catch (error) {
      log(`${target.name}: the export failed: ${(error as Error).message}`);
    }
    target.child.kill('SIGTERM');
    await new Promise((r) => target.child.once('exit', r));
  }

  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGb: Math.round(totalmem() / 2 ** 30), node: process.version };
  const results = { date: new Date().toISOString(), items: ITEMS, duration: DURATION, connections: CONNECTIONS, machine, rows, latency, exports };
  const stamp = results.date.replace(/[:.]/g, '-');
  writeFileSync(join(ROOT, 'bench', 'results', `${stamp}.json`), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(ROOT, 'bench', 'results', 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);

  const ms = (us: number) => (us / 1000).toFixed(2);
  const table = [
    '| scenario | target | req/s | p50 ms | p99 ms | ratio to baseline | non-2xx |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.scenario} | ${r.target} | ${Math.round(r.result.rps)} | ${ms(r.result.p50Us)} | ${ms(r.result.p99Us)} | ${r.ratio.toFixed(2)} | ${r.result.non2xx} |`),
  ].join('\n');
  const latencyTable = [
    '| scenario (one connection) | target | req/s | p50 ms | p99 ms | non-2xx |',
    '|---|---|---:|---:|---:|---:|',
    ...latency.map((r) => `| ${r.scenario} | ${r.target} | ${Math.round(r.result.rps)} | ${ms(r.result.p50Us)} | ${ms(r.result.p99Us)} | ${r.result.non2xx} |`),
  ].join('\n');
  const exportTable = [
    '| store | rows | seconds | rows/s | peak RSS MB | event-loop p99 ms | requests served meanwhile | their p99 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...Object.entries(exports).map(
      ([name, e]) => `| ${name} | ${e.rows} | ${e.seconds} | ${e.rowsPerSecond} | ${e.peakRssMb} | ${e.eventLoopP99Ms} | ${e.concurrentRequests} | ${e.concurrentP99Ms} |`,
    ),
  ].join('\n');
  process.stdout.write(`\n${table}\n\n${latencyTable}\n\n${exportTable}\n`);
  updatePerformanceDoc(results.date, machine, `${table}\n\nLatency of single requests (one connection, nothing queued):\n\n${latencyTable}`, exportTable);
}

const BEGIN = '<!-- bench:begin -->';
const END = '<!-- bench:end -->';

function updatePerformanceDoc(date: string, machine: Record<string, unknown>, table: string, exportTable: string): void {
  const path = join(ROOT, 'docs', 'performance.md');
  mkdirSync(join(ROOT, 'docs'), { recursive: true });
  const block = [
    BEGIN,
    `Run of ${date}: ${ITEMS.toLocaleString('en-US')} catalogue items, ${CONNECTIONS} connections, ${DURATION} per scenario, ` +
      `wrk on the same machine (${String(machine.cpus)} cores, ${String(machine.cpuModel)}, Node ${String(machine.node)}).`,
    '',
    table,
    '',
    'Export of every current price row (`/prices/export.csv`), a fresh server process, one client reading as fast as it can ' +
      'while another asks for a random item every 5 ms:',
    '',
    exportTable,
    END,
  ].join('\n');
  const current = existsSync(path) ? readFileSync(path, 'utf8') : `# Performance\n\n${BEGIN}\n${END}\n`;
  const start = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  const next = start >= 0 && end > start ? current.slice(0, start) + block + current.slice(end + END.length) : `${current}\n${block}\n`;
  writeFileSync(path, next);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
