// Both limits are exact under concurrency (docs/contract.md, "Metering"): with N requests in flight and K slots
// left, exactly K succeed, in one process (many requests interleaved through the app) and across processes
// sharing one SQLite file (child processes racing on BEGIN IMMEDIATE).
import { describe, it, type TestContext as NodeTestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import {
  accountId,
  enthusiastLimits,
  fireAtOnce,
  intHeader,
  keyId,
  meUsage,
  raceWorkers,
  SQLITE_ONLY,
  assertBurstEvents,
  storedUsed,
  type WorkerOrder,
  type WorkerReport,
} from '../helpers/metering-helpers.js';
import { decodeTimes } from '../../src/metering/meter-row.js';

const T0 = Date.parse(FIXTURE_NOW);
const N = 50;
const K = 7;

async function context(t: NodeTestContext, env: Record<string, string>): Promise<TestContext> {
  const ctx = await createTestContext({ env });
  t.after(() => ctx.close());
  return ctx;
}

describe('one process: N requests in flight, K slots left', () => {
  it(`burst: exactly ${K} of ${N} get 200, the rest 429 rate_limited, and ${K} more are stored`, async (t) => {
    const ctx = await context(t, enthusiastLimits(100_000, 10));
    const alice = accountId(ctx, 'alice');
    for (let i = 0; i < 10 - K; i++) assert.equal((await ctx.get(`${V1}/catalogue`)).statusCode, 200);

    // Both of alice's keys and two endpoints, all at once.
    const { responses, tally } = await fireAtOnce(N, (i) =>
      ctx.get(i % 3 === 0 ? `${V1}/prices` : `${V1}/catalogue`, i % 2 === 0 ? 'alice' : 'alice-second'),
    );
    assert.deepEqual(tally, { '200': K, '429 rate_limited': N - K });
    // Each admitted request saw its own slot: burst r values K-1 .. 0, each once.
    const left = responses
      .filter((r) => r.statusCode === 200)
      .map((r) => /"burst";r=([0-9]+)/.exec(String(r.headers['ratelimit']))?.[1])
      .map(Number)
      .sort((a, b) => a - b);
    assert.deepEqual(left, Array.from({ length: K }, (_, i) => i));

    await assertBurstEvents(ctx, alice, 10);
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 10, 'rate_limited requests are not counted against the quota');
  });

  it(`quota: exactly ${K} of ${N} get 200, the rest 429 quota_exceeded, and the stored count is exact`, async (t) => {
    const ctx = await context(t, enthusiastLimits(10, 1000));
    const alice = accountId(ctx, 'alice');
    for (let i = 0; i < 10 - K; i++) assert.equal((await ctx.get(`${V1}/catalogue`)).statusCode, 200);

    const { responses, tally } = await fireAtOnce(N, (i) => ctx.get(`${V1}/catalogue`, i % 2 === 0 ? 'alice' : 'alice-second'));
    assert.deepEqual(tally, { '200': K, '429 quota_exceeded': N - K });
    // X-RateLimit-Remaining of the successes: K-1 .. 0, each exactly once (no two requests shared a unit).
    const remaining = responses
      .filter((r) => r.statusCode === 200)
      .map((r) => intHeader(r, 'x-ratelimit-remaining'))
      .sort((a, b) => a - b);
    assert.deepEqual(remaining, Array.from({ length: K }, (_, i) => i));
    for (const r of responses.filter((x) => x.statusCode === 429)) assert.equal(intHeader(r, 'x-ratelimit-remaining'), 0);

    assert.equal(await storedUsed(ctx, alice, '2026-11'), 10);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 10, remaining: 0 });
    // Either key may have taken every slot (on PostgreSQL + Redis the key this server already holds makes one
    // round trip, the other two), so a key without a day's count counts 0.
    const perKey =
      ((await ctx.meter.keyUsage(alice, await keyId(ctx, 'alice'), '2026-11-20'))[0]?.requests ?? 0) +
      ((await ctx.meter.keyUsage(alice, await keyId(ctx, 'alice-second'), '2026-11-20'))[0]?.requests ?? 0);
    assert.equal(perKey, 10, 'per-key daily counts add up to the account total');
  });

  it('requests of another account in the same burst are not affected', async (t) => {
    const ctx = await context(t, enthusiastLimits(K, 1000));
    const { tally } = await fireAtOnce(N, (i) => ctx.get(`${V1}/catalogue`, i % 2 === 0 ? 'alice' : 'bob'));
    assert.deepEqual(tally, { '200': K + N / 2, '429 quota_exceeded': N / 2 - K });
    assert.equal(await storedUsed(ctx, accountId(ctx, 'bob'), '2026-11'), N / 2);
  });
});

