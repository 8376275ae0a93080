/**
 * Helpers of the metering suites (test/metering): small plan limits, reading the rate-limit headers, what
 * the meter stored (through the meter or the database, so that the HTTP-level tests run on every
 * TEST_STORE), a data store that can be made to fail after the quota step, and child processes that race
 * on one SQLite file. test-app.ts and fixture.ts are shared and stay untouched; this builds on them.
 */
import { decodeTimes } from '../../src/metering/meter-row.js';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import SqliteDatabase from 'better-sqlite3';
import type { LightMyRequestResponse } from 'fastify';
import { Kysely, SqliteDialect, type SqliteDatabase as KyselySqliteDatabase } from 'kysely';
import { buildApp, type App } from '../../src/http/app.js';
import { hashKey } from '../../src/keys/api-key.js';
import type { Database } from '../../src/store/schema.js';
import { keyUsage as keyUsageReport } from '../../src/services/key-lookup.js';
import { createTestContext, TEST_STORE, type ContextOptions, type TestContext } from './test-app.js';

/** PLAN_LIMITS for the enthusiast plan (alice); bob's addon plan keeps its defaults. */
export function enthusiastLimits(monthly: number, perMinute: number): Record<string, string> {
  return { PLAN_LIMITS: JSON.stringify({ enthusiast: { monthly, perMinute } }) };
}

/** Unix seconds of an ISO instant, computed without the product's calendar code. */
export function unixSeconds(iso: string): number {
  return Date.parse(iso) / 1000;
}

/** One response header as a string; fails when it is absent. */
export function header(res: LightMyRequestResponse, name: string): string {
  const value = res.headers[name.toLowerCase()];
  assert.ok(value !== undefined, `expected header ${name} on a ${res.statusCode} response`);
  return String(value);
}

