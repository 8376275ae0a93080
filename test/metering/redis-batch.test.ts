// On one Redis, the admissions asked for during one turn of the event loop go to Redis as one call of the
// admission script (src/metering/redis-meter-script.ts), which runs them one after another in the order asked: each
// with exactly the semantics it has alone (its limits, its own deadline, its own access check, its own undo
// when the reply is lost), and each caller gets its own answer.
// Each test runs on a Redis of its own (whatever TEST_STORE says), so that Redis's counts of script calls are
// the test's alone: on the machine's Redis, other test files and servers add theirs (44 calls in the 200 ms of
// the first test, once).
import { describe, it, type TestContext as NodeTestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import type { Admission, AdmitRequest } from '../../src/metering/meter.js';
import { MeterUnavailableError } from '../../src/metering/meter.js';
import { RedisMeter, STALE } from '../../src/metering/redis-meter.js';
import { ADMISSIONS_PER_CALL } from '../../src/metering/redis-admission-calls.js';
import { admissionKeys } from '../../src/metering/redis-meter-script.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { startPrivateRedis } from '../helpers/private-services.js';
import { meterBehindProxy } from '../helpers/reply-dropping-proxy.js';
import { freePort, waitFor } from '../helpers/server-process.js';

const T0 = Date.parse(FIXTURE_NOW); // 2026-11-20T12:00:00.000Z

/** Scripts Redis has run (EVAL and EVALSHA) since it started or was last told CONFIG RESETSTAT. */
async function scriptCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  const calls = (name: string) => Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}

/** A meter and an admin connection on a private Redis, stopped when the test ends. */
async function privateMeter(t: NodeTestContext, prefix: string): Promise<{ meter: RedisMeter; admin: Redis }> {
  const redis = await startPrivateRedis();
  const meter = new RedisMeter(redis.url, { prefix });
  const admin = new Redis(redis.url);
  t.after(async () => {
    admin.disconnect();
    await meter.close();
    await redis.destroy();
  });
  await meter.ready();
  return { meter, admin };
}

function valueOf<T>(outcome: PromiseSettledResult<T> | undefined): T {
  if (outcome?.status !== 'fulfilled') assert.fail(`expected a value, got ${String(outcome?.reason)}`);
  return outcome.value;
}

/** The error a settled promise was rejected with: a MeterUnavailableError. */
function unavailable(outcome: PromiseSettledResult<unknown> | undefined): MeterUnavailableError {
  if (outcome?.status !== 'rejected') assert.fail('expected a MeterUnavailableError, got a value');
  assert.ok(outcome.reason instanceof MeterUnavailableError, String(outcome.reason));
  return outcome.reason;
}

