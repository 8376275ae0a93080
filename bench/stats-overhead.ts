/**
 * What recording the owners' per-key statistics costs the hot path: GET /developer/v1/catalogue/:id on a
 * small seeded SQLite store (BENCH_ITEMS, default 5,000 items), served with and without a UsageStats, driven
 * by wrk at 50 connections with random ids; the two are run in turns (off, on, on, off, off, on, ...) so
 * that the load of a shared machine, or a store that grows, falls on both alike. Prints each run and the
 * median of the pairs' ratios, of requests per second and of the server's CPU time per request (user +
 * system, from /proc): on a machine shared with other work, throughput swings with the neighbours' load,
 * CPU time per request less.
 *
 *   node --import tsx bench/stats-overhead.ts            (RUNS=3, BENCH_DURATION=10s, BENCH_WARMUP=3s, BENCH_PORT=18300)
 *
 *   node --import tsx bench/stats-overhead.ts --log      the request log's share (issue 19 item 3: at most 5%): the
 *   item GET with every statistic against the same without the request log's lines (their building, merging
 *   and writing), over BENCH_KEYS accounts with a key each (default 1,001: each flush writes a line per
 *   request), RUNS=3 pairs in turns, BENCH_WARMUP=20s so that the log's sweeps (15 s after a write) run in the
 *   measured part, BENCH_DURATION=20s
 *
 *   node --import tsx bench/stats-overhead.ts --log --together   the same, but each pair's two servers run at
 *   once, each driven by its own wrk at 50 connections: on a machine whose speed swings from one minute to the
 *   next (±25% here), both see the same swings, and the pair's ratio is what the log costs when the two share it
 *
 *   Each run also prints the server's CPU a request by thread (the request thread, and of it the system's
 *   share; V8's helper threads; the rest), and BENCH_CPU_PROF=DIR writes each server's profiles in DIR.
 *
 *   node --import tsx bench/stats-overhead.ts --micro --log   the request log's own cost in CPU time per request,
 *   without the server (micro() says how)
 *
 *   node --import tsx bench/stats-overhead.ts --micro    the added work alone, in CPU time per request: what
 *   the onResponse hook adds (usageRecord + record) and the flushes, over MICRO_REQUESTS records shaped like
 *   the item GETs above (one in ten a 404 rejection), flushed every 2,000 (half a second at 4,000 req/s)
 *
 * The full comparison against the raw node:http baseline is `npm run bench`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedDemo } from '../src/services/demo-seed.service.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { FastifyRequest } from 'fastify';
import { buildApp } from '../src/http/app.js';
import { usageRecord } from '../src/http/api/usage-record.js';
import { DatabaseUsageStats } from '../src/usage-stats/database-usage-stats.js';
import type { StatsBatch } from '../src/usage-stats/usage-stats.js';
import { cli } from './bench-support.js';
import { SqliteMeter } from '../src/metering/sqlite-meter.js';
import { migrateToLatest, openStore } from '../src/store/database.js';
import { startCheckpointThread } from '../src/store/sqlite-checkpoints.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ITEMS = Number(process.env.BENCH_ITEMS ?? 5000);
const LOG_MODE = process.argv.includes('--log');
/** Both servers of a pair at once, each driven by its own wrk (see the file comment). */
const TOGETHER = process.argv.includes('--together');
const execFileAsync = promisify(execFile);
const RUNS = Number(process.env.RUNS ?? 3);
const DURATION = process.env.BENCH_DURATION ?? (LOG_MODE ? '20s' : '10s');
const WARMUP = process.env.BENCH_WARMUP ?? (LOG_MODE ? '20s' : '3s');
const KEYS = Number(process.env.BENCH_KEYS ?? (LOG_MODE ? 1001 : 0));
const PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: 1_000_000_000, perMinute: 1_000_000_000 } });
const log = (line: string) => process.stderr.write(`${line}\n`);

/** Every statistic but the request log's lines. */
class WithoutRequestLog extends DatabaseUsageStats {
  protected override requestLogOf(): StatsBatch['log'] {
    return [];
  }
}

type Mode = 'off' | 'on' | 'log-off';

