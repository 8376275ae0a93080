/**
 * `node --import tsx bench/memory.ts`: does a server's memory stay bounded under sustained load (issue 10,
 * item 8)? Starts `shelfapi serve` over a 1M-item store, drives GET /catalogue/:id with wrk (random ids,
 * random keys over 200 accounts, 50 connections) MEMORY_RUNS times for MEMORY_DURATION each, back to back,
 * sampling the server's RSS (and how much of it is file-backed), heap and dropped log lines every second.
 * Passes when the peak RSS over all runs stays under MEMORY_LIMIT_MB (300).
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
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { cli, ensureWrk, log, ROOT, waitUntilUp } from './bench-support.js';

const DATA = join(ROOT, 'bench', '.data');
const ITEMS = Number(process.env.MEMORY_ITEMS ?? 1_000_000);
const RUNS = Number(process.env.MEMORY_RUNS ?? 3);
const DURATION_S = Number(process.env.MEMORY_DURATION ?? 60);
const LIMIT_MB = Number(process.env.MEMORY_LIMIT_MB ?? 300);
const STORE = process.env.MEMORY_STORE === 'postgres' ? 'postgres' : 'sqlite';
const CONNECTIONS = 50;
const ACCOUNTS = 200;
const PG_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: 1_000_000_000, perMinute: 1_000_000_000 } });

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

async function databaseUrl(): Promise<string> {
  if (process.env.MEMORY_DATABASE_URL) return process.env.MEMORY_DATABASE_URL;
  if (STORE === 'sqlite') return join(DATA, `bench-${ITEMS}.sqlite`);
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

/** A file of bench keys, one per line: given, or from the data `npm run bench` made (seeded if missing). */
function benchKeysFile(url: string): string {
  if (process.env.MEMORY_KEYS_FILE) return process.env.MEMORY_KEYS_FILE;
  mkdirSync(DATA, { recursive: true });
  // The same marker as bench/run.ts, so that either seeds the store once for both.
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

interface Sample {
  rssMb: number;
  fileMb: number;
  heapUsedMb: number;
  logLinesDropped: number;
}

function memoryOf(pid: number): { rssMb: number; fileMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rssMb: Math.round(kib('VmRSS') / 1024), fileMb: Math.round(kib('RssFile') / 1024) };
}

async function sample(pid: number, opsBase: string): Promise<Sample> {
  const text = await (await fetch(`${opsBase}/metrics`)).text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0);
  return {
    ...memoryOf(pid),
    heapUsedMb: mb(metric('nodejs_heap_size_used_bytes')),
    logLinesDropped: metric('shelfapi_log_lines_dropped_total'),
  };
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

interface RunResult {
  run: number;
  rps: number;
  non2xx: number;
  peakRssMb: number;
  peakFileMb: number;
  peakHeapUsedMb: number;
  endRssMb: number;
  logLinesDropped: number;
}

async function main(): Promise<void> {
  ensureWrk();
  log('building');
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = await databaseUrl();
  const keysFile = benchKeysFile(url);
  const redisPrefix = `memory-bench:${Date.now()}:`;
  const [port, opsPort] = [await freePort(), await freePort()];
  const server = spawn(process.execPath, [join(ROOT, 'bin', 'shelfapi.js'), 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: url,
      ...(STORE === 'postgres' ? { REDIS_URL, REDIS_KEY_PREFIX: redisPrefix } : {}),
      PORT: String(port),
      OPS_PORT: String(opsPort),
      LOG_LEVEL: 'info',
      PLAN_LIMITS,
    },
    // Standard output is a pipe nobody reads (see above); errors still show.
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const pid = server.pid;
  if (pid === undefined) throw new Error('the server did not start');
  const base = `http://127.0.0.1:${port}`;
  const opsBase = `http://127.0.0.1:${opsPort}`;
  await waitUntilUp(`${opsBase}/healthz`, server);
  // Answered by this server, not by another process that held the port first.
  await new Promise((resolve) => setTimeout(resolve, 500));
  if (server.exitCode !== null) throw new Error(`server exited with ${server.exitCode}`);
  server.stdout?.pause();
  log(`${STORE}: ${RUNS} runs of ${DURATION_S} s, ${CONNECTIONS} connections, GET /catalogue/:id over ${ITEMS.toLocaleString('en-US')} items`);

  const results: RunResult[] = [];
  try {
    for (let run = 1; run <= RUNS; run++) {
      const samples: Sample[] = [];
      const sampler = setInterval(() => {
        sample(pid, opsBase).then((s) => samples.push(s), () => {});
      }, 1000);
      const wrk = await runWrk(base, keysFile);
      clearInterval(sampler);
      const end = await sample(pid, opsBase);
      samples.push(end);
      const result: RunResult = {
        run,
        rps: Math.round(wrk.rps),
        non2xx: wrk.non2xx,
        peakRssMb: Math.max(...samples.map((s) => s.rssMb)),
        peakFileMb: Math.max(...samples.map((s) => s.fileMb)),
        peakHeapUsedMb: Math.max(...samples.map((s) => s.heapUsedMb)),
        endRssMb: end.rssMb,
        logLinesDropped: end.logLinesDropped,
      };
      results.push(result);
      log(
        `run ${run}: ${result.rps} req/s, RSS peak ${result.peakRssMb} MB (file-backed ${result.peakFileMb} MB), ` +
          `at the end ${result.endRssMb} MB, heap used peak ${result.peakHeapUsedMb} MB, log lines dropped ${result.logLinesDropped}`,
      );
    }
  } finally {
    // Let the log drain so that the server can finish writing it and exit.
    server.stdout?.resume();
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    if (STORE === 'postgres') await deleteRedisKeys(redisPrefix);
  }

  const peak = Math.max(...results.map((r) => r.peakRssMb));
  const pass = peak < LIMIT_MB;
  console.log(JSON.stringify({ store: STORE, items: ITEMS, durationS: DURATION_S, limitMb: LIMIT_MB, peakRssMb: peak, pass, runs: results }));
  log(`${pass ? 'PASS' : 'FAIL'}: peak RSS ${peak} MB ${pass ? '<' : '>='} ${LIMIT_MB} MB over ${RUNS} runs`);
  if (!pass) process.exitCode = 1;
}

async function deleteRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

await main();
