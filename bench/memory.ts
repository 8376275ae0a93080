/**
 * `node --import tsx bench/memory.ts`: does a server's memory stay bounded under sustained load (issue 10,
 * item 8)? Starts `shelfapi serve` over a 1M-item store, drives GET /catalogue/:id with wrk (random ids,
 * random keys over 200 accounts, 50 connections) MEMORY_RUNS times for MEMORY_DURATION each, back to back,
 * sampling the server's RSS (and how much of it is file-backed), heap and dropped log lines every second.
 * Passes when the peak RSS over all runs stays under MEMORY_LIMIT_MB (300).
 *
 * MEMORY_CONNECTIONS (50) sets wrk's connections (the issue-18 runs: 200), MEMORY_ITEMS the store's size.
 * MEMORY_WORKLOAD=aborted-exports sends MEMORY_EXPORTS (1,200) CSV exports a run instead, MEMORY_EXPORT_CONCURRENCY
 * (20) at a time, each dropped by the client after its first bytes. MEMORY_NODE_FLAGS passes node flags to the
 * server (`--heap-growing-percent=0`: V8's default heap growth, i.e. the server before it set its own). Each
 * run reports its peaks of RSS (anonymous and file-backed), heap used and total, external memory and array
 * buffers, and the RSS by part at its end (residentParts).
 *
 * The server logs at `info` (the production default) into a pipe that this script never reads: a stalled
 * log reader, the worst case for the log's backlog (src/observability/log-destination.ts).
 *
 * Data: the same store as `npm run bench` (bench/.data/bench-<items>.sqlite, or the database
 * shelfapi_bench_<items> with MEMORY_STORE=postgres, metering in Redis under a prefix of its own that is
 * deleted at the end), seeded on first use. MEMORY_DATABASE_URL and MEMORY_KEYS_FILE (one key per line) use
 * a store seeded elsewhere instead. Not part of `npm test`: a timed memory check would flake on a loaded
 * machine; run it by hand after changing anything on the request path.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, deleteRedisKeys, ensureDatabase, ensureWrk, log, ROOT, waitUntilUp } from './bench-support.js';

const DATA = join(ROOT, 'bench', '.data');
const ITEMS = Number(process.env.MEMORY_ITEMS ?? 1_000_000);
const RUNS = Number(process.env.MEMORY_RUNS ?? 3);
const DURATION_S = Number(process.env.MEMORY_DURATION ?? 60);
const LIMIT_MB = Number(process.env.MEMORY_LIMIT_MB ?? 300);
const STORE = process.env.MEMORY_STORE === 'postgres' ? 'postgres' : 'sqlite';
const CONNECTIONS = Number(process.env.MEMORY_CONNECTIONS ?? 50);
const ACCOUNTS = 200;
/** `items` (GET /catalogue/:id under wrk) or `aborted-exports` (CSV exports dropped after their first bytes). */
const WORKLOAD = process.env.MEMORY_WORKLOAD === 'aborted-exports' ? 'aborted-exports' : 'items';
/** Aborted exports per run, and how many at a time. */
const EXPORTS = Number(process.env.MEMORY_EXPORTS ?? 1200);
const EXPORT_CONCURRENCY = Number(process.env.MEMORY_EXPORT_CONCURRENCY ?? 20);
/** Extra node flags for the server (e.g. `--max-semi-space-size=1`), to compare settings by hand. */
const NODE_FLAGS = (process.env.MEMORY_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== '');
const PG_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: 1_000_000_000, perMinute: 1_000_000_000 } });

async function databaseUrl(): Promise<string> {
  if (process.env.MEMORY_DATABASE_URL) return process.env.MEMORY_DATABASE_URL;
  if (STORE === 'sqlite') return join(DATA, `bench-${ITEMS}.sqlite`);
  return ensureDatabase(PG_ADMIN_URL, `shelfapi_bench_${ITEMS}`);
}