/** The server half: `--serve on|off|log-off`, over DATABASE_URL, on PORT. */
async function serve(mode: string): Promise<void> {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn', PLAN_LIMITS } as Record<string, string>);
  const store = openStore(config.database);
  if (store.sqlite === null) throw new Error('this comparison runs on SQLite');
  const stats = mode === 'on' ? new DatabaseUsageStats(store) : mode === 'log-off' ? new WithoutRequestLog(store) : undefined;
  const app = await buildApp({ config, store, meter: new SqliteMeter(store.sqlite), clock: systemClock, ...(stats ? { stats } : {}) });
  // As `serve` does on SQLite (src/server.ts): the WAL is checkpointed from a thread.
  const checkpoints = config.database.dialect === 'sqlite' ? startCheckpointThread(store.sqlite, config.database.path, (err) => process.stderr.write(`checkpoint thread: ${String(err)}\n`)) : null;
  await app.listen({ host: '127.0.0.1', port: config.port });
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => {
    void (async () => {
      await app.close();
      await stats?.close();
      await checkpoints?.close();
      await store.close();
      process.exit(0);
    })();
  });
}

function startServer(mode: Mode, databaseUrl: string, port: number): Promise<ChildProcess> {
  // BENCH_CPU_PROF=DIR: each server writes its threads' profiles (tsx's loader thread has one too) in DIR/MODE-PORT.
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROF, `${mode}-${port}`)}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', fileURLToPath(import.meta.url), '--serve', mode], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/**
 * A /proc stat file (a process's, or one of its threads' under task/): its command name and the CPU time
 * used, user and system, in ms (100 ticks a second).
 */
function cpuOf(statPath: string): { name: string; userMs: number; systemMs: number } {
  const stat = readFileSync(statPath, 'utf8');
  // The name may hold spaces and parentheses: it ends at the last ") ". After it, state is field 3, so utime
  // (14) and stime (15) are at 11 and 12.
  const end = stat.lastIndexOf(') ');
  const fields = stat.slice(end + 2).split(' ');
  return { name: stat.slice(stat.indexOf('(') + 1, end), userMs: Number(fields[11]) * 10, systemMs: Number(fields[12]) * 10 };
}

/** CPU time the process has used, user + system, in ms. */
function cpuMs(pid: number): number {
  const { userMs, systemMs } = cpuOf(`/proc/${pid}/stat`);
  return userMs + systemMs;
}

/**
 * CPU time by thread kind, in ms: the request thread (the process's first), V8's helper threads (garbage
 * collection, compilation) and the rest (libuv's pool, and so on), from /proc/<pid>/task. A cost that the
 * request thread's profile does not show can be on the others.
 */
function cpuByThread(pid: number): { main: number; mainSystem: number; v8: number; other: number } {
  const out = { main: 0, mainSystem: 0, v8: 0, other: 0 };
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let thread: ReturnType<typeof cpuOf>;
    try {
      thread = cpuOf(`/proc/${pid}/task/${tid}/stat`);
    } catch {
      continue; // a thread that ended meanwhile
    }
    const ms = thread.userMs + thread.systemMs;
    if (tid === String(pid)) {
      out.main += ms;
      out.mainSystem += thread.systemMs;
    } else if (thread.name.startsWith('V8') || thread.name.startsWith('node')) out.v8 += ms;
    else out.other += ms;
  }
  return out;
}

async function wrk(base: string, keysFile: string, duration: string): Promise<{ rps: number; requests: number }> {
  const { stdout } = await execFileAsync('wrk', ['-t1', '-c50', `-d${duration}`, '--timeout', '5s', '-s', join(ROOT, 'bench', 'wrk-random.lua'), base], {
    env: { ...process.env, PATHS: '/developer/v1/catalogue/{id}', IDS: String(ITEMS), KEYS_FILE: keysFile },
    encoding: 'utf8',
  });
  // Some random ids are drafts or archived items: a 404 (counted too), as in `npm run bench`.
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { rps: number; requests: number; socketErrors: number };
  if (result.socketErrors > 0) throw new Error(`${result.socketErrors} socket errors`);
  return result;
}

