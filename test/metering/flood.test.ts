// One account floods (many requests in flight at once, past its quota) while another account sends requests
// beside it: the other account is served as if the flood were not there, the flooding account gets exactly
// its quota and is refused after it, and nothing answers 503 while the stores are healthy. On TEST_STORE=
// postgres without Redis (the PostgreSQL meter, where one account's admissions used to take every pooled
// connection and wait on its lock toward the deadline) and on SQLite. Latency is the bench's business
// (bench/flood.ts): a loaded test machine says nothing about it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestContext, V1 } from '../helpers/test-app.js';
import { accountId, meUsage, storedUsed } from '../helpers/metering-helpers.js';

/** Requests the flooding account keeps in flight, and how many it sends in all (well past its quota). */
const IN_FLIGHT = 100;
const SENT = 600;
const QUOTA = 250;
/** The other account's requests, one after another with a pause between them, for as long as the flood lasts. */
const BESIDE_PAUSE_MS = 10;

describe('one account floods the meter while another sends requests beside it', () => {
  it(`${IN_FLIGHT} in flight, ${SENT} sent on a quota of ${QUOTA}: exactly ${QUOTA} served, no 503, the other account all 200`, async (t) => {
    const ctx = await createTestContext({
      // No Redis: on TEST_STORE=postgres this is the PostgreSQL meter.
      env: {
        REDIS_URL: '',
        PLAN_LIMITS: JSON.stringify({ enthusiast: { monthly: QUOTA, perMinute: 100_000 }, addon: { monthly: 100_000, perMinute: 100_000 } }),
      },
    });
    t.after(() => ctx.close());
    assert.equal(ctx.config.redisUrl, null);

    const flood: string[] = [];
    let sent = 0;
    const worker = async () => {
      while (sent < SENT) {
        sent++;
        const res = await ctx.get(`${V1}/catalogue/1`, sent % 2 === 0 ? 'alice' : 'alice-second');
        flood.push(res.statusCode === 200 ? '200' : `${res.statusCode} ${(res.json() as { error: string }).error}`);
      }
    };
    const beside: string[] = [];
    let flooding = true;
    const besideAccount = (async () => {
      while (flooding || beside.length < 20) {
        const res = await ctx.get(`${V1}/catalogue/1`, 'bob');
        beside.push(res.statusCode === 200 ? '200' : `${res.statusCode} ${res.body}`);
        await sleep(BESIDE_PAUSE_MS);
      }
    })();
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    flooding = false;
    await besideAccount;

    // On failure, why: the first warnings of the meter or the store.
    if (flood.some((s) => s.startsWith('503'))) t.diagnostic(ctx.logs.text().split('\n').filter((l) => /unavailable|deadline/.test(l)).slice(0, 3).join('\n'));
    const tally = (list: string[]) => list.reduce<Record<string, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});
    assert.deepEqual(tally(flood), { '200': QUOTA, '429 quota_exceeded': SENT - QUOTA });
    assert.deepEqual(tally(beside), { '200': beside.length }, 'the other account is served in full');
    assert.equal(await storedUsed(ctx, accountId(ctx, 'alice'), '2026-11'), QUOTA, "the flooding account's count is its 200s");
    assert.deepEqual((await meUsage(ctx)).usage, { period: '2026-11', used: QUOTA, remaining: 0 });
    assert.equal(await storedUsed(ctx, accountId(ctx, 'bob'), '2026-11'), beside.length);
  });
});
