/**
 * What writing the owners' statistics into Redis costs the process that writes them (the statistics thread of
 * a PostgreSQL + Redis server), in CPU time a request: MICRO_REQUESTS records shaped like the bench's item
 * GETs (random keys over BENCH_KEYS accounts with a key each, default 10,000; one in twenty a 404), recorded
 * and flushed once a simulated second (8,000 requests) as the thread does, against the machine's Redis under a
 * prefix of its own (deleted after). Redis's own time is not counted here: `INFO commandstats` tells it.
 *
 *   node --import tsx bench/redis-stats-write.ts        (MICRO_REQUESTS=200000, RUNS=3)
 */
import { deleteRedisKeys } from './bench-support.js';
import { RedisUsageStats } from '../src/usage-stats/redis-usage-stats.js';
import type { RequestRecord } from '../src/usage-stats/usage-stats.js';

const n = Number(process.env.MICRO_REQUESTS ?? 200_000);
const keys = Number(process.env.BENCH_KEYS ?? 10_000);
const runs = Number(process.env.RUNS ?? 3);
const url = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PER_SECOND = 8_000;

function record(i: number, at: number, key: number): RequestRecord {
  const missing = i % 20 === 0;
  const status = missing ? 404 : 200;
  return {
    accountId: key,
    keyId: key,
    at,
    outcome: missing ? 'bad_request' : 'counted',
    used: true,
    address: '127.0.0.1',
    rejection: missing
      ? { at: new Date(at).toISOString(), method: 'GET', path: `/developer/v1/catalogue/${i}`, status, error: 'not_found', message: `No published catalogue item has masterItemId ${i}.`, requestId: `r-${i}` }
      : null,
    call: { method: 'GET', url: `/developer/v1/catalogue/${i}`, status, error: missing ? 'not_found' : null, durationMs: 1.25, address: '127.0.0.1', requestId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, endpoint: '/catalogue/:id' },
  };
}

async function one(run: number): Promise<number> {
  const prefix = `bench-stats-write:${process.pid}:${run}:`;
  const stats = new RedisUsageStats(url, { prefix });
  await stats.ready();
  const start = Date.parse('2026-11-28T12:00:00.000Z');
  let random = 12345 + run;
  const next = () => (random = (random * 1103515245 + 12345) % 2147483648);
  let us = 0;
  try {
    for (let i = 0; i < n; i++) {
      const at = start + Math.floor((i * 1000) / PER_SECOND);
      const before = process.cpuUsage();
      stats.record(record(i, at, 1 + (next() % keys)));
      if (i % PER_SECOND === PER_SECOND - 1) await stats.flush();
      const used = process.cpuUsage(before);
      us += used.user + used.system;
    }
    await stats.flush();
  } finally {
    await stats.close();
    await deleteRedisKeys(url, prefix);
  }
  return us / n;
}

const results: number[] = [];
for (let run = 1; run <= runs; run++) {
  const us = await one(run);
  results.push(Math.round(us * 100) / 100);
  process.stderr.write(`run ${run}: ${us.toFixed(2)} µs a request\n`);
}
const sorted = [...results].sort((a, b) => a - b);
process.stdout.write(`${JSON.stringify({ requests: n, keys, usPerRequest: results, median: sorted[Math.floor(sorted.length / 2)] })}\n`);