/** A file of bench keys, one per line: given, or from the data `npm run bench` made (seeded if missing). */
function benchKeysFile(url: string): string {
  if (process.env.MEMORY_KEYS_FILE) return process.env.MEMORY_KEYS_FILE;
  mkdirSync(DATA, { recursive: true });
  // The same marker as bench/run-data.ts, so that either seeds the store once for both.
  const marker = join(DATA, `${STORE}-${ITEMS}.keys.json`);
  if (!existsSync(marker)) {
    log(`${STORE}: seeding ${ITEMS.toLocaleString('en-US')} items (once; kept for later runs)`);
    const seeded = JSON.parse(cli(['seed', '--demo', '--items', String(ITEMS), '--json'], { DATABASE_URL: url })) as { keys: Record<string, string> };
    const accounts = join(DATA, `${STORE}-accounts.json`);
    writeFileSync(
      accounts,
      JSON.stringify({
        accounts: Array.from({ length: ACCOUNTS }, (_, i) => ({ ref: `b${i}`, email: `bench${i}@shelfapi.dev`, plan: 'enthusiast' })),
        keys: Array.from({ length: ACCOUNTS }, (_, i) => ({
          ref: `b${i}`,
          account: `b${i}`,
          name: 'bench',
          scopes: ['catalogue:read', 'prices:read', 'export', 'collection:read', 'marketplace:read', 'transactions:read'],
        })),
      }),
    );
    const loaded = JSON.parse(cli(['load', accounts, '--json'], { DATABASE_URL: url })) as { keys: Record<string, string> };
    writeFileSync(marker, JSON.stringify({ demo: seeded.keys.demo, collector: seeded.keys.collector, bench: Object.values(loaded.keys) }));
  }
  const keys = JSON.parse(readFileSync(marker, 'utf8')) as { bench: string[] };
  const file = join(DATA, `${STORE}-bench-keys.txt`);
  writeFileSync(file, `${keys.bench.join('\n')}\n`);
  return file;
}

/**
 * The preload: every second the server appends its memory figures to MEMLOG_FILE (process.memoryUsage() and
 * /proc/self/status), so that heap, external memory and the anonymous and file-backed parts of RSS are read
 * from the same instant.
 */
const PRELOAD = `
import { appendFileSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
const mb = (b) => Math.round(b / 1048576);
setInterval(() => {
  const m = process.memoryUsage();
  const status = readFileSync('/proc/self/status', 'utf8');
  const kib = (k) => Number(new RegExp(k + ':\\\\s+(\\\\d+)').exec(status)?.[1] ?? 0);
  appendFileSync(process.env.MEMLOG_FILE, JSON.stringify({ t: Date.now(), rss: mb(m.rss), anon: mb(kib('RssAnon') * 1024),
    file: mb(kib('RssFile') * 1024), heapTotal: mb(m.heapTotal), heapUsed: mb(m.heapUsed), external: mb(m.external),
    arrayBuffers: mb(m.arrayBuffers),
    spaces: Object.fromEntries(getHeapSpaceStatistics().filter((s) => s.space_size > 0).map((s) => [s.space_name, mb(s.space_size)])) }) + '\\n');
}, 1000).unref();
`;

interface Sample {
  t: number;
  rss: number;
  anon: number;
  file: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** V8's heap by space (new_space, old_space, code_space, large_object_space, ...), committed MB. */
  spaces: Record<string, number>;
}

function samplesBetween(memlog: string, from: number, to: number): Sample[] {
  return readFileSync(memlog, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Sample)
    .filter((s) => s.t >= from && s.t <= to);
}

/**
 * Resident memory by part, from /proc/PID/smaps: files (the program, its libraries, mapped files), glibc's
 * main heap ([heap], grown with brk), glibc's other arenas (anonymous 64 MiB-aligned regions of up to
 * 64 MiB, one set per thread that allocates at once), thread stacks, and the other anonymous mappings (V8's
 * heap pages, large malloc blocks that glibc maps alone, the code space).
 */
