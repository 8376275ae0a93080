/**
 * `shelfapi serve --workers 2`: a primary and two workers answering on one port. The quota stays exact
 * across the workers on every store (one SQLite file shared by the processes, PostgreSQL metering,
 * PostgreSQL + Redis); /metrics is one view of both; a killed worker is replaced and service goes on;
 * SIGTERM drains every worker and the primary exits 0.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { SCOPES } from '../../src/domain/scopes.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { migrateToLatest, openStore } from '../../src/store/database.js';
import type { DatabaseConfig } from '../../src/config.js';
import { startServerProcess, waitFor, type ServerProcess } from '../helpers/server-process.js';
import { freshPostgresSchema, TEST_REDIS_URL } from '../helpers/test-app.js';

const PLAN_LIMITS = JSON.stringify({ enthusiast: { perMinute: 100_000, monthly: 100 }, addon: { perMinute: 100_000, monthly: 100_000 } });
const accounts = [
  { ref: 'quota', plan: 'enthusiast' as const },
  { ref: 'steady', plan: 'addon' as const },
];

/** The pids of the processes whose parent is `pid`. */
function childPids(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((n) => n > 0);
  } catch {
    return []; // ps exits 1 when there is none
  }
}

async function seed(database: DatabaseConfig): Promise<Record<string, string>> {
  const store = openStore(database);
  await migrateToLatest(store);
  const loaded = await loadDataset(
    store,
    {
      accounts: accounts.map(({ ref, plan }) => ({ ref, email: `${ref}@example.com`, plan })),
      keys: accounts.map(({ ref }) => ({ ref, account: ref, name: ref, scopes: [...SCOPES] })),
      catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
    },
    { keyPrefix: 'shelf', now: Date.now() },
  );
  await store.close();
  return loaded.keys;
}

/** One request on a connection of its own (so the cluster hands each to the next worker), as `status error`. */
function getOnce(server: ServerProcess, key: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.base}/catalogue/1`, { agent: false, headers: { 'x-api-key': key } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => {
        const error = (JSON.parse(body) as { error?: string }).error;
        resolve(`${res.statusCode}${error ? ` ${error}` : ''}`);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** `count` requests, `atOnce` of them in flight at a time; how many got each answer. */
async function statusCounts(server: ServerProcess, key: string, count: number, atOnce = count): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let sent = 0; sent < count; sent += atOnce) {
    const results = await Promise.all(Array.from({ length: Math.min(atOnce, count - sent) }, () => getOnce(server, key)));
    for (const r of results) counts[r] = (counts[r] ?? 0) + 1;
  }
  return counts;
}

/** Requests on the item route counted in the aggregated /metrics, over every status. */
async function itemRequestsCounted(server: ServerProcess): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.opsPort}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('shelfapi_http_requests_total{') && line.includes('route="/developer/v1/catalogue/:id"')) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

/** Distinct pids in the request log lines: the processes that answered. */
function answeringPids(output: string): Set<number> {
  const pids = new Set<number>();
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const parsed = JSON.parse(line) as { msg?: string; pid?: number };
    if (parsed.msg === 'request' && parsed.pid !== undefined) pids.add(parsed.pid);
  }
  return pids;
}

/** Why the servers answered 503: each distinct error message they logged as an outage, with its count. */
function outageReasons(output: string): Record<string, number> {
  const reasons: Record<string, number> = {};
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const parsed = JSON.parse(line) as { msg?: string; err?: { message?: string } };
    if (parsed.msg !== 'store or meter unavailable') continue;
    const reason = parsed.err?.message ?? '(no message)';
    reasons[reason] = (reasons[reason] ?? 0) + 1;
  }
  return reasons;
}

/** 300 requests (`atOnce` in flight at a time) on a quota of 100: exactly 100 answered 200 and counted. */
async function exactQuota(server: ServerProcess, key: string, atOnce?: number): Promise<void> {
  const started = Date.now();
  const counts = await statusCounts(server, key, 300, atOnce);
  assert.deepEqual(
    counts,
    { '200': 100, '429 quota_exceeded': 200 },
    `exactly the quota of 100 is served across the workers (answered in ${Date.now() - started} ms; outages logged: ${JSON.stringify(outageReasons(server.output()))})`,
  );
  const me = (await (await fetch(`${server.base}/me`, { headers: { 'x-api-key': key } })).json()) as { usage: { used: number } };
  assert.equal(me.usage.used, 100);
}

describe('serve --workers 2 on one SQLite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-workers-'));
  let server: ServerProcess | null = null;
  after(async () => {
    await server?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('three processes on one port, exact quota, one /metrics, a killed worker replaced, SIGTERM drains', async () => {
    const path = join(dir, 'workers.sqlite');
    const keys = await seed({ dialect: 'sqlite', path });
    server = await startServerProcess({ DATABASE_URL: path, PLAN_LIMITS }, ['--workers', '2']);
    const primary = server.child.pid!;
    assert.equal(childPids(primary).length, 2, 'a primary and two workers');

    await exactQuota(server, keys.quota!);
    assert.deepEqual([...answeringPids(server.output())].sort(), childPids(primary).sort(), 'both workers answered on the one port');
    assert.equal(await itemRequestsCounted(server), 300, '/metrics counts the requests of both workers');

    const [victim] = childPids(primary);
    process.kill(victim!, 'SIGKILL');
    await waitFor(async () => {
      const now = childPids(primary);
      return now.length === 2 && !now.includes(victim!);
    }, 'the killed worker to be replaced', 90_000);
    // The replacement serves too: every request is answered, by the survivor or the newcomer.
    await waitFor(async () => {
      assert.deepEqual(await statusCounts(server!, keys.steady!, 10), { '200': 10 });
      return answeringPids(server!.output()).size === 3;
    }, 'the new worker to answer', 90_000);
    assert.deepEqual(await statusCounts(server, keys.steady!, 40), { '200': 40 });
    assert.match(server.output(), /a worker died: replacing it/);

    server.child.kill('SIGTERM');
    assert.deepEqual(await server.exited, { code: 0, signal: null });
    assert.deepEqual(childPids(primary), [], 'no worker left behind');
  });
});

describe('serve --workers 2 on PostgreSQL', () => {
  const cleanups: Array<() => Promise<void>> = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  for (const withRedis of [false, true]) {
    test(`${withRedis ? 'PostgreSQL + Redis' : 'metering in PostgreSQL'}: 300 requests at once on a quota of 100 get exactly 100 answers 200`, async () => {
      const pg = await freshPostgresSchema();
      cleanups.push(pg.drop);
      const keys = await seed({ dialect: 'postgres', url: pg.url });
      const env: Record<string, string> = { DATABASE_URL: pg.url, PLAN_LIMITS };
      if (withRedis) {
        const prefix = `workers:${randomUUID()}:`;
        Object.assign(env, { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix });
        cleanups.push(async () => {
          const redis = new Redis(TEST_REDIS_URL);
          const found = await redis.keys(`${prefix}*`);
          if (found.length > 0) await redis.del(...found);
          redis.disconnect();
        });
      }
      const server = await startServerProcess(env, ['--workers', '2']);
      cleanups.push(async () => void (await server.stop('SIGKILL')));
      // All 300 at once on both: PostgreSQL metering holds a flood of one account since its admissions go
      // to the store together (issue 17 item 1), so no 503 is tolerated.
      await exactQuota(server, keys.quota!, 300);
      assert.equal(answeringPids(server.output()).size, 2, 'both workers answered');
      server.child.kill('SIGTERM');
      assert.deepEqual(await server.exited, { code: 0, signal: null });
    });
  }
});