describe('the admissions of one turn go to one Redis together', () => {
  it('300 admissions of three accounts in one turn: exact limits, in the order asked, in far fewer script calls', async (t) => {
    const prefix = 'batch:';
    const { meter, admin } = await privateMeter(t, prefix);
    const [a, b, c] = [11, 12, 13];
    const limits = { monthly: 1000, perMinute: 100 };
    // b has used 960 of its month already; its script is loaded on the meter's connection (EVALSHA from now on).
    await meter.admit({ accountId: b, keyId: b * 10, limits, quota: false, now: T0 - 120_000 });
    await admin.set(admissionKeys(prefix, { accountId: b, keyId: b * 10, now: T0 })[1]!, 960);

    // Interleaved: a 150 (100 fit the window), b 100 (40 fit the month), c 50 (every other one counted).
    const requests: AdmitRequest[] = [];
    for (let i = 0; i < 300; i++) {
      const accountId = [a, a, a, b, b, c][i % 6]!;
      requests.push({ accountId, keyId: accountId * 10, limits, quota: accountId !== c || i % 12 === 5, now: T0 + i });
    }
    await admin.config('RESETSTAT');
    const results = await Promise.all(requests.map((r) => meter.admit(r)));
    // ADMISSIONS_PER_CALL a call at most: 18 full calls of 16 and one of 12.
    const calls = await scriptCalls(admin);
    assert.ok(calls < requests.length / 10, `${calls} script calls for ${requests.length} admissions`);
    assert.equal(calls, Math.ceil(requests.length / ADMISSIONS_PER_CALL));

    const of = (account: number) => results.filter((_, i) => requests[i]!.accountId === account);
    const burst = (r: Admission) => [r.burst.allowed, r.burst.remaining];
    // a: the first 100 asked for are admitted, one after another, then 50 refused.
    const forA = of(a);
    assert.deepEqual(forA.slice(0, 100).map(burst), Array.from({ length: 100 }, (_, i) => [true, 99 - i]));
    assert.deepEqual(forA.slice(0, 100).map((r) => r.quota?.used), Array.from({ length: 100 }, (_, i) => i + 1));
    assert.ok(forA.slice(100).every((r) => !r.burst.allowed && r.quota === null));
    // b: every one within the window; the first 40 counted (961..1000), the other 60 refused by the month.
    const forB = of(b);
    assert.ok(forB.every((r) => r.burst.allowed));
    assert.deepEqual(forB.map((r) => r.quota?.used), [...Array.from({ length: 40 }, (_, i) => 961 + i), ...Array<number>(60).fill(1000)]);
    assert.deepEqual(forB.map((r) => r.quota?.allowed), [...Array<boolean>(40).fill(true), ...Array<boolean>(60).fill(false)]);
    // c: every one admitted; those that count count 1..25, the others report the month so far.
    const forC = of(c);
    assert.ok(forC.every((r) => r.burst.allowed));
    assert.deepEqual(forC.map((r) => r.quota?.used), Array.from({ length: 50 }, (_, i) => Math.floor(i / 2) + 1));

    assert.equal(await meter.used(a, '2026-11'), 100);
    assert.equal(await meter.used(b, '2026-11'), 1000);
    assert.equal(await meter.used(c, '2026-11'), 25);
    assert.equal(await meter.burstUsed(a, T0 + 300), 100);
    assert.equal(await meter.burstUsed(b, T0 + 300), 100);
    assert.equal(await meter.burstUsed(c, T0 + 300), 50);
    assert.deepEqual(await meter.keyUsage(a, a * 10, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 100 }]);
    assert.deepEqual(await meter.keyUsage(b, b * 10, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 40 }]);
    assert.deepEqual(await meter.keyUsage(c, c * 10, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 25 }]);
  });

  it(`at most ${ADMISSIONS_PER_CALL} admissions a call: a turn asking for more sends more calls, in order`, async (t) => {
    const { meter, admin } = await privateMeter(t, 'cap:');
    const limits = { monthly: 10_000, perMinute: 10_000 };
    await meter.admit({ accountId: 1, keyId: 10, limits, quota: false, now: T0 });
    await admin.config('RESETSTAT');
    const n = 2 * ADMISSIONS_PER_CALL + 1;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => meter.admit({ accountId: 1, keyId: 10, limits, quota: true, now: T0 + i })));
    assert.deepEqual(results.map((r) => r.quota?.used), Array.from({ length: n }, (_, i) => i + 1));
    assert.equal(await scriptCalls(admin), 3);
  });

  it('a full call leaves at once: Redis runs it while the turn that asked for it is still going on', async (t) => {
    const { meter, admin } = await privateMeter(t, 'early:');
    const limits = { monthly: 10_000, perMinute: 10_000 };
    await meter.admit({ accountId: 1, keyId: 10, limits, quota: false, now: T0 });
    // Redis's own clock for each script it runs, as MONITOR reports it (seconds).
    const monitor = await admin.monitor();
    const ran: number[] = [];
    monitor.on('monitor', (time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'evalsha') ran.push(Number(time));
    });
    const asked = (i: number) => meter.admit({ accountId: 1, keyId: 10, limits, quota: true, now: T0 + i, deadline: Date.now() + 10_000 });
    // One turn: a full call, then 400 ms of work in the same turn, then one admission more.
    const first = Array.from({ length: ADMISSIONS_PER_CALL }, (_, i) => asked(i));
    const busyUntil = Date.now() + 400;
    while (Date.now() < busyUntil);
    const last = asked(ADMISSIONS_PER_CALL);
    const results = await Promise.all([...first, last]);
    assert.deepEqual(results.map((r) => r.quota?.used), Array.from({ length: ADMISSIONS_PER_CALL + 1 }, (_, i) => i + 1));
    await waitFor(async () => ran.length >= 2, 'both calls in MONITOR');
    monitor.disconnect();
    assert.equal(ran.length, 2, "the full call and the turn's last admission");
    assert.ok(ran[1]! - ran[0]! >= 0.3, `the full call ran ${((ran[1]! - ran[0]!) * 1000).toFixed(0)} ms before the turn's end`);
  });

  it("an admission past its deadline in Redis counts nothing; the call's others, with theirs ahead, count", async (t) => {
    const { meter, admin } = await privateMeter(t, 'deadline:');
    const limits = { monthly: 100, perMinute: 10 };
    const request = { accountId: 2, keyId: 20, limits, quota: true };
    await meter.admit({ accountId: 3, keyId: 30, limits, quota: true, now: T0 });
    await admin.config('RESETSTAT');
    // One turn: the first's deadline has passed already (Redis refuses it), the other two have seconds.
    const [late, next, other] = await Promise.allSettled([
      meter.admit({ ...request, now: T0, deadline: Date.now() - 1000 }),
      meter.admit({ ...request, now: T0 + 1, deadline: Date.now() + 5000 }),
      meter.admit({ accountId: 3, keyId: 30, limits, quota: true, now: T0 + 2, deadline: Date.now() + 5000 }),
    ]);
    assert.equal(await scriptCalls(admin), 1, 'the three went in one call');
    unavailable(late);
    // The next one ran after it in the same call, and found nothing of it: the window and the month hold it alone.
    assert.deepEqual(valueOf(next).burst, { allowed: true, remaining: 9, resetInMs: 60_000 });
    assert.deepEqual(valueOf(next).quota, { allowed: true, used: 1, period: '2026-11' });
    assert.equal(valueOf(other).quota?.used, 2);
    assert.equal(await meter.used(2, '2026-11'), 1);
    assert.equal(await meter.burstUsed(2, T0 + 10), 1);
    assert.deepEqual(await meter.keyUsage(2, 20, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 1 }]);
  });

  it("a stale access check refuses its own admission only: the call's others are counted, checked or not", async (t) => {
    const { meter, admin } = await privateMeter(t, 'stale:');
    const limits = { monthly: 100, perMinute: 10 };
    const req = (accountId: number, now: number) => ({ accountId, keyId: accountId * 10, limits, quota: true, now });
    await meter.raiseAccessVersion(4, 5);
    await admin.config('RESETSTAT');
    const results = await Promise.all([
      meter.admitChecked(req(4, T0), { held: 5, known: null }),
      meter.admitChecked(req(4, T0 + 1), { held: 4, known: null }),
      // No version of account 5 in Redis: a held principal of it never matches.
      meter.admitChecked(req(5, T0 + 2), { held: 9, known: null }),
      meter.admitChecked(req(4, T0 + 3), { held: 5, known: null }),
      // Read from PostgreSQL: no check, and its version is written.
      meter.admitChecked(req(6, T0 + 4), { held: null, known: 3 }),
    ]);
    assert.equal(await scriptCalls(admin), 1, 'the five went in one call');
    assert.deepEqual(
      results.map((r) => (r === STALE ? STALE : r.quota?.used)),
      [1, STALE, STALE, 2, 1],
    );
    assert.equal(await meter.used(4, '2026-11'), 2);
    assert.equal(await meter.burstUsed(4, T0 + 10), 2);
    assert.equal(await meter.used(5, '2026-11'), 0);
    assert.equal(await meter.burstUsed(5, T0 + 10), 0);
    assert.deepEqual(await meter.keyUsage(5, 50, '2026-11-01', '2026-11-30'), []);
    // Account 6's version was written by its admission in the call: a principal held at it is current.
    assert.notEqual(await meter.admitChecked(req(6, T0 + 5), { held: 3, known: null }), STALE);
  });

  it("an admission whose call in Redis fails (a key of the wrong type) fails alone; the call's others count", async (t) => {
    const { meter, admin } = await privateMeter(t, 'broken:');
    const limits = { monthly: 100, perMinute: 10 };
    await admin.set(admissionKeys('broken:', { accountId: 7, keyId: 70, now: T0 })[1]!, 'not a count');
    const [broken, fine] = await Promise.allSettled([
      meter.admit({ accountId: 7, keyId: 70, limits, quota: true, now: T0 }),
      meter.admit({ accountId: 8, keyId: 80, limits, quota: true, now: T0 }),
    ]);
    assert.match(String(unavailable(broken).cause), /not an integer/);
    assert.equal(valueOf(fine).quota?.used, 1);
    assert.equal(await meter.used(8, '2026-11'), 1);
  });

  it("a call whose records' hash is of the wrong type: its admitted fail as their own record's write did, the refused stand", async (t) => {
    const { meter, admin } = await privateMeter(t, 'badrecords:');
    const limits = { monthly: 100, perMinute: 1 };
    assert.equal((await meter.admit({ accountId: 9, keyId: 90, limits, quota: true, now: T0 })).burst.allowed, true);
    // The call's records go in its first admission's hash: account 10's of this minute.
    await admin.set(admissionKeys('badrecords:', { accountId: 10, keyId: 100, now: T0 + 1 })[6]!, 'not a hash');
    const [first, refused] = await Promise.allSettled([
      meter.admit({ accountId: 10, keyId: 100, limits, quota: true, now: T0 + 1 }),
      meter.admit({ accountId: 9, keyId: 90, limits, quota: true, now: T0 + 1 }),
    ]);
    assert.match(String(unavailable(first).cause), /WRONGTYPE/);
    assert.equal(valueOf(refused).burst.allowed, false, 'an admission the window refused records nothing, and its answer stands');
  });

  it('a call whose reply is lost with the connection: every admission of it is given back once Redis answers again', async (t) => {
    const { meter, proxy } = await meterBehindProxy(t, 'lostcall:');
    const limits = { monthly: 100, perMinute: 100 };
    const accounts = [21, 22, 23];
    for (const accountId of accounts) assert.equal((await meter.admit({ accountId, keyId: accountId * 10, limits, quota: true, now: T0 })).quota?.used, 1);

    // Redis runs the call (12 admissions, 4 an account) and counts them; the reply never reaches the server.
    proxy.dropNextReply();
    const lost = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => {
        const accountId = accounts[i % 3]!;
        return meter.admit({ accountId, keyId: accountId * 10, limits, quota: i % 2 === 0, now: T0 + 1 + i, deadline: Date.now() + 60_000 });
      }),
    );
    assert.ok(proxy.dropped(), 'the reply was not dropped');
    for (const outcome of lost) unavailable(outcome);

    const settled = async () => {
      for (const accountId of accounts) {
        if ((await meter.used(accountId, '2026-11')) !== 1 || (await meter.burstUsed(accountId, T0 + 100)) !== 1) return false;
      }
      return true;
    };
    await waitFor(settled, 'every admission of the lost call to be given back', 10_000).catch(() => {});
    for (const accountId of accounts) {
      assert.equal(await meter.used(accountId, '2026-11'), 1, `account ${accountId}: the month`);
      assert.equal(await meter.burstUsed(accountId, T0 + 100), 1, `account ${accountId}: the window`);
      assert.deepEqual(await meter.keyUsage(accountId, accountId * 10, '2026-11-01', '2026-11-30'), [{ day: '2026-11-20', requests: 1 }]);
    }
    // Once: the next counts stand, whatever attempts to give the lost ones back are still around.
    for (const accountId of accounts) assert.equal((await meter.admit({ accountId, keyId: accountId * 10, limits, quota: true, now: T0 + 50 })).quota?.used, 2);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const accountId of accounts) assert.equal(await meter.used(accountId, '2026-11'), 2);
  });

  it('Redis unreachable: every admission of a turn fails at once, not at its deadline', async (t) => {
    const meter = new RedisMeter(`redis://127.0.0.1:${await freePort()}`, { prefix: 'away:' });
    t.after(() => meter.close());
    const limits = { monthly: 100, perMinute: 10 };
    const started = Date.now();
    const answers = await Promise.allSettled(Array.from({ length: 5 }, (_, i) => meter.admit({ accountId: 1, keyId: 10, limits, quota: true, now: T0 + i, deadline: Date.now() + 5000 })));
    for (const answer of answers) unavailable(answer);
    assert.ok(Date.now() - started < 1000, `failed after ${Date.now() - started} ms`);
  });
});