function residentParts(pid: number): Record<string, number> {
  const ARENA = 64 * 1024 * 1024;
  const parts = { files: 0, mallocMainHeap: 0, mallocArenas: 0, stacks: 0, otherAnonymous: 0 };
  let arenaEnd = 0;
  for (const block of readFileSync(`/proc/${pid}/smaps`, 'utf8').split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+[ \t]*(.*)$/m.exec(block);
    if (header === null) continue;
    const [startAddress, endAddress] = [parseInt(header[1]!, 16), parseInt(header[2]!, 16)];
    const name = header[3]!.trim();
    const rssKib = Number(/^Rss:\s+(\d+)/m.exec(block)?.[1] ?? 0);
    // An arena starts on a 64 MiB boundary: what is mapped there up to the next boundary is the arena's.
    if (name === '' && startAddress % ARENA === 0 && endAddress - startAddress <= ARENA) arenaEnd = startAddress + ARENA;
    if (name.startsWith('/')) parts.files += rssKib;
    else if (name === '[heap]') parts.mallocMainHeap += rssKib;
    else if (name.startsWith('[stack')) parts.stacks += rssKib;
    else if (name === '' && endAddress <= arenaEnd) parts.mallocArenas += rssKib;
    else parts.otherAnonymous += rssKib;
  }
  return Object.fromEntries(Object.entries(parts).map(([part, kib]) => [part, Math.round(kib / 1024)]));
}

/** A port nothing listens on now, from the kernel: other servers may run on this machine. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function runWrk(base: string, keysFile: string): Promise<{ requests: number; rps: number; non2xx: number }> {
  return new Promise((resolve, reject) => {
    const wrk = spawn(
      'wrk',
      ['-t1', `-c${CONNECTIONS}`, `-d${DURATION_S}s`, '--timeout', '5s', '-s', join(ROOT, 'bench', 'wrk-random.lua'), base],
      { env: { ...process.env, PATHS: '/developer/v1/catalogue/{id}', IDS: String(ITEMS), KEYS_FILE: keysFile }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    wrk.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    wrk.on('error', reject);
    wrk.on('close', (code) => {
      if (code !== 0) return reject(new Error(`wrk exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { requests: number; rps: number; non2xx: number });
    });
  });
}

/** Exports by turns: the whole guide (from its file), a platform's rows (from the store), a search's. */
const EXPORT_QUERIES = ['', '?platform=PlayStation%202', '?platform=NES', '?search=super', '?search=mario&platform=NES'];

/** One export, dropped once its first bytes have come: what a client that gives up does. Resolves when the socket is closed. */
function abortedExport(base: string, query: string, key: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest(`${base}/developer/v1/prices/export.csv${query}`, { headers: { 'x-api-key': key }, agent: false }, (res) => {
      res.once('data', () => req.destroy());
      res.on('end', () => req.destroy());
    });
    req.on('error', () => {});
    req.on('close', () => resolve(0));
    req.end();
  });
}

/** MEMORY_EXPORTS aborted exports, MEMORY_EXPORT_CONCURRENCY at a time, with random keys. */
async function runAbortedExports(base: string, keys: string[]): Promise<{ requests: number; rps: number; non2xx: number }> {
  const started = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < EXPORTS) {
      const n = next++;
      await abortedExport(base, EXPORT_QUERIES[n % EXPORT_QUERIES.length]!, keys[n % keys.length]!);
    }
  };
  await Promise.all(Array.from({ length: EXPORT_CONCURRENCY }, lane));
  return { requests: EXPORTS, rps: EXPORTS / ((performance.now() - started) / 1000), non2xx: 0 };
}

interface RunResult {
  run: number;
  rps: number;
  non2xx: number;
  peak: Omit<Sample, 't' | 'spaces'>;
  end: Sample;
  parts: Record<string, number>;
  logLinesDropped: number;
}

function peakOf(samples: Sample[]): Omit<Sample, 't' | 'spaces'> {
  const peak = (field: keyof Omit<Sample, 't' | 'spaces'>) => Math.max(...samples.map((s) => s[field]));
  return {
    rss: peak('rss'),
    anon: peak('anon'),
    file: peak('file'),
    heapTotal: peak('heapTotal'),
    heapUsed: peak('heapUsed'),
    external: peak('external'),
    arrayBuffers: peak('arrayBuffers'),
  };
}

