// When the store goes away (decisions.md section 3): a meter that cannot be reached answers 503
// service_unavailable with Retry-After and never serves unmetered, and service resumes by itself; a counted
// request that ends in a 5xx is given back; 503 responses never count against the quota.
import { describe, it, type TestContext as NodeTestContext } from 'node:test';
import assert from 'node:assert/strict';
import SqliteDatabase from 'better-sqlite3';
import type { LightMyRequestResponse } from 'fastify';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import {
  accountId,
  createFaultableContext,
  enthusiastLimits,
  errorBody,
  intHeader,
  keyId,
  lastUsedAt,
  meUsage,
  parseRateLimit,
  retryAfter,
  storedBurstEvents,
  storedUsed,
} from '../helpers/metering-helpers.js';

const T0 = Date.parse(FIXTURE_NOW);

async function context(t: NodeTestContext, env: Record<string, string>): Promise<TestContext> {
  const ctx = await createTestContext({ env });
  t.after(() => ctx.close());
  return ctx;
}

/** A second connection on the store's file holding the write lock until released. */
function lockStore(t: NodeTestContext, ctx: TestContext): { release(): void } {
  const other = new SqliteDatabase(ctx.store.sqlitePath!);
  other.exec('BEGIN EXCLUSIVE');
  t.after(() => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
  });
  return {
    release() {
      other.exec('ROLLBACK');
    },
  };
}

function expectUnavailable(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 503, res.body);
  errorBody(res, 'service_unavailable');
  retryAfter(res);
}

