// The sweep of every chunk of the request log (src/usage-stats/request-log-chunks.ts) goes on a slice at a
// time: on a busy server a slice every write held the request thread 7 ms 14-21 times a second for the
// sweep's first seconds after a start. A slice is now taken at most every FULL_SWEEP_EVERY_MS, whatever the
// number of writes; the writes in between go on sweeping their own chunks. A write that fails commits
// nothing, and the next one takes the same slice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChunkSweeps, FULL_SWEEP_EVERY_MS } from '../../src/usage-stats/request-log-chunks.js';

describe('the sweep of every chunk', () => {
  it(`takes a slice at most every ${FULL_SWEEP_EVERY_MS} ms, and goes on where it was`, () => {
    const sweeps = new ChunkSweeps([]);
    assert.equal(sweeps.plan(0).fullAfter, null, 'none under way');
    sweeps.sweepAll();
    const first = sweeps.plan(1_000);
    assert.equal(first.fullAfter, 0, 'the first slice at the first write');
    first.commit(null, 2_000);
    for (const at of [1_001, 1_100, 1_000 + FULL_SWEEP_EVERY_MS - 1]) {
      const between = sweeps.plan(at);
      assert.equal(between.fullAfter, null, `no slice at ${at}`);
      between.commit([10, 20], null);
    }
    const failed = sweeps.plan(1_000 + FULL_SWEEP_EVERY_MS);
    assert.equal(failed.fullAfter, 2_000, 'the next slice once due');
    const again = sweeps.plan(1_001 + FULL_SWEEP_EVERY_MS);
    assert.equal(again.fullAfter, 2_000, 'a write that failed (no commit): the same slice at the next');
    again.commit(null, 4_000);
    const last = sweeps.plan(1_001 + 2 * FULL_SWEEP_EVERY_MS);
    assert.equal(last.fullAfter, 4_000);
    last.commit(null, null);
    assert.equal(sweeps.plan(1_000_000).fullAfter, null, 'over');
  });

  it("keeps sweeping each write's own chunks at their ages meanwhile", () => {
    const sweeps = new ChunkSweeps([15_000]);
    sweeps.sweepAll();
    sweeps.plan(0).commit([1, 5], 2_000);
    const plan = sweeps.plan(15_000);
    assert.deepEqual(plan.ranges, [[1, 5]]);
    assert.equal(plan.fullAfter, 2_000);
  });
});
