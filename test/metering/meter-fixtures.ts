/**
 * Shared by the meter suites (meter-direct, meter-limits-http and meter-headers-usage .test.ts): the fixture's
 * instant and the November numbers the headers are checked against, one test app per test (alice on small
 * enthusiast limits), and what a 200, a rate_limited and a quota_exceeded answer must each carry.
 */
import type { TestContext as NodeTestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { enthusiastLimits, errorBody, parseRateLimit, retryAfter, unixSeconds } from '../helpers/metering-helpers.js';
export const T0 = Date.parse(FIXTURE_NOW); // 2026-11-20T12:00:00.000Z
/** 2026-12-01T00:00:00Z, the November quota reset, in Unix seconds. */
export const NOV_RESET = unixSeconds('2026-12-01T00:00:00.000Z');
/** Seconds from FIXTURE_NOW to that reset: 10.5 days. */
export const NOV_LEFT_S = 10.5 * 86_400;
export const NOVEMBER_S = 30 * 86_400; // 2592000
export const DECEMBER_S = 31 * 86_400; // 2678400

export async function context(t: NodeTestContext, env: Record<string, string> = enthusiastLimits(5, 10)): Promise<TestContext> {
  const ctx = await createTestContext({ env });
  t.after(() => ctx.close());
  return ctx;
}

export function expectOk(res: LightMyRequestResponse, what = ''): void {
  assert.equal(res.statusCode, 200, `${what} ${res.body}`);
}

export function expectRateLimited(res: LightMyRequestResponse): number {
  assert.equal(res.statusCode, 429, res.body);
  errorBody(res, 'rate_limited');
  const seconds = retryAfter(res);
  // The IETF field tells the same story as Retry-After: nothing left, a slot frees in t seconds.
  assert.deepEqual(parseRateLimit(res).burst, { r: 0, t: seconds });
  return seconds;
}

export function expectQuotaExceeded(res: LightMyRequestResponse): number {
  assert.equal(res.statusCode, 429, res.body);
  errorBody(res, 'quota_exceeded');
  return retryAfter(res);
}