export function intHeader(res: LightMyRequestResponse, name: string): number {
  const raw = header(res, name);
  assert.match(raw, /^[0-9]+$/, `${name} must be whole seconds / a count, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** Retry-After: whole seconds, at least 1. */
export function retryAfter(res: LightMyRequestResponse): number {
  const s = intHeader(res, 'retry-after');
  assert.ok(s >= 1, `Retry-After must be at least 1, got ${s}`);
  return s;
}

export interface RateLimitItem {
  r: number;
  t: number;
}

/** Parses `"burst";r=9;t=60, "quota";r=4;t=907200` strictly (nothing else may appear). */
export function parseRateLimit(res: LightMyRequestResponse): { burst: RateLimitItem; quota?: RateLimitItem } {
  const raw = header(res, 'ratelimit');
  const items = raw.split(', ');
  const out: { burst?: RateLimitItem; quota?: RateLimitItem } = {};
  for (const item of items) {
    const m = /^"(burst|quota)";r=([0-9]+);t=([0-9]+)$/.exec(item);
    assert.ok(m, `malformed RateLimit item ${JSON.stringify(item)} in ${JSON.stringify(raw)}`);
    const name = m[1] as 'burst' | 'quota';
    assert.equal(out[name], undefined, `RateLimit names "${name}" twice: ${raw}`);
    out[name] = { r: Number(m[2]), t: Number(m[3]) };
  }
  assert.ok(out.burst, `RateLimit lacks the burst item: ${raw}`);
  return out.quota === undefined ? { burst: out.burst } : { burst: out.burst, quota: out.quota };
}

/** The error body of the contract: exactly `{ error, message }`. */
export function errorBody(res: LightMyRequestResponse, code: string): string {
  const body = res.json() as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], `error body ${res.body}`);
  assert.equal(body.error, code);
  assert.equal(typeof body.message, 'string');
  return body.message as string;
}

export interface UsageBody {
  period: string;
  used: number;
  remaining: number;
}

/** GET /me and its usage object (asserting the 200). */
export async function meUsage(ctx: TestContext, key = 'alice'): Promise<{ usage: UsageBody; limits: { monthly: number; perMinute: number } }> {
  const res = await ctx.get('/developer/v1/me', key);
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json() as { usage: UsageBody; limits: { monthly: number; perMinute: number } };
  return { usage: body.usage, limits: body.limits };
}

export function accountId(ctx: TestContext, ref: string): number {
  const id = ctx.loaded.accounts[ref];
  assert.ok(id !== undefined, `no fixture account ${ref}`);
  return id;
}

/** The id of a fixture key, found by the hash of the full key the loader printed. */
export async function keyId(ctx: TestContext, ref: string): Promise<number> {
  const full = ctx.loaded.keys[ref];
  assert.ok(full !== undefined, `no fixture key ${ref}`);
  const row = await ctx.store.db.selectFrom('api_keys').select('id').where('key_hash', '=', hashKey(full)).executeTakeFirst();
  assert.ok(row, `key ${ref} is not in the store`);
  return Number(row.id);
}

/** A key's last use as the owner sees it (the report behind `shelfapi keys usage`). */
export async function lastUsedAt(ctx: TestContext, ref: string): Promise<string | null> {
  return (await keyUsageReport(ctx.store, ctx.meter, await keyId(ctx, ref), ctx.clock.now(), 1)).key.lastUsedAt;
}

/** A key's counted requests per UTC day from `sinceDay`, newest first, days without any left out. */
export async function countedDays(ctx: TestContext, key: number, sinceDay: string): Promise<Array<{ day: string; requests: number }>> {
  const row = await ctx.store.db.selectFrom('api_keys').select('account_id').where('id', '=', key).executeTakeFirst();
  assert.ok(row, `key ${key} is not in the store`);
  return (await ctx.meter.keyUsage(Number(row.account_id), key, sinceDay)).filter((d) => d.requests > 0);
}

/** Requests counted against the account's quota in a period, as the meter's store holds them. */
export function storedUsed(ctx: TestContext, account: number, period: string): Promise<number> {
  return ctx.meter.used(account, period);
}

/**
 * Requests in the account's burst window as stored (the meter prunes expired ones only when it admits).
 * Null when the window is not in the database (the Redis meter keeps it in a sorted set of its own).
 */
export async function storedBurstEvents(ctx: TestContext, account: number): Promise<number | null> {
  if (ctx.config.redisUrl !== null || ctx.config.redisClusterUrls !== null) return null;
  const row = await ctx.store.db
    .selectFrom('burst_events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', account)
    .executeTakeFirstOrThrow();
  // The SQLite meter keeps the window's latest times in its row, the rest in burst_events.
  const inRow = await ctx.store.db.selectFrom('burst_windows').select('recent').where('account_id', '=', account).executeTakeFirst();
  return Number(row.n) + decodeTimes(inRow?.recent ?? null).length;
}

/** Asserts the stored burst window where the test can see it (see storedBurstEvents). */
export async function assertBurstEvents(ctx: TestContext, account: number, expected: number, message?: string): Promise<void> {
  const n = await storedBurstEvents(ctx, account);
  if (n !== null) assert.equal(n, expected, message);
}

/** The SQLite-only suites (locks, child processes on one file, the SQLite meter itself) skip elsewhere. */
export const SQLITE_ONLY = TEST_STORE === 'sqlite' ? {} : { skip: `SQLite only (TEST_STORE=${TEST_STORE})` };

/** Fires `n` copies of a request at once and tallies the statuses (and error codes of the 429s). */
export async function fireAtOnce(
  n: number,
  send: (i: number) => Promise<LightMyRequestResponse>,
): Promise<{ responses: LightMyRequestResponse[]; tally: Record<string, number> }> {
  const responses = await Promise.all(Array.from({ length: n }, (_, i) => send(i)));
  const tally: Record<string, number> = {};
  for (const res of responses) {
    const label = res.statusCode === 200 ? '200' : `${res.statusCode} ${(res.json() as { error: string }).error}`;
    tally[label] = (tally[label] ?? 0) + 1;
  }
  return { responses, tally };
}

// ---------------------------------------------------------------------------------------------------------
// A data store that fails on demand, after the meter has counted the request.

export type DataFault = 'unavailable' | null;

export interface FaultableContext extends TestContext {
  /** A second app over the same store, meter and clock whose queries on `listings` fail while a fault is set. */
  faultyApp: App;
  setDataFault(fault: DataFault): void;
  getFaulty(url: string, key?: string): Promise<LightMyRequestResponse>;
}

/**
 * Builds the usual test context, then a second app whose data store (the Kysely layer only; the meter keeps
 * the real connection) throws SQLITE_IOERR on any statement naming the "listings" table while the fault is
 * set. Authentication and metering run normally, so the failure lands in the handler, after step 9.
 */
export async function createFaultableContext(options: ContextOptions = {}): Promise<FaultableContext> {
  const ctx = await createTestContext(options);
  const conn = ctx.store.sqlite!;
  let fault: DataFault = null;
  const wrapped: KyselySqliteDatabase = {
    close: () => {
      // The connection belongs to ctx.store, which closes it.
    },
    prepare: (sql: string) => {
      if (fault === 'unavailable' && /"listings"/.test(sql)) {
        throw new SqliteDatabase.SqliteError('disk I/O error', 'SQLITE_IOERR_READ');
      }
      return conn.prepare(sql);
    },
  };
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: wrapped }) });
  const faultyApp = await buildApp({ config: ctx.config, store: { ...ctx.store, db }, meter: ctx.meter, clock: ctx.clock, logger: false });
  await faultyApp.ready();
  return {
    ...ctx,
    faultyApp,
    setDataFault(next) {
      fault = next;
    },
    getFaulty(url, key = 'alice') {
      const full = ctx.loaded.keys[key];
      if (full === undefined) throw new Error(`no fixture key ${key}`);
      return faultyApp.inject({ method: 'GET', url, headers: { 'x-api-key': full } });
    },
    async close() {
      await faultyApp.close();
      await ctx.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Child processes racing on one SQLite file (fixtures/admit-worker.ts).

export interface WorkerOrder {
  dbPath: string;
  /** Accounts taken in turn, `attempts` admissions each (the meter needs no account row: ids may be made up). */
  accountIds: number[];
  keyId: number;
  monthly: number;
  perMinute: number;
  quota: boolean;
  attempts: number;
  /** Pause between two admissions of one process (0: back to back). */
  pauseMs: number;
  /** When > 0, every process starts on account a at the common start + a * roundMs (collide on each). */
  roundMs: number;
  /** The instant every admission uses, so the race does not depend on wall-clock time. */
  now: number;
}

export interface WorkerReport {
  /** Admissions made (accounts x attempts). */
  attempts: number;
  burstAllowed: number;
  quotaAllowed: number;
  rateLimited: number;
  quotaExceeded: number;
  /** Admissions retried after MeterUnavailableError (a lock wait over busy_timeout); never counted. */
  retriedUnavailable: number;
  /** Per entry of accountIds. */
  burstAllowedByAccount: number[];
  quotaAllowedByAccount: number[];
}

const WORKER = fileURLToPath(new URL('../metering/fixtures/admit-worker.ts', import.meta.url));

interface RunningWorker {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  report: Promise<WorkerReport>;
}

function startWorker(order: WorkerOrder): RunningWorker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, ADMIT_ORDER: JSON.stringify(order) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const lines = createInterface({ input: child.stdout });
  let markReady: () => void = () => {};
  let fail: (err: Error) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    fail = reject;
  });
  const report = new Promise<WorkerReport>((resolve, reject) => {
    let result: WorkerReport | null = null;
    lines.on('line', (line) => {
      if (line === 'ready') markReady();
      else if (line.startsWith('{')) result = JSON.parse(line) as WorkerReport;
    });
    child.on('close', (code) => {
      const err = new Error(`admit worker exited with ${code}: ${stderr}`);
      fail(err);
      if (code === 0 && result !== null) resolve(result);
      else reject(err);
    });
  });
  // Either promise may be the one awaited first; neither rejection may go unhandled.
  ready.catch(() => {});
  report.catch(() => {});
  return { child, ready, report };
}

const START_DELAY_MS = 300;

/** Starts one worker per order, waits until all have opened the file, then releases them at one instant. */
export async function raceWorkers(orders: WorkerOrder[]): Promise<WorkerReport[]> {
  const workers = orders.map(startWorker);
  try {
    await Promise.all(workers.map((w) => w.ready));
    // A common start instant a little ahead, so that every process is spinning on it when it comes.
    const startAt = Date.now() + START_DELAY_MS;
    for (const w of workers) w.child.stdin.end(`go ${startAt}\n`);
    return await Promise.all(workers.map((w) => w.report));
  } finally {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill();
  }
}