/** BENCH_KEYS accounts with a key each, loaded with `shelfapi load` (as `npm run bench` does); their keys. */
function loadAccounts(dir: string, databaseUrl: string): string[] {
  if (KEYS === 0) return [];
  const file = join(dir, 'accounts.json');
  writeFileSync(
    file,
    JSON.stringify({
      accounts: Array.from({ length: KEYS }, (_, i) => ({ ref: `b${i}`, email: `bench${i}@shelfapi.dev`, plan: 'enthusiast' })),
      keys: Array.from({ length: KEYS }, (_, i) => ({ ref: `b${i}`, account: `b${i}`, name: 'bench', scopes: ['catalogue:read'] })),
    }),
  );
  return Object.values((JSON.parse(cli(['load', file, '--json'], { DATABASE_URL: databaseUrl })) as { keys: Record<string, string> }).keys);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function compare(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-stats-bench-'));
  try {
    const databaseUrl = join(dir, 'bench.sqlite');
    const store = openStore({ dialect: 'sqlite', path: databaseUrl });
    await migrateToLatest(store);
    const seeded = await seedDemo(store, { items: ITEMS, keyPrefix: 'shelf', now: Date.now() });
    await store.close();
    const keysFile = join(dir, 'keys.txt');
    writeFileSync(keysFile, `${[seeded.keys.demo, seeded.keys.collector, ...loadAccounts(dir, databaseUrl)].join('\n')}\n`);
    // `off` is the baseline the ratio divides by: no statistics, or (--log) every statistic but the request log.
    const modes = LOG_MODE ? (['log-off', 'on'] as const) : (['off', 'on'] as const);
    const results: Record<Mode, number[]> = { off: [], 'log-off': [], on: [] };
    const cpuUs: Record<Mode, number[]> = { off: [], 'log-off': [], on: [] };
    // BENCH_PORT: where the servers listen (one port per run, counting up), as `npm run bench` takes it.
    let port = Number(process.env.BENCH_PORT ?? 18300);
    interface Running {
      mode: Mode;
      child: ChildProcess;
      base: string;
      runUrl: string;
    }
    /** A server of `mode` on the next port, on its own copy of the seeded store: a log-on run's chunks (a 40 s server never runs the 1-minute sweep) must not weigh on the runs after it. */
    const start = async (mode: Mode): Promise<Running> => {
      const at = port++;
      const runUrl = join(dir, `run-${at}.sqlite`);
      for (const suffix of ['', '-wal']) if (existsSync(databaseUrl + suffix)) copyFileSync(databaseUrl + suffix, runUrl + suffix);
      return { mode, child: await startServer(mode, runUrl, at), base: `http://127.0.0.1:${at}`, runUrl };
    };
    const stop = async ({ child, runUrl }: Running) => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      for (const suffix of ['', '-wal', '-shm']) rmSync(runUrl + suffix, { force: true });
    };
    /** Warms up the servers, then measures them: with several, each with its own wrk at once, both phases. */
    const measure = async (run: number, servers: Running[]) => {
      try {
        await Promise.all(servers.map((s) => wrk(s.base, keysFile, WARMUP)));
        const before = servers.map((s) => cpuMs(s.child.pid!));
        const threadsBefore = servers.map((s) => cpuByThread(s.child.pid!));
        const outs = await Promise.all(servers.map((s) => wrk(s.base, keysFile, DURATION)));
        servers.forEach((s, i) => {
          const { rps, requests } = outs[i]!;
          const perRequest = ((cpuMs(s.child.pid!) - before[i]!) * 1000) / requests;
          const threads = cpuByThread(s.child.pid!);
          const us = (k: 'main' | 'mainSystem' | 'v8' | 'other') => (((threads[k] - threadsBefore[i]![k]) * 1000) / requests).toFixed(1);
          results[s.mode].push(rps);
          cpuUs[s.mode].push(perRequest);
          log(`run ${run}, statistics ${s.mode}${servers.length > 1 ? ' (together)' : ''}: ${Math.round(rps)} req/s, ${perRequest.toFixed(1)} µs CPU per request (request thread ${us('main')}, of which system ${us('mainSystem')}, V8's threads ${us('v8')}, others ${us('other')})`);
        });
      } finally {
        await Promise.all(servers.map(stop));
      }
    };
    for (let run = 1; run <= RUNS; run++) {
      // Together: both at once, each with its own wrk, so whatever the machine does meanwhile falls on both alike.
      if (TOGETHER) {
        const started = await Promise.allSettled(modes.map(start));
        const servers = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        const failed = started.find((r) => r.status === 'rejected');
        if (failed !== undefined) {
          await Promise.all(servers.map(stop));
          throw failed.reason;
        }
        await measure(run, servers);
      }
      // In turns, the order reversed every other pair (ABBA): a machine that slows over the runs
      // weighs on both alike; each pair gives a ratio, and the ratios' median is the answer.
      else for (const mode of run % 2 === 1 ? modes : [...modes].reverse()) await measure(run, [await start(mode)]);
    }
    const baseline = modes[0];
    const round = (n: number) => Math.round(n * 10) / 10;
    const pairRatios = (values: Record<Mode, number[]>) => values.on.map((on, i) => on / values[baseline][i]!);
    const ratio = (values: Record<Mode, number[]>) => Math.round(median(pairRatios(values)) * 1000) / 1000;
    process.stdout.write(
      `${JSON.stringify({
        items: ITEMS,
        keys: KEYS + 2,
        runs: RUNS,
        duration: DURATION,
        baseline,
        rps: { [baseline]: results[baseline].map(Math.round), on: results.on.map(Math.round), ratio: ratio(results) },
        cpuUsPerRequest: { [baseline]: cpuUs[baseline].map(round), on: cpuUs.on.map(round), ratio: ratio(cpuUs) },
      })}\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The statistics' own work, timed with process.cpuUsage (this process's CPU, whatever its neighbours do):
 * the onResponse hook and the flushes, per request. Plain: two keys of one account, a flush every 2,000
 * records. With --log (`--micro --log`): 1,001 keys, a flush every 8,000 records (a busy server's
 * once-a-second write of the counts and the log), on a clock that moves a second every 8,000 records so
 * that the request log's sweeps run as on a server (15 s, 1 min after a write), 600,000 records; every
 * statistic against the same without the request log's lines, RUNS times in turns.
 */
async function micro(): Promise<void> {
  const n = Number(process.env.MICRO_REQUESTS ?? (LOG_MODE ? 600_000 : 200_000));
  const keys = LOG_MODE ? KEYS : 2;
  const flushEvery = LOG_MODE ? 8_000 : 2_000;
  const one = async (mode: 'on' | 'log-off'): Promise<{ hookUs: number; flushUs: number }> => {
    const dir = mkdtempSync(join(tmpdir(), 'shelfapi-stats-micro-'));
    const store = openStore({ dialect: 'sqlite', path: join(dir, 'micro.sqlite') });
    const realNow = Date.now;
    const start = realNow();
    try {
      await migrateToLatest(store);
      const stats = mode === 'on' ? new DatabaseUsageStats(store) : new WithoutRequestLog(store);
      // What the pipeline leaves on a request, for usageRecord; one in ten a 404.
      const request = (i: number, status: number) =>
        ({
          principal: { keyId: 1 + (i % keys), accountId: 1 + (i % keys) },
          refusedKey: null,
          failure: status === 404 ? { code: 'not_found', message: `No published catalogue item has masterItemId ${i}.` } : null,
          counted: { period: '2026-11', day: '2026-11-24' },
          url: `/developer/v1/catalogue/${i}`,
          method: 'GET',
          id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          ip: '127.0.0.1',
        }) as unknown as FastifyRequest;
      let hookUs = 0;
      let flushUs = 0;
      for (let i = 0; i < n; i++) {
        if (LOG_MODE) Date.now = () => start + Math.floor(i / 8);
        const status = i % 10 === 0 ? 404 : 200;
        const req = request(i, status);
        const before = process.cpuUsage();
        const record = usageRecord(req, status, start + Math.floor(i / 8), 1.25, '/catalogue/:id');
        if (record !== null) stats.record(record);
        const used = process.cpuUsage(before);
        hookUs += used.user + used.system;
        if (i % flushEvery === flushEvery - 1) {
          const flushStart = process.cpuUsage();
          await stats.flush();
          const flushed = process.cpuUsage(flushStart);
          flushUs += flushed.user + flushed.system;
        }
      }
      await stats.close();
      return { hookUs: hookUs / n, flushUs: flushUs / n };
    } finally {
      Date.now = realNow;
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const round = (x: number) => Math.round(x * 100) / 100;
  if (!LOG_MODE) {
    const { hookUs, flushUs } = await one('on');
    process.stdout.write(`${JSON.stringify({ requests: n, hookUsPerRequest: round(hookUs), flushUsPerRequest: round(flushUs), totalUsPerRequest: round(hookUs + flushUs) })}\n`);
    return;
  }
  const totals: Record<'on' | 'log-off', number[]> = { on: [], 'log-off': [] };
  for (let run = 1; run <= RUNS; run++) {
    for (const mode of run % 2 === 1 ? (['log-off', 'on'] as const) : (['on', 'log-off'] as const)) {
      const { hookUs, flushUs } = await one(mode);
      totals[mode].push(round(hookUs + flushUs));
      log(`run ${run}, ${mode}: hook ${hookUs.toFixed(2)} µs, flushes ${flushUs.toFixed(2)} µs a request`);
    }
  }
  const logUs = round(median(totals.on.map((on, i) => on - totals['log-off'][i]!)));
  process.stdout.write(`${JSON.stringify({ requests: n, keys, usPerRequest: totals, requestLogUsPerRequest: logUs })}\n`);
}

const serveAt = process.argv.indexOf('--serve');
if (serveAt >= 0) await serve(process.argv[serveAt + 1] ?? 'on');
else if (process.argv.includes('--micro')) await micro();
else await compare();