describe('several processes on one host, one SQLite file', SQLITE_ONLY, () => {
  const WORKERS = 3;
  const ATTEMPTS = 20; // per process: 60 in all, a few ms of lock time each, far below busy_timeout

  async function orders(ctx: TestContext, limits: { monthly: number; perMinute: number }): Promise<WorkerOrder[]> {
    const key = await keyId(ctx, 'alice');
    // Worker 0 admits back to back (the others wait on its lock); the rest pause 1 ms between admissions,
    // so that their transactions interleave. Either way the totals must be exact.
    return Array.from({ length: WORKERS }, (_, i) => ({
      dbPath: ctx.store.sqlitePath!,
      accountIds: [accountId(ctx, 'alice')],
      keyId: key,
      ...limits,
      quota: true,
      attempts: ATTEMPTS,
      pauseMs: i === 0 ? 0 : 1,
      roundMs: 0,
      now: T0,
    }));
  }

  it('quota: the processes together admit exactly the monthly limit', async (t) => {
    const ctx = await context(t, enthusiastLimits(25, 1000));
    const limits = { monthly: 25, perMinute: 1000 };
    const reports = await raceWorkers(await orders(ctx, limits));
    const sum = (f: (r: (typeof reports)[number]) => number) => reports.reduce((s, r) => s + f(r), 0);

    assert.equal(sum((r) => r.quotaAllowed), limits.monthly, JSON.stringify(reports));
    assert.equal(sum((r) => r.quotaExceeded), WORKERS * ATTEMPTS - limits.monthly);
    assert.equal(await storedUsed(ctx, accountId(ctx, 'alice'), '2026-11'), limits.monthly);
    await assertBurstEvents(ctx, accountId(ctx, 'alice'), WORKERS * ATTEMPTS);
    // This process, which holds the same file open, sees the same count through the app.
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 25, remaining: 0 });
  });

  it('burst: the processes together admit exactly perMinute in the window', async (t) => {
    const ctx = await context(t, enthusiastLimits(100_000, 25));
    const limits = { monthly: 100_000, perMinute: 25 };
    const reports = await raceWorkers(await orders(ctx, limits));
    const sum = (f: (r: (typeof reports)[number]) => number) => reports.reduce((s, r) => s + f(r), 0);

    assert.equal(sum((r) => r.burstAllowed), limits.perMinute, JSON.stringify(reports));
    assert.equal(sum((r) => r.rateLimited), WORKERS * ATTEMPTS - limits.perMinute);
    await assertBurstEvents(ctx, accountId(ctx, 'alice'), limits.perMinute);
    assert.equal(await storedUsed(ctx, accountId(ctx, 'alice'), '2026-11'), limits.perMinute);
    // The window is full for the app in this process too.
    const res = await ctx.get(`${V1}/me`);
    assert.equal(res.statusCode, 429, res.body);
  });

  // Many small races: each of ROUNDS made-up accounts has one slot, and the processes all go for it at the
  // same instant (a common start plus round * ROUND_MS). An admission that is not atomic across processes
  // shows up here as an account admitted twice; an exact one can only ever give one per account.
  const ROUNDS = 300;
  const ROUND_MS = 3;
  const FIRST_ACCOUNT = 1_000_000;

  async function roundOrders(ctx: TestContext, limits: { monthly: number; perMinute: number }): Promise<WorkerOrder[]> {
    const key = await keyId(ctx, 'alice');
    const accountIds = Array.from({ length: ROUNDS }, (_, a) => FIRST_ACCOUNT + a);
    return Array.from({ length: WORKERS }, () => ({
      dbPath: ctx.store.sqlitePath!,
      accountIds,
      keyId: key,
      ...limits,
      quota: true,
      attempts: 1,
      pauseMs: 0,
      roundMs: ROUND_MS,
      now: T0,
    }));
  }

  /** The rounds whose account did not admit exactly one, as "account: n" (empty when exact). */
  function notExactlyOne(counts: number[]): string[] {
    return counts.flatMap((n, a) => (n === 1 ? [] : [`${FIRST_ACCOUNT + a}: ${n}`]));
  }

  function perAccount(reports: WorkerReport[], pick: (r: WorkerReport) => number[]): number[] {
    return Array.from({ length: ROUNDS }, (_, a) => reports.reduce((s, r) => s + pick(r)[a]!, 0));
  }

  function storedPerAccount(ctx: TestContext, sql: string): number[] {
    const rows = ctx.store.sqlite!.prepare(sql).all(FIRST_ACCOUNT) as Array<{ account: number; n: number }>;
    const out = Array.from({ length: ROUNDS }, () => 0);
    for (const row of rows) out[row.account - FIRST_ACCOUNT] = row.n;
    return out;
  }

  /** Each account's window as stored: the times in its row (the SQLite meter's) and its rows of burst_events. */
  function storedWindowPerAccount(ctx: TestContext): number[] {
    const rows = ctx.store.sqlite!.prepare('SELECT account_id AS account, n, recent FROM burst_windows WHERE account_id >= ?').all(FIRST_ACCOUNT) as Array<{
      account: number;
      n: number;
      recent: Buffer | null;
    }>;
    const out = Array.from({ length: ROUNDS }, () => 0);
    for (const row of rows) out[row.account - FIRST_ACCOUNT] = row.n + decodeTimes(row.recent).length;
    return out;
  }

  it(`burst, ${ROUNDS} races of ${WORKERS} processes for one slot: exactly one admitted each time`, async (t) => {
    const ctx = await context(t, {});
    const reports = await raceWorkers(await roundOrders(ctx, { monthly: 100_000, perMinute: 1 }));
    assert.deepEqual(notExactlyOne(perAccount(reports, (r) => r.burstAllowedByAccount)), []);
    assert.deepEqual(
      notExactlyOne(
        storedWindowPerAccount(ctx),
      ),
      [],
    );
  });

  it(`quota, ${ROUNDS} races of ${WORKERS} processes for the last unit of the month: exactly one counted each time`, async (t) => {
    const ctx = await context(t, {});
    const reports = await raceWorkers(await roundOrders(ctx, { monthly: 1, perMinute: 1000 }));
    assert.deepEqual(notExactlyOne(perAccount(reports, (r) => r.quotaAllowedByAccount)), []);
    assert.deepEqual(
      notExactlyOne(
        // The SQLite meter holds the period it counts in in the account's row (quota_usage holds the others).
        storedPerAccount(ctx, "SELECT account_id AS account, used AS n FROM burst_windows WHERE account_id >= ? AND period = '2026-11'"),
      ),
      [],
    );
  });
});
