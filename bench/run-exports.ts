/** The full run's exports: each streamed whole while a client keeps asking for single items. */
import { existsSync, readdirSync } from 'node:fs';
import { downloadCsvRows, peakRssMb } from './bench-support.js';
import { ITEMS, V1 } from './run-config.js';
import type { Target } from './run-servers.js';

export async function eventLoopP99Ms(opsBase: string): Promise<number> {
  const text = await (await fetch(`${opsBase}/metrics`)).text();
  return Number(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text)?.[1] ?? NaN) * 1000;
}

export interface ExportResult {
  rows: number;
  seconds: number;
  rowsPerSecond: number;
  peakRssMb: number;
  eventLoopP99Ms: number;
  concurrentRequests: number;
  concurrentP99Ms: number;
}

/** Waits until a server has written the price guide file into `dir` (src/export/price-guide.ts). */
export async function guideWritten(dir: string): Promise<void> {
  const deadline = Date.now() + 15 * 60_000;
  while (!(existsSync(dir) && readdirSync(dir).some((name) => /^prices-.*\.csv$/.test(name)))) {
    if (Date.now() > deadline) throw new Error(`no price guide file in ${dir}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** A platform with many items, for the filtered export. */
export const EXPORT_FILTER = 'platform=PlayStation%202';

/** Streams the whole export (or a filtered one) while a client keeps asking for single items; measures both sides. */
export async function runExport(target: Target, key: string, query = ''): Promise<ExportResult> {
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
