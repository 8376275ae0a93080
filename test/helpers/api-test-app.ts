/**
 * One test app for a whole API test file, shared by its tests (the pipeline, parameter and key battery
 * suites): every test starts with an empty burst window (the clock is manual), so burst counts compare
 * exactly and no file trips the per-minute limit. Each test file runs in a process of its own, so `ctx` is
 * that file's app.
 */
import { after, before, beforeEach } from 'node:test';
import { nextWindow } from './pipeline-helpers.js';
import { createTestContext, type TestContext } from './test-app.js';

export let ctx: TestContext;

/** The file's hooks: its app before the first test, closed after the last, a fresh burst window before each. */
export function useApiTestApp(): void {
  before(async () => {
    ctx = await createTestContext();
  });
  after(async () => {
    await ctx.close();
  });
  beforeEach(() => {
    nextWindow(ctx);
  });
}
