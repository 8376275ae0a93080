/**
 * `node --import tsx bench/export-memory.ts`: what a server's memory consists of around the CSV exports, and
 * how fast the filtered export runs (issue 12, item 3). Starts the built `shelfapi serve` over a store seeded
 * elsewhere, waits for the search index and the price guide file, then optionally drives a search and
 * list-page workload with wrk, then runs the filtered exports and the unfiltered one, one after another in
 * the same process. After each step the server writes `process.memoryUsage()` and its /proc figures (a
 * preload that answers SIGUSR2), and the script prints them with the step's rows per second.
 *
 * Environment: EM_DATABASE_URL (a SQLite path or a PostgreSQL URL; required), EM_KEYS_FILE (bench keys, one
 * a line; required), EM_SEARCHES_FILE (request paths for the workload, one a line; none: no workload),
 * EM_EXPORT_DIR (default: a fresh temporary directory), EM_REDIS_URL (with PostgreSQL), EM_WORKLOAD
 * (seconds, default 10), EM_ITEMS (ids for {id}, default 1,000,000), EM_NODE_OPTIONS (extra node flags;
 * with `--expose-gc` each sample also shows the figures after a full collection, i.e. what is live),
 * EM_SERVER_BIN (another checkout's bin/shelfapi.js, to compare builds on the same data).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { downloadCsvRows, log, ROOT, waitUntilUp } from './bench-support.js';

const DATABASE_URL = required('EM_DATABASE_URL');
const KEYS_FILE = required('EM_KEYS_FILE');
const SEARCHES_FILE = process.env.EM_SEARCHES_FILE ?? '';
const WORKLOAD_S = Number(process.env.EM_WORKLOAD ?? 10);
const ITEMS = Number(process.env.EM_ITEMS ?? 1_000_000);
const V1 = '/developer/v1';
const PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: 1_000_000_000, perMinute: 1_000_000_000 } });
const PLATFORMS = ['NES', 'Nintendo%2064', 'PlayStation%202', 'Sega%20Genesis', 'Game%20Boy', 'Xbox%20360', 'Wii', 'Dreamcast'];
const EXPORTS = ['?platform=PlayStation%202', '?search=super', '?search=mario&platform=NES', '?search=zz', ''];

/** User + system CPU time of a process so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

/** The preload: on SIGUSR2 the server appends its memory figures to MEMLOG_FILE. */
const PRELOAD = `
import { readFileSync, appendFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
const mb = (b) => Math.round((b / 1048576) * 10) / 10;
const figures = () => {
  const m = process.memoryUsage();
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (k) => mb(Number(new RegExp(k + ':\\\\s+(\\\\d+)').exec(status)?.[1] ?? 0) * 1024);
  return { rss: mb(m.rss), peak: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile'),
    heapTotal: mb(m.heapTotal), heapUsed: mb(m.heapUsed), external: mb(m.external), arrayBuffers: mb(m.arrayBuffers),
    spaces: Object.fromEntries(getHeapSpaceStatistics().filter((s) => s.space_size > 0).map((s) => [s.space_name, mb(s.space_size)])) };
};
process.on('SIGUSR2', () => {
  const sample = figures();
  // With --expose-gc: the figures after a full collection too, i.e. what of it is live.
  if (typeof globalThis.gc === 'function') {
    globalThis.gc();
    sample.afterGc = figures();
  }
  appendFileSync(process.env.MEMLOG_FILE, JSON.stringify(sample) + '\\n');
});
`;

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'shelfapi-export-memory-'));
  const preload = join(work, 'memlog.mjs');
  const memlog = join(work, 'memlog.jsonl');
  writeFileSync(preload, PRELOAD);
  writeFileSync(memlog, '');
  const exportDir = process.env.EM_EXPORT_DIR ?? join(work, 'guide');
  const port = 18700 + Math.floor(Math.random() * 200) * 2;
  const child = spawn(
    process.execPath,
    [...(process.env.EM_NODE_OPTIONS ?? '').split(' ').filter((a) => a !== ''), '--import', preload, process.env.EM_SERVER_BIN ?? join(ROOT, 'bin', 'shelfapi.js'), 'serve'],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL,
        ...(process.env.EM_REDIS_URL ? { REDIS_URL: process.env.EM_REDIS_URL, REDIS_KEY_PREFIX: `em:${Date.now()}:` } : {}),
        EXPORT_DIR: exportDir,
        PORT: String(port),
        OPS_PORT: String(port + 1),
        LOG_LEVEL: 'warn',
        PLAN_LIMITS,
        MEMLOG_FILE: memlog,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const base = `http://127.0.0.1:${port}`;
  const ops = `http://127.0.0.1:${port + 1}`;
  const key = readFileSync(KEYS_FILE, 'utf8').split('\n')[0]!;
  const samples: Array<{ step: string; rowsPerSecond?: number; rows?: number } & Record<string, unknown>> = [];
  const sample = async (step: string, extra: Record<string, number> = {}) => {
    const before = readFileSync(memlog, 'utf8').split('\n').filter((l) => l !== '').length;
    child.kill('SIGUSR2');
    for (let i = 0; i < 100 && readFileSync(memlog, 'utf8').split('\n').filter((l) => l !== '').length === before; i++) await new Promise((r) => setTimeout(r, 20));
    const line = readFileSync(memlog, 'utf8').split('\n').filter((l) => l !== '').at(-1)!;
    samples.push({ step, ...extra, ...(JSON.parse(line) as Record<string, unknown>) });
    log(`${step}: ${JSON.stringify(samples.at(-1))}`);
  };
  try {
    await waitUntilUp(`${ops}/healthz`, child);
    for (;;) {
      const text = await (await fetch(`${ops}/metrics`)).text();
      const ready = /^shelfapi_search_index_ready 1$/m.test(text);
      const guide = existsSync(exportDir) && readdirSync(exportDir).some((n) => /^prices-.*\.csv$/.test(n));
      if (ready && guide) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // The guide's row offsets (if any) are read in the background once the file is there.
    await new Promise((r) => setTimeout(r, 3000));
    await sample('ready');
    if (SEARCHES_FILE !== '') {
      const paths = [...readFileSync(SEARCHES_FILE, 'utf8').split('\n').filter((l) => l !== ''), ...PLATFORMS.flatMap((p) => [`${V1}/catalogue?platform=${p}`, `${V1}/prices?platform=${p}`])];
      const file = join(work, 'paths.txt');
      writeFileSync(file, `${paths.join('\n')}\n${V1}/catalogue/{id}\n${V1}/prices/{id}\n`);
      const cpuBefore = cpuMs(child.pid!);
      const out = execFileSync('wrk', ['-t1', '-c20', `-d${WORKLOAD_S}s`, '--timeout', '5s', '-s', join(ROOT, 'bench', 'wrk-random.lua'), base], {
        env: { ...process.env, PATHS_FILE: file, KEYS_FILE, IDS: String(ITEMS) },
        encoding: 'utf8',
      });
      const wrkResult = JSON.parse(out.trim().split('\n').at(-1)!) as { requests: number };
      log(`workload: ${out.trim().split('\n').at(-1)}; server CPU ${((cpuMs(child.pid!) - cpuBefore) / wrkResult.requests).toFixed(2)} ms per request`);
      await sample('after search/list workload');
    }
    for (const query of EXPORTS) {
      const started = performance.now();
      const cpuBefore = cpuMs(child.pid!);
      const rows = await downloadCsvRows(`${base}${V1}/prices/export.csv${query}`, key);
      const seconds = (performance.now() - started) / 1000;
      const serverCpuMs = cpuMs(child.pid!) - cpuBefore;
      await sample(`export ${query === '' ? '(unfiltered)' : decodeURIComponent(query)}`, { rows, rowsPerSecond: Math.round(rows / seconds), serverCpuMs });
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(work, { recursive: true, force: true });
  }
  process.stdout.write(`${JSON.stringify(samples, null, 1)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`export-memory: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
