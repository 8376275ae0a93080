/**
 * Server time of each search, measured inside the process (no HTTP client, no queue): builds the app over an
 * existing store, waits for the search index, then sends every distinct path of a file once (the first
 * request of each after start) and once more (warm) through `app.inject`, and prints p50 / p99 / max of the
 * wall time and of the process's CPU time per request, with the garbage collection that landed in each.
 * CPU time stays meaningful on a machine shared with other work, where wall time does not.
 *
 *   node --import tsx bench/search-server-time.ts DATABASE_URL PATHS_FILE KEYS_FILE ['{"REDIS_URL":"redis://..."}']
 *
 * PATHS_FILE: one request path a line (`npm run bench` writes bench/.data/<store>-drawn-searches.txt);
 * KEYS_FILE: API keys, one a line (the first is used).
 */
import { readFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/http/app.js';
import { createMeter } from '../src/metering/create-meter.js';
import { Metrics } from '../src/observability/metrics.js';
import { migrateToLatest, openStore } from '../src/store/database.js';

const [databaseUrl, pathsFile, keysFile, extraEnv] = process.argv.slice(2);
if (databaseUrl === undefined || pathsFile === undefined || keysFile === undefined) {
  process.stderr.write('usage: search-server-time.ts DATABASE_URL PATHS_FILE KEYS_FILE [EXTRA_ENV_JSON]\n');
  process.exit(2);
}

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

const config = loadConfig({
  DATABASE_URL: databaseUrl,
  LOG_LEVEL: 'warn',
  PLAN_LIMITS: JSON.stringify({ enthusiast: { monthly: 1_000_000_000, perMinute: 1_000_000_000 } }),
  ...(extraEnv ? (JSON.parse(extraEnv) as Record<string, string>) : {}),
});
const store = openStore(config.database);
await migrateToLatest(store);
const meter = await createMeter(config, store);
const metrics = new Metrics();
const started = performance.now();
const cpuAtStart = process.cpuUsage();
const app = await buildApp({ config, store, meter, clock: systemClock, logger: false, metrics });
await app.ready();
while (!/^shelfapi_search_index_ready 1$/m.test(await metrics.registry.metrics())) await new Promise((r) => setTimeout(r, 50));
const buildCpu = process.cpuUsage(cpuAtStart);
const indexBytes = Number(/^shelfapi_search_index_bytes (\S+)$/m.exec(await metrics.registry.metrics())?.[1] ?? NaN);
process.stdout.write(
  `index ready after ${Math.round(performance.now() - started)} ms wall, ${Math.round((buildCpu.user + buildCpu.system) / 1000)} ms CPU; ` +
    `${(indexBytes / 2 ** 20).toFixed(1)} MiB; process RSS ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB\n`,
);

const paths = [...new Set(readFileSync(pathsFile, 'utf8').split('\n').filter((line) => line !== ''))];
const key = readFileSync(keysFile, 'utf8').split('\n')[0] ?? '';

function percentiles(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0).toFixed(2);
  return `p50 ${at(0.5)} / p99 ${at(0.99)} / max ${(sorted.at(-1) ?? 0).toFixed(2)}`;
}

async function pass(label: string): Promise<void> {
  const wall: number[] = [];
  const cpu: number[] = [];
  const slowest: Array<{ cpu: number; gc: number; path: string }> = [];
  for (const path of paths) {
    const wallStart = performance.now();
    const cpuStart = process.cpuUsage();
    const gcStart = gcMs;
    const res = await app.inject({ method: 'GET', url: path, headers: { 'x-api-key': key } });
    // Lets a collection that the request caused report itself before it is read.
    await new Promise((r) => setImmediate(r));
    const used = process.cpuUsage(cpuStart);
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${res.body}`);
    wall.push(performance.now() - wallStart);
    cpu.push((used.user + used.system) / 1000);
    slowest.push({ cpu: cpu.at(-1)!, gc: gcMs - gcStart, path });
  }
  slowest.sort((a, b) => b.cpu - a.cpu);
  process.stdout.write(`${label}: ${paths.length} searches; wall ms ${percentiles(wall)}; CPU ms ${percentiles(cpu)}\n`);
  for (const s of slowest.slice(0, 5)) process.stdout.write(`  ${s.cpu.toFixed(2)} ms CPU (gc ${s.gc.toFixed(1)} ms) ${decodeURIComponent(s.path)}\n`);
}

await pass('first request of each search after start');
await pass('each again (warm)');
await app.close();
await meter.close();
await store.close();