async function main(): Promise<void> {
  ensureWrk();
  log('building');
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = await databaseUrl();
  const keysFile = benchKeysFile(url);
  const keys = readFileSync(keysFile, 'utf8').split('\n').filter((line) => line !== '');
  const redisPrefix = `memory-bench:${Date.now()}:`;
  const [port, opsPort] = [await freePort(), await freePort()];
  const work = mkdtempSync(join(tmpdir(), 'shelfapi-memory-'));
  const preload = join(work, 'memlog.mjs');
  const memlog = join(work, 'memlog.jsonl');
  writeFileSync(preload, PRELOAD);
  writeFileSync(memlog, '');
  const server = spawn(process.execPath, [...NODE_FLAGS, '--import', preload, join(ROOT, 'bin', 'shelfapi.js'), 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: url,
      ...(STORE === 'postgres' ? { REDIS_URL, REDIS_KEY_PREFIX: redisPrefix } : {}),
      PORT: String(port),
      OPS_PORT: String(opsPort),
      LOG_LEVEL: 'info',
      PLAN_LIMITS,
      EXPORT_DIR: join(work, 'guide'),
      MEMLOG_FILE: memlog,
    },
    // Standard output is a pipe nobody reads (see above); errors still show.
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const pid = server.pid;
  if (pid === undefined) throw new Error('the server did not start');
  const base = `http://127.0.0.1:${port}`;
  const opsBase = `http://127.0.0.1:${opsPort}`;
  await waitUntilUp(`${opsBase}/healthz`, server);
  // Answered by this server, not by another process that held the port first; the search index and the
  // price guide file are written in the background after start, and are part of what a server holds.
  for (let ready = false; !ready; await new Promise((resolve) => setTimeout(resolve, 500))) {
    if (server.exitCode !== null) throw new Error(`server exited with ${server.exitCode}`);
    const metrics = await (await fetch(`${opsBase}/metrics`)).text();
    ready = /^shelfapi_search_index_ready 1$/m.test(metrics) && existsSync(join(work, 'guide')) && readdirSync(join(work, 'guide')).some((n) => /^prices-.*\.csv$/.test(n));
  }
  await new Promise((resolve) => setTimeout(resolve, 1500));
  server.stdout?.pause();
  const [idle] = samplesBetween(memlog, 0, Date.now()).slice(-1);
  log(`started: ${JSON.stringify(idle)} ${JSON.stringify(residentParts(pid))}`);
  log(
    `${STORE}: ${RUNS} runs of ` +
      (WORKLOAD === 'items'
        ? `${DURATION_S} s, ${CONNECTIONS} connections, GET /catalogue/:id over ${ITEMS.toLocaleString('en-US')} items`
        : `${EXPORTS} aborted exports, ${EXPORT_CONCURRENCY} at a time, over ${ITEMS.toLocaleString('en-US')} items`),
  );

  const results: RunResult[] = [];
  try {
    for (let run = 1; run <= RUNS; run++) {
      const from = Date.now();
      const load = WORKLOAD === 'items' ? await runWrk(base, keysFile) : await runAbortedExports(base, keys);
      // The last second's sample, after the load.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const samples = samplesBetween(memlog, from, Date.now());
      const metrics = await (await fetch(`${opsBase}/metrics`)).text();
      const result: RunResult = {
        run,
        rps: Math.round(load.rps),
        non2xx: load.non2xx,
        peak: peakOf(samples),
        end: samples.at(-1)!,
        parts: residentParts(pid),
        logLinesDropped: Number(/^shelfapi_log_lines_dropped_total (\S+)/m.exec(metrics)?.[1] ?? 0),
      };
      results.push(result);
      log(`run ${run}: ${result.rps} req/s, peak ${JSON.stringify(result.peak)}, at the end ${JSON.stringify(result.end)}, by part ${JSON.stringify(result.parts)}, log lines dropped ${result.logLinesDropped}`);
    }
  } finally {
    // Let the log drain so that the server can finish writing it and exit.
    server.stdout?.resume();
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    rmSync(work, { recursive: true, force: true });
    if (STORE === 'postgres') await deleteRedisKeys(REDIS_URL, redisPrefix);
  }

  const peak = Math.max(...results.map((r) => r.peak.rss));
  const pass = peak < LIMIT_MB;
  console.log(
    JSON.stringify({ store: STORE, items: ITEMS, workload: WORKLOAD, connections: CONNECTIONS, durationS: DURATION_S, nodeFlags: NODE_FLAGS, limitMb: LIMIT_MB, idle, peakRssMb: peak, pass, runs: results }),
  );
  log(`${pass ? 'PASS' : 'FAIL'}: peak RSS ${peak} MB ${pass ? '<' : '>='} ${LIMIT_MB} MB over ${RUNS} runs`);
  if (!pass) process.exitCode = 1;
}


await main();
