// A started server keeps a request's objects in the young generation whatever came before
// (src/observability/heap-growth.ts): with V8's allocation-site pretenuring, a burst in which nearly all of a
// site's objects survived could send that site's objects to the old generation for the rest of the process's
// life, and a third to a half of SQLite servers ran 20-40% slower under load. This starts a server in this
// process, then makes such bursts at several sites and counts the full collections their short-lived
// objects cause afterwards. Without the setting (`node --allocation-site-pretenuring --test` on this file)
// most sites are tenured and the count is in the tens.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { keepAllocationsYoung } from '../../src/observability/heap-growth.js';
import { startServer, type RunningServer } from '../../src/server.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A site of its own (each compiled function's literal is one allocation site), as a route's handler is. */
function newSite(): (i: number) => { id: number; tags: number[]; inner: { n: number } } {
  return new Function('i', 'return { id: i, tags: [i, i + 1], inner: { n: i } };') as (i: number) => { id: number; tags: number[]; inner: { n: number } };
}

/** Full collections while `make` makes short-lived objects, after a burst in which all it made survived. */
async function fullCollectionsAfterBurst(make: ReturnType<typeof newSite>): Promise<number> {
  let held: unknown[] = [];
  for (let i = 0; i < 300_000; i++) held.push(make(i));
  held = [];
  let full = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) full++;
  });
  observer.observe({ entryTypes: ['gc'] });
  let sum = 0;
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 500_000; i++) sum += make(i).inner.n & 1;
    await turn();
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
  observer.disconnect();
  assert.ok(sum > 0 && held.length === 0);
  return full;
}

describe('where a request’s objects are made', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-pretenuring-'));
  let server: RunningServer | null = null;
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('short-lived objects stay young after a burst in which all of them survived', async (t) => {
    const config = loadConfig({ DATABASE_URL: join(dir, 'store.sqlite'), PORT: '0', EXPORT_DIR: 'off', LOG_LEVEL: 'silent' });
    server = await startServer(config, { ops: false });
    const counts: number[] = [];
    for (let site = 0; site < 6; site++) counts.push(await fullCollectionsAfterBurst(newSite()));
    t.diagnostic(`full collections after each site's burst: ${counts.join(', ')}`);
    // 10,000,000 objects a site, each dead at once: in the young generation they need no full collection
    // (one may fall due from what the burst left); made in the old one, about 20 a site.
    const total = counts.reduce((a, b) => a + b, 0);
    assert.ok(total <= 2 * counts.length, `short-lived objects caused ${total} full collections over ${counts.length} sites (${counts.join(', ')})`);
  });

  it('leaves the setting alone when node was started with it either way (a flag or NODE_OPTIONS)', () => {
    assert.equal(keepAllocationsYoung(['--allocation-site-pretenuring'], ''), false);
    assert.equal(keepAllocationsYoung([], '--max-old-space-size=512 --no-allocation_site_pretenuring'), false);
    assert.equal(keepAllocationsYoung([], '--max-old-space-size=512'), true);
  });
});
