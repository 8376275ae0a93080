/**
 * The CSV export of one seeded store, each case in a fresh server process (so that its peak RSS is the
 * case's own): the unfiltered guide streamed from the store (EXPORT_DIR=off, the path before the price
 * guide file), the price guide file being written (time and peak RSS of the background write), the
 * unfiltered guide served from that file, and a filtered export (from the store).
 *
 *   npm run build
 *   DATABASE_URL=... KEY=<a key with the export scope> [FILTER=platform=NES] [REDIS_URL=...] \
 *     node --import tsx bench/export-guide.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { downloadCsvRows, peakRssMb, ROOT } from './bench-support.js';

const V1 = '/developer/v1';
const DATABASE_URL = process.env.DATABASE_URL ?? '';
const KEY = process.env.KEY ?? '';
const FILTER = process.env.FILTER ?? 'platform=NES';
const PORT = 18300;
const PLAN_LIMITS = '{"enthusiast":{"perMinute":100000,"monthly":100000000}}';

async function start(exportDir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'shelfapi.js'), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL, EXPORT_DIR: exportDir, PORT: String(PORT), OPS_PORT: String(PORT + 1), LOG_LEVEL: 'warn', PLAN_LIMITS },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    try {
      await fetch(`http://127.0.0.1:${PORT + 1}/healthz`);
      return child;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error('the server did not come up');
}

async function stop(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

async function download(query: string): Promise<{ rows: number; seconds: number }> {
  const started = performance.now();
  const rows = await downloadCsvRows(`http://127.0.0.1:${PORT}${V1}/prices/export.csv${query}`, KEY);
  return { rows, seconds: (performance.now() - started) / 1000 };
}

function report(name: string, rows: number, seconds: number, rss: number): void {
  process.stdout.write(
    `${name.padEnd(34)} ${String(rows).padStart(8)} rows ${seconds.toFixed(2).padStart(7)} s ${String(Math.round(rows / seconds)).padStart(9)} rows/s  peak RSS ${rss} MB\n`,
  );
}

async function exportCase(name: string, exportDir: string, query: string): Promise<void> {
  const child = await start(exportDir);
  const { rows, seconds } = await download(query);
  report(name, rows, seconds, peakRssMb(child.pid as number));
  await stop(child);
}

async function main(): Promise<void> {
  if (DATABASE_URL === '' || KEY === '') throw new Error('DATABASE_URL and KEY are required');
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-guide-bench-'));
  try {
    await exportCase('unfiltered, from the store', 'off', '');
    const writer = await start(dir);
    const started = performance.now();
    while (!readdirSync(dir).some((name) => /^prices-.*\.csv$/.test(name))) await new Promise((r) => setTimeout(r, 100));
    const seconds = (performance.now() - started) / 1000;
    const file = readdirSync(dir).find((name) => /^prices-.*\.csv$/.test(name)) as string;
    const rows = readFileSync(join(dir, file)).toString('latin1').split('\n').length - 2;
    report('writing the guide file (background)', rows, seconds, peakRssMb(writer.pid as number));
    await stop(writer);
    await exportCase('unfiltered, from the guide file', dir, '');
    await exportCase(`filtered (${FILTER}), from the store`, dir, `?${FILTER}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
