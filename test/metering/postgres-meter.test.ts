/**
 * The database meter on PostgreSQL (DATABASE_URL=postgres://... without REDIS_URL), driven directly:
 * the sliding window, the quota, exactness under concurrency, give-back. Runs in the PostgreSQL pass.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { MeterUnavailableError } from '../../src/metering/meter.js';
import { PostgresMeter } from '../../src/metering/postgres-meter.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { fixture, FIXTURE_NOW } from '../helpers/fixture.js';
import { openTestStore, TEST_STORE } from '../helpers/test-app.js';

const NOW = Date.parse(FIXTURE_NOW);

describe('PostgresMeter', { skip: TEST_STORE !== 'postgres' ? 'runs in the PostgreSQL pass (TEST_STORE=postgres)' : false }, () => {
  let opened: Awaited<ReturnType<typeof openTestStore>>;
  let meter: PostgresMeter;
  let alice: number;
  let bob: number;
  let aliceKey: number;

  before(async () => {
    opened = await openTestStore();
    const loaded = await loadDataset(opened.store, fixture(), { keyPrefix: 'shelf', now: NOW });
    alice = loaded.accounts.alice!;
    bob = loaded.accounts.bob!;
    const key = await opened.store.db.selectFrom('api_keys').select('id').where('account_id', '=', alice).orderBy('id').executeTakeFirstOrThrow();
    aliceKey = key.id;
    meter = new PostgresMeter(opened.store);
  });
  after(() => opened.close());

  it('a sliding 60-second window: perMinute accepted, then refused until the oldest leaves', async () => {
    const limits = { perMinute: 3, monthly: 1000 };
    const at = (ms: number) => meter.admit({ accountId: alice, keyId: aliceKey, limits, quota: false, now: NOW + ms });
    assert.equal((await at(0)).burst.allowed, true);
    assert.equal((await at(10_000)).burst.allowed, true);
    assert.equal((await at(20_000)).burst.remaining, 0);
    const refused = await at(30_000);
    assert.deepEqual(refused.burst, { allowed: false, remaining: 0, resetInMs: 30_000 });
    assert.equal((await at(59_999)).burst.allowed, false);
    assert.equal((await at(60_000)).burst.allowed, true, 'the first request leaves the window at +60 s');
    assert.equal((await at(60_001)).burst.allowed, false);
  });

  it('the quota: monthly counted requests, then refused; a give-back frees one; a new month starts at 0', async () => {
    const limits = { perMinute: 1000, monthly: 2 };
    const admit = (now: number) => meter.admit({ accountId: bob, keyId: aliceKey, limits, quota: true, now });
    assert.equal((await admit(NOW)).quota?.used, 1);
    assert.equal((await admit(NOW)).quota?.used, 2);
    assert.deepEqual((await admit(NOW)).quota, { allowed: false, used: 2, period: '2026-11' });
    await meter.refund(bob, aliceKey, '2026-11', '2026-11-20');
    assert.equal(await meter.used(bob, '2026-11'), 1);
    assert.deepEqual((await admit(Date.parse('2026-12-01T00:00:00.000Z'))).quota, { allowed: true, used: 1, period: '2026-12' });
  });

  it('a give-back tried again with the same token (its first reply lost) gives back once', async () => {
    const limits = { monthly: 10, perMinute: 1000 };
    const { accounts } = await loadDataset(opened.store, { accounts: [{ ref: 'retried', email: 'retried@example.com', plan: 'addon' }] }, { keyPrefix: 'shelf', now: NOW });
    const account = accounts.retried!;
    for (let i = 0; i < 3; i++) await meter.admit({ accountId: account, keyId: aliceKey, limits, quota: true, now: NOW });
    await meter.refund(account, aliceKey, '2026-11', '2026-11-20', undefined, 'request-1');
    await meter.refund(account, aliceKey, '2026-11', '2026-11-20', undefined, 'request-1');
    assert.equal(await meter.used(account, '2026-11'), 2, 'the same request given back twice counts once');
    await meter.refund(account, aliceKey, '2026-11', '2026-11-20', undefined, 'request-2');
    assert.equal(await meter.used(account, '2026-11'), 1, 'another request is given back');
  });

  it('exact under concurrency: 40 admissions in flight with 7 slots left admit exactly 7', async () => {
    const { accounts } = await loadDataset(opened.store, { accounts: [{ ref: 'race', email: 'race@example.com', plan: 'addon' }] }, { keyPrefix: 'shelf', now: NOW });
    const limits = { perMinute: 7, monthly: 1000 };
    const results = await Promise.all(
      Array.from({ length: 40 }, () => meter.admit({ accountId: accounts.race!, keyId: aliceKey, limits, quota: true, now: NOW })),
    );
    assert.equal(results.filter((r) => r.burst.allowed).length, 7);
    assert.equal(await meter.used(accounts.race!, '2026-11'), 7);
  });

  it('admissions asked for together are decided one after another, in order: the window moves and a month turns between them', async () => {
    const { accounts } = await loadDataset(
      opened.store,
      { accounts: [{ ref: 'together', email: 'together@example.com', plan: 'addon' }], keys: [{ ref: 'together', account: 'together', name: 'k', scopes: [] }] },
      { keyPrefix: 'shelf', now: NOW },
    );
    const account = accounts.together!;
    const key = (await opened.store.db.selectFrom('api_keys').select('id').where('account_id', '=', account).executeTakeFirstOrThrow()).id;
    const limits = { perMinute: 2, monthly: 1 };
    const admit = (now: number, quota = true) => meter.admit({ accountId: account, keyId: key, limits, quota, now });
    const endOfMonth = Date.parse('2026-11-30T23:59:30.000Z');
    // One turn of the event loop: one transaction for all six.
    const results = await Promise.all([
      admit(endOfMonth),
      admit(endOfMonth + 10_000),
      admit(endOfMonth + 20_000),
      admit(endOfMonth + 60_000),
      admit(endOfMonth + 71_000),
      admit(endOfMonth + 72_000, false),
    ]);
    assert.deepEqual(
      results.map((r) => [r.burst.allowed, r.burst.remaining, r.burst.resetInMs, r.quota]),
      [
        [true, 1, 60_000, { allowed: true, used: 1, period: '2026-11' }],
        [true, 0, 50_000, { allowed: false, used: 1, period: '2026-11' }],
        [false, 0, 40_000, null],
        [true, 0, 10_000, { allowed: true, used: 1, period: '2026-12' }],
        [true, 0, 49_000, { allowed: false, used: 1, period: '2026-12' }],
        [false, 0, 48_000, null],
      ],
    );
    assert.equal(await meter.used(account, '2026-11'), 1);
    assert.equal(await meter.used(account, '2026-12'), 1);
    assert.equal(await meter.burstUsed(account, endOfMonth + 72_000), 2, 'the window holds the last two admitted');
    assert.deepEqual(await meter.keyUsage(account, key, '2026-11-30', '2026-12-01'), [
      { day: '2026-12-01', requests: 1 },
      { day: '2026-11-30', requests: 1 },
    ]);
  });

  it("an account whose lock is held elsewhere: its admissions wait in memory, refused at their deadline; other accounts are served meanwhile", async () => {
    // Made-up account ids (the meter needs no account row), far from any other test schema's: advisory
    // locks are one namespace for the whole database.
    const held = 1_500_000_000 + randomInt(100_000_000);
    const other = held + 1;
    const limits = { perMinute: 1000, monthly: 1000 };
    const locker = new pg.Client({ connectionString: opened.databaseUrl });
    await locker.connect();
    try {
      await locker.query('select pg_advisory_lock($1::int, $2::int)', [0x5e1f, held]);
      const deadline = Date.now() + 800;
      // Far more than the pool's 10 connections: waiting for its lock, this account must hold at most one.
      const waiting = Array.from({ length: 40 }, () =>
        meter.admit({ accountId: held, keyId: aliceKey, limits, quota: true, now: NOW, deadline }).then(
          () => 'admitted',
          (error: unknown) => (error instanceof MeterUnavailableError ? 'unavailable' : String(error)),
        ),
      );
      for (let i = 0; i < 15; i++) {
        const admitted = await meter.admit({ accountId: other, keyId: aliceKey, limits, quota: true, now: NOW, deadline: Date.now() + 1000 });
        assert.equal(admitted.quota?.used, i + 1, 'another account is admitted while the first waits for its lock');
      }
      assert.deepEqual([...new Set(await Promise.all(waiting))], ['unavailable']);
    } finally {
      await locker.query('select pg_advisory_unlock($1::int, $2::int)', [0x5e1f, held]).catch(() => {});
      await locker.end();
    }
    // The transaction that waited for the lock reached its COMMIT past its deadline: rolled back.
    assert.equal(await meter.used(held, '2026-11'), 0, 'nothing refused was counted');
    assert.equal((await meter.admit({ accountId: held, keyId: aliceKey, limits, quota: true, now: NOW })).quota?.used, 1, 'the account is admitted again');
  });
});
