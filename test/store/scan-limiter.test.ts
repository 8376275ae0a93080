// The PostgreSQL list-scan limiter: never more scans at once than its slots, waiters served in order, and
// a request that cannot get a slot in time is refused (answered 503 with Retry-After) rather than left hanging.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScanLimiter, StoreBusyError } from '../../src/store/scan-limiter.js';

function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('ScanLimiter', () => {
  it('runs at most `slots` scans at once, and the waiting ones in the order they came', async () => {
    const limiter = new ScanLimiter(2, 60_000);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const gates = Array.from({ length: 6 }, gate);
    const scans = gates.map((g, i) =>
      limiter.run(async () => {
        started.push(i);
        running++;
        most = Math.max(most, running);
        await g.promise;
        running--;
        return i;
      }),
    );
    await turn();
    assert.deepEqual(started, [0, 1]);
    gates[1]!.open();
    await turn();
    assert.deepEqual(started, [0, 1, 2]);
    for (const g of gates) g.open();
    assert.deepEqual(await Promise.all(scans), [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5]);
    assert.equal(most, 2);
  });

  it('passes the slot on when a scan fails', async () => {
    const limiter = new ScanLimiter(1, 60_000);
    const failing = limiter.run(async () => {
      throw new Error('store went away');
    });
    const next = limiter.run(async () => 'ran');
    await assert.rejects(failing, /store went away/);
    assert.equal(await next, 'ran');
  });

  it('refuses a request that waited too long for a slot, and keeps serving the others', async () => {
    const limiter = new ScanLimiter(1, 50);
    const held = gate();
    const first = limiter.run(() => held.promise.then(() => 'first'));
    await assert.rejects(limiter.run(async () => 'never'), StoreBusyError);
    held.open();
    assert.equal(await first, 'first');
    assert.equal(await limiter.run(async () => 'after'), 'after', 'the refused waiter left no slot taken');
  });
});
