/**
 * Shared by the faults suites (faults-sqlite-lock, faults-give-back and faults-redis .test.ts): the fixture's
 * instant, a test app that may answer 500 on purpose, what a 503 must carry, and the real time an answer took
 * (the contract promises a 503 within 2 seconds, whatever the test clock says).
 */
import type { TestContext as NodeTestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { errorBody, retryAfter } from '../helpers/metering-helpers.js';

export const T0 = Date.parse(FIXTURE_NOW);

export async function context(t: NodeTestContext, env: Record<string, string>): Promise<TestContext> {
  // Some of these tests make the handler fail on purpose (500 server_error).
  const ctx = await createTestContext({ env, expectServerErrors: true });
  t.after(() => ctx.close());
  return ctx;
}

export function expectUnavailable(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 503, res.body);
  errorBody(res, 'service_unavailable');
  retryAfter(res);
}

/** Sends a request and measures how long its answer took (real time, whatever the test clock says). */
export async function timed(send: () => Promise<LightMyRequestResponse>): Promise<{ res: LightMyRequestResponse; ms: number }> {
  const started = performance.now();
  const res = await send();
  return { res, ms: Math.round(performance.now() - started) };
}
