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
 * holds one table of today's figures, copied from a run by hand. BENCH_ONLY picks a shorter run, and
 * bench/run-config.ts holds it with every other setting; the run's parts are bench/run-*.ts.
 *
 * Last, the flood scenario (bench/flood.ts): one account at 200 connections beside another, on SQLite,
 * PostgreSQL metering, PostgreSQL + Redis and two servers on one database. BENCH_ONLY=flood runs only that
 * (BENCH_FLOOD_MODES picks modes, BENCH_FLOOD_DURATION its length, 10s by default).
 *
 * Data is generated once per size (items and accounts) and kept under bench/.data (SQLite) and in the database
 * shelfapi_bench_<items>_<accounts> (PostgreSQL; BENCH_DATABASE names another, so that a branch whose migrations
 * differ from main's does not migrate the database other runs share); delete them to start over.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { deleteRedisKeys, ensureWrk, log, ROOT } from './bench-support.js';
import { FLOOD_MODES, floodTable, runFloods, type FloodServer } from './flood.js';
import { runAb, runWorkers } from './run-ab.js';
import {
  BENCH_ACCOUNTS, CONNECTIONS, DATA, DURATION, FLOOD_DURATION, FLOOD_MODE_LIST, ITEMS, LATENCY_SCENARIOS, ONLY, PG_ADMIN_URL,
  QUICK_SCENARIOS, RATIO_SCENARIOS, REDIS_PREFIX, REDIS_URL, SCENARIOS, SHORT, STORES, TENANT_SCENARIOS, V1, WARMUP, type Scenario,
} from './run-config.js';
import { prepareData, prepareLimitedKeys, preparePostgres, publishedIds, type Keys } from './run-data.js';
import { EXPORT_FILTER, guideWritten, runExport, type ExportResult } from './run-exports.js';
import { runSearches, searchTables, type SearchRun } from './run-searches.js';
import { Baseline, startBaseline, startShelfapi, stopTarget, wrk, type Row, type WrkResult } from './run-servers.js';

/** The flood scenario on every mode in BENCH_FLOOD_MODES; its table. */
async function floodRun(stamp: string): Promise<string> {
  for (const mode of FLOOD_MODE_LIST) if (!FLOOD_MODES.includes(mode)) throw new Error(`BENCH_FLOOD_MODES: unknown mode ${mode} (modes: ${FLOOD_MODES.join('|')})`);
  const startServer = async (name: string, env: Record<string, string>): Promise<FloodServer> => {
    const target = await startShelfapi(name, env);
    return { base: target.base, stop: () => stopTarget(target) };
  };
  const run = await runFloods({ dataDir: DATA, pgAdminUrl: PG_ADMIN_URL, redisUrl: REDIS_URL, duration: FLOOD_DURATION, modes: FLOOD_MODE_LIST, startServer });
  writeFileSync(join(ROOT, 'bench', 'results', `flood-${stamp}.json`), `${JSON.stringify(run, null, 2)}\n`);
  return floodTable(run, FLOOD_DURATION);
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
      await stopTarget(target);
      continue;
    }
    for (const scenario of LATENCY_SCENARIOS) {
      log(`${target.name}: ${scenario.name}, one connection`);
      latency.push({ scenario: scenario.name, target: target.name, result: wrk(target.base, scenario.paths, keyFiles[store]![scenario.keys], DURATION, 1) });
    }
    await stopTarget(target);
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
      await stopTarget(target);
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

main()
  .finally(() => deleteRedisKeys(REDIS_URL, REDIS_PREFIX))
  .catch((error: unknown) => {
    process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