/** The message of a 5xx never shows SQL, a table, a driver error, a file path or a stack. */
function assertNothingLeaks(res: LightMyRequestResponse, ctx: TestContext): void {
  for (const needle of [/sqlite/i, /select|from|table|listings/i, /no such/i, /I\/O/i, /\bat\s+\S+:\d+/, /\.ts\b|\.js\b/, /\//]) {
    assert.doesNotMatch(res.body, needle, `5xx body leaks internals: ${res.body}`);
  }
  assert.ok(!res.body.includes(ctx.store.sqlitePath!), 'the body names the database file');
}

describe('the metering store is locked by another connection', () => {
  it('answers 503 service_unavailable with Retry-After, counts nothing, and resumes by itself', async (t) => {
    const ctx = await context(t, enthusiastLimits(100, 10));
    const alice = accountId(ctx, 'alice');
    assert.equal((await ctx.get(`${V1}/catalogue`)).statusCode, 200);

    const lock = lockStore(t, ctx);
    ctx.clock.advance(1000);
    // Never served unmetered: a metered endpoint, /me (burst-metered) and HEAD all answer 503.
    expectUnavailable(await ctx.get(`${V1}/catalogue`));
    expectUnavailable(await ctx.get(`${V1}/me`));
    const head = await ctx.get(`${V1}/catalogue`, 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 503);
    assert.equal(head.body, '');
    retryAfter(head);

    lock.release();
    // Nothing of the three 503s was recorded: quota, burst window, per-key day, last use.
    assert.equal(storedUsed(ctx, alice, '2026-11'), 1);
    assert.equal(storedBurstEvents(ctx, alice), 1);
    assert.deepEqual(await ctx.meter.keyUsage(keyId(ctx, 'alice'), '2026-11-01'), [{ day: '2026-11-20', requests: 1 }]);
    assert.equal(lastUsedAt(ctx, 'alice'), FIXTURE_NOW);

    // Service resumes with no restart, and the full burst is there: 1 before + 9 now = 10, then limited.
    const back = await ctx.get(`${V1}/catalogue`);
    assert.equal(back.statusCode, 200, back.body);
    assert.equal(intHeader(back, 'x-ratelimit-remaining'), 98);
    for (let i = 0; i < 8; i++) assert.equal((await ctx.get(`${V1}/catalogue`)).statusCode, 200);
    const limited = await ctx.get(`${V1}/catalogue`);
    assert.equal(limited.statusCode, 429);
    errorBody(limited, 'rate_limited');
    assert.deepEqual((await meUsage(ctx, 'bob')).usage, { period: '2026-11', used: 0, remaining: 10_000 });
  });

  it('requests refused before the meter (401, 405) are answered as usual while it is locked', async (t) => {
    const ctx = await context(t, enthusiastLimits(100, 10));
    lockStore(t, ctx);
    assert.equal((await ctx.get(`${V1}/catalogue`, null)).statusCode, 401);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice-revoked')).statusCode, 401);
    assert.equal((await ctx.get(`${V1}/catalogue`, 'alice', { method: 'POST' })).statusCode, 405);
  });
});

describe('a counted request that ends in a 5xx is given back', () => {
  it('500 server_error (the handler fails after the quota step): usage unchanged, body exactly {error, message}', async (t) => {
    const ctx = await context(t, enthusiastLimits(5, 100));
    const alice = accountId(ctx, 'alice');
    const res0 = await ctx.get(`${V1}/offers`);
    assert.equal(res0.statusCode, 200);
    assert.equal(intHeader(res0, 'x-ratelimit-remaining'), 4);

    // An unexpected fault: the table the /listings handler reads is gone (not an unavailable store).
    const conn = ctx.store.sqlite!;
    conn.pragma('foreign_keys = OFF');
    conn.exec('DROP TABLE listings');
    conn.pragma('foreign_keys = ON');

    // More failures than the month allows: each one is given back, so none is ever quota_exceeded.
    for (let i = 0; i < 7; i++) {
      const res = await ctx.get(`${V1}/listings`);
      assert.equal(res.statusCode, 500, res.body);
      const body = res.json() as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
      assert.equal(body.error, 'server_error');
      assert.equal(typeof body.message, 'string');
      assertNothingLeaks(res, ctx);
      // The X-RateLimit-Remaining of the failed request is after the give-back.
      assert.equal(intHeader(res, 'x-ratelimit-remaining'), 4);
    }
    assert.equal(storedUsed(ctx, alice, '2026-11'), 1);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 1, remaining: 4 });
    assert.deepEqual(await ctx.meter.keyUsage(keyId(ctx, 'alice'), '2026-11-01'), [{ day: '2026-11-20', requests: 1 }]);
    // The burst, unlike the quota, counts every request past step 3 whatever its outcome (500s included).
    assert.equal(storedBurstEvents(ctx, alice), 1 + 7 + 1);

    const after = await ctx.get(`${V1}/offers`);
    assert.equal(after.statusCode, 200);
    assert.equal(intHeader(after, 'x-ratelimit-remaining'), 3);
  });

  it(
    'the RateLimit quota r of a given-back 5xx agrees with X-RateLimit-Remaining',
    {
      todo:
        'product bug in src/http/app.ts: the error handler patches x-ratelimit-remaining after the refund but ' +
        'leaves the RateLimit header computed before it, so the two disagree by one',
    },
    async (t) => {
      const ctx = await context(t, enthusiastLimits(5, 100));
      const conn = ctx.store.sqlite!;
      conn.pragma('foreign_keys = OFF');
      conn.exec('DROP TABLE listings');
      conn.pragma('foreign_keys = ON');
      const res = await ctx.get(`${V1}/listings`);
      assert.equal(res.statusCode, 500);
      assert.equal(intHeader(res, 'x-ratelimit-remaining'), 5);
      assert.equal(parseRateLimit(res).quota?.r, intHeader(res, 'x-ratelimit-remaining'));
    },
  );

  it('503 from the data store after the quota step: given back, never counted, then 200 again', async (t) => {
    const ctx = await createFaultableContext({ env: enthusiastLimits(3, 100) });
    t.after(() => ctx.close());
    const alice = accountId(ctx, 'alice');
    assert.equal((await ctx.getFaulty(`${V1}/listings`)).statusCode, 200);

    ctx.setDataFault('unavailable');
    for (let i = 0; i < 5; i++) {
      const res = await ctx.getFaulty(`${V1}/listings`);
      expectUnavailable(res);
      assertNothingLeaks(res, ctx);
      assert.equal(intHeader(res, 'x-ratelimit-remaining'), 2);
    }
    // Endpoints that do not touch the failing table are served and counted meanwhile.
    assert.equal((await ctx.getFaulty(`${V1}/offers`)).statusCode, 200);
    assert.equal(storedUsed(ctx, alice, '2026-11'), 2);
    assert.deepEqual(await ctx.meter.keyUsage(keyId(ctx, 'alice'), '2026-11-01'), [{ day: '2026-11-20', requests: 2 }]);

    ctx.setDataFault(null);
    const back = await ctx.getFaulty(`${V1}/listings`);
    assert.equal(back.statusCode, 200, back.body);
    assert.equal(intHeader(back, 'x-ratelimit-remaining'), 0);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 3, remaining: 0 });
    ctx.clock.set(T0 + 1);
    const over = await ctx.getFaulty(`${V1}/listings`);
    assert.equal(over.statusCode, 429);
    errorBody(over, 'quota_exceeded');
  });
});
