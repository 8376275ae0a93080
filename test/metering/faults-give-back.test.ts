// A counted request that ends in a 5xx is given back (docs/contract.md, "Metering"): after a 500 from the
// handler or a 503 from the data store past the quota step, the quota and the key's day count are as they
// were, the rate-limit headers say so, and the body shows nothing of the internals. One of the faults files,
// which scripts/test-all.ts runs alone, after the others.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { V1, type TestContext } from '../helpers/test-app.js';
import {
  accountId,
  createFaultableContext,
  enthusiastLimits,
  errorBody,
  intHeader,
  keyId,
  meUsage,
  parseRateLimit,
  SQLITE_ONLY,
  assertBurstEvents,
  storedUsed,
} from '../helpers/metering-helpers.js';
import { context, expectUnavailable, T0 } from './faults-fixtures.js';

/** Makes the /listings handler fail with an unexpected error (no such table), on either database. */
async function dropListings(ctx: TestContext): Promise<void> {
  await sql`alter table listings rename to listings_gone`.execute(ctx.store.db);
}

/** The message of a 5xx never shows SQL, a table, a driver error, a file path or a stack. */
function assertNothingLeaks(res: LightMyRequestResponse, ctx: TestContext): void {
  for (const needle of [/sqlite/i, /select|from|table|listings/i, /no such/i, /I\/O/i, /\bat\s+\S+:\d+/, /\.ts\b|\.js\b/, /\//]) {
    assert.doesNotMatch(res.body, needle, `5xx body leaks internals: ${res.body}`);
  }
  assert.ok(!res.body.includes(ctx.store.sqlitePath!), 'the body names the database file');
}

describe('a counted request that ends in a 5xx is given back', () => {
  it('500 server_error (the handler fails after the quota step): usage unchanged, body exactly {error, message}', async (t) => {
    const ctx = await context(t, enthusiastLimits(5, 100));
    const alice = accountId(ctx, 'alice');
    const res0 = await ctx.get(`${V1}/offers`);
    assert.equal(res0.statusCode, 200);
    assert.equal(intHeader(res0, 'x-ratelimit-remaining'), 4);

    // An unexpected fault: the table the /listings handler reads is gone (not an unavailable store).
    await dropListings(ctx);

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
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 1);
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: 1, remaining: 4 });
    assert.deepEqual(await ctx.meter.keyUsage(alice, await keyId(ctx, 'alice'), '2026-11-01'), [{ day: '2026-11-20', requests: 1 }]);
    // The burst, unlike the quota, counts every request past step 4 whatever its outcome (500s included).
    await assertBurstEvents(ctx, alice, 1 + 7 + 1);

    const after = await ctx.get(`${V1}/offers`);
    assert.equal(after.statusCode, 200);
    assert.equal(intHeader(after, 'x-ratelimit-remaining'), 3);
  });

  it('a given-back 5xx restates every rate-limit field: RateLimit quota r agrees with X-RateLimit-Remaining', async (t) => {
    const ctx = await context(t, enthusiastLimits(5, 100));
    await dropListings(ctx);
    const res = await ctx.get(`${V1}/listings`);
    assert.equal(res.statusCode, 500);
    assert.equal(intHeader(res, 'x-ratelimit-remaining'), 5);
    assert.equal(intHeader(res, 'x-ratelimit-limit'), 5);
    assert.deepEqual(parseRateLimit(res).quota, { r: 5, t: 10.5 * 86_400 });
  });

  it('503 from the data store after the quota step: given back, never counted, then 200 again', SQLITE_ONLY, async (t) => {
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
    assert.equal(await storedUsed(ctx, alice, '2026-11'), 2);
    assert.deepEqual(await ctx.meter.keyUsage(alice, await keyId(ctx, 'alice'), '2026-11-01'), [{ day: '2026-11-20', requests: 2 }]);

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
