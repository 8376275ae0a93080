/**
 * The meter on Redis Cluster (REDIS_CLUSTER_URLS), unchanged: a private three-master cluster on local
 * ports. Every key one admission touches shares one hash slot, accounts spread over the masters, limits
 * stay exact across masters and servers, and a master that stops answering costs only its own accounts
 * (503 within the deadline) while the others go on. The owners' statistics live on the cluster too, one
 * pipeline per account. The shared metering suites (test/metering) also run whole against the cluster, in a
 * child process with TEST_REDIS_CLUSTER_URLS set.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Cluster } from 'ioredis';
import { ConfigError, loadConfig } from '../../src/config.js';
import { REQUEST_DEADLINE_MS } from '../../src/deadline.js';
import { MeterUnavailableError } from '../../src/metering/meter.js';
import { dayOf } from '../../src/metering/periods.js';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { admissionKeys } from '../../src/metering/redis-meter-script.js';
import { RedisUsageStats } from '../../src/usage-stats/redis-usage-stats.js';
import type { RequestRecord } from '../../src/usage-stats/usage-stats.js';
import { FIXTURE_NOW } from '../helpers/fixture.js';
import { accountId, enthusiastLimits, errorBody } from '../helpers/metering-helpers.js';
import { startRedisCluster, type PrivateRedisCluster } from '../helpers/redis-cluster.js';
import { ROOT, waitFor } from '../helpers/server-process.js';
import { createTestContext, V1 } from '../helpers/test-app.js';

const T0 = Date.parse(FIXTURE_NOW);
/** Slack over a deadline for a loaded machine's timers; the contract's bound is 2 seconds. */
const DEADLINE_SLACK_MS = 600;

describe('REDIS_CLUSTER_URLS', () => {
  test('takes comma-separated seed nodes, refuses other URLs, and refuses REDIS_URL alongside', () => {
    const config = loadConfig({ REDIS_CLUSTER_URLS: 'redis://10.0.0.1:7000, redis://10.0.0.2:7000' });
    assert.deepEqual(config.redisClusterUrls, ['redis://10.0.0.1:7000', 'redis://10.0.0.2:7000']);
    assert.equal(config.redisUrl, null);
    assert.equal(loadConfig({}).redisClusterUrls, null);
    assert.throws(() => loadConfig({ REDIS_CLUSTER_URLS: 'redis://10.0.0.1:7000,10.0.0.2:7000' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /^REDIS_CLUSTER_URLS: expected comma-separated redis:\/\/host:port .*"10\.0\.0\.2:7000"/);
      return true;
    });
    assert.throws(
      () => loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_URLS: 'redis://10.0.0.1:7000' }),
      /REDIS_CLUSTER_URLS: set either REDIS_URL \(one Redis\) or REDIS_CLUSTER_URLS \(a Redis Cluster\), not both/,
    );
    assert.throws(
      () => loadConfig({ REDIS_CLUSTER_URLS: 'redis://10.0.0.1:7000', REDIS_KEY_PREFIX: '{shelfapi}:' }),
      /REDIS_KEY_PREFIX: must not contain \{ or \} on a Redis Cluster/,
    );
    assert.equal(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: '{shelfapi}:' }).redisKeyPrefix, '{shelfapi}:');
  });
});

describe('the meter on a three-master Redis Cluster', () => {
  let cluster: PrivateRedisCluster;
  const meters: RedisMeter[] = [];
  const prefix = `cluster:${randomUUID()}:`;

  /** A meter on the cluster, as one more server; closed after the suite. */
  async function meter(): Promise<RedisMeter> {
    const m = new RedisMeter({ cluster: cluster.urls }, { prefix });
    meters.push(m);
    await m.ready();
    return m;
  }

  /** The master holding an account's keys. */
  const masterOf = (accountId: number) => cluster.nodeOf(admissionKeys(prefix, { accountId, keyId: 1, now: T0 })[0] ?? '');

  /** Fresh account ids (from `from` up), one on each master (checked with CLUSTER KEYSLOT). */
  async function oneOnEachMaster(from: number): Promise<number[]> {
    const byPort = new Map<number, number>();
    for (let id = from; byPort.size < cluster.nodes.length && id < from + 1000; id++) {
      const node = await masterOf(id);
      if (!byPort.has(node.port)) byPort.set(node.port, id);
    }
    assert.equal(byPort.size, 3, 'accounts on all three masters');
    return [...byPort.values()];
  }

  before(async () => {
    cluster = await startRedisCluster();
  });

  after(async () => {
    for (const m of meters) await m.close();
    await cluster?.stop();
  });

  test('every key one admission touches hashes to one slot, and accounts land on different masters', async () => {
    const slots = async (keys: string[]) => {
      const client = new Cluster(cluster.urls.map((url) => ({ host: '127.0.0.1', port: Number(new URL(url).port) })));
      try {
        await new Promise((resolve) => client.once('ready', resolve));
        return await Promise.all(keys.map(async (key) => Number(await client.call('CLUSTER', 'KEYSLOT', key))));
      } finally {
        client.disconnect();
      }
    };
    const ports = new Set<number>();
    for (const [accountId, keyId, now] of [
      [1, 10, T0],
      [2, 20, Date.parse('2026-12-31T23:59:59.999Z')],
      [77_777, 123_456, Date.parse('2027-01-01T00:00:00.000Z')],
      ...(await oneOnEachMaster(100)).map((id) => [id, id * 10, T0]),
    ] as Array<[number, number, number]>) {
      const keys = admissionKeys(prefix, { accountId, keyId, now });
      assert.equal(keys.length, 7);
      assert.equal(new Set(keys).size, 7, 'seven different keys (the access version, its marks and the admission\'s record last)');
      const found = await slots(keys);
      assert.equal(new Set(found).size, 1, `account ${accountId}: ${keys.join(' ')} hash to slots ${found.join(' ')}`);
      // Nothing global: another account's keys are other keys.
      const other = admissionKeys(prefix, { accountId: accountId + 1, keyId, now });
      for (const key of other) assert.ok(!keys.includes(key), `${key} is shared by two accounts`);
      ports.add((await cluster.nodeOf(keys[0] ?? '')).port);
    }
    assert.equal(ports.size, 3, 'the accounts checked span all three masters');
  });

  test('exactly K of N concurrent admissions per account, from two servers, with accounts on every master', async () => {
    const [a, b] = [await meter(), await meter()];
    const spread = await oneOnEachMaster(200);
    const perMinute = 7;
    const N = 24;
    const results = await Promise.all(
      spread.flatMap((account) =>
        Array.from({ length: N }, (_, i) =>
          (i % 2 === 0 ? a : b).admit({ accountId: account, keyId: account * 10, limits: { monthly: 1000, perMinute }, quota: true, now: T0 + i }),
        ),
      ),
    );
    spread.forEach((account, n) => {
      const mine = results.slice(n * N, (n + 1) * N);
      assert.equal(mine.filter((r) => r.burst.allowed).length, perMinute, `account ${account}: burst admitted`);
    });
    for (const account of spread) assert.equal(await a.used(account, '2026-11'), perMinute);

    // The quota, two minutes later (the window is empty again): K = 5 left of the month, N in flight.
    const monthly = perMinute + 5;
    const later = T0 + 120_000;
    const quota = await Promise.all(
      spread.flatMap((account) =>
        Array.from({ length: N }, (_, i) =>
          (i % 2 === 0 ? a : b).admit({ accountId: account, keyId: account * 10, limits: { monthly, perMinute: 1000 }, quota: true, now: later + i }),
        ),
      ),
    );
    spread.forEach((account, n) => {
      const mine = quota.slice(n * N, (n + 1) * N);
      assert.equal(mine.filter((r) => r.quota?.allowed === true).length, 5, `account ${account}: quota admitted`);
      assert.equal(mine.filter((r) => r.quota?.allowed === false).length, N - 5);
    });
    for (const account of spread) assert.equal(await b.used(account, '2026-11'), monthly);
  });

  test('month rollover, refund, key usage and last use, per account on its own master', async () => {
    const m = await meter();
    const limits = { monthly: 3, perMinute: 1000 };
    const lastOfNovember = Date.parse('2026-11-30T23:59:59.000Z');
    const firstOfDecember = Date.parse('2026-12-01T00:00:01.000Z');
    for (const account of await oneOnEachMaster(300)) {
      const key = account * 10;
      for (let i = 0; i < 3; i++) assert.equal((await m.admit({ accountId: account, keyId: key, limits, quota: true, now: lastOfNovember })).quota?.allowed, true);
      assert.equal((await m.admit({ accountId: account, keyId: key, limits, quota: true, now: lastOfNovember })).quota?.allowed, false);
      // December is a new month: its own count from zero.
      assert.deepEqual((await m.admit({ accountId: account, keyId: key + 1, limits, quota: true, now: firstOfDecember })).quota, {
        allowed: true,
        used: 1,
        period: '2026-12',
      });
      assert.equal(await m.used(account, '2026-11'), 3);
      // A 5xx gives one November request back, to the month and the key's day.
      await m.refund(account, key, '2026-11', '2026-11-30');
      assert.equal(await m.used(account, '2026-11'), 2);
      assert.deepEqual(await m.keyUsage(account, key, '2026-11-01', '2026-12-31'), [{ day: '2026-11-30', requests: 2 }]);
      assert.deepEqual(await m.keyUsage(account, key + 1, '2026-11-01', '2026-12-31'), [{ day: '2026-12-01', requests: 1 }]);
      assert.deepEqual(
        await m.lastUsed(account, [key, key + 1, key + 2]),
        new Map([
          [key, new Date(lastOfNovember).toISOString()],
          [key + 1, new Date(firstOfDecember).toISOString()],
        ]),
      );
    }
  });

  test('a master that stops answering: its accounts get MeterUnavailableError by the deadline, the others go on', async (t) => {
    const m = await meter();
    const limits = { monthly: 1000, perMinute: 1000 };
    const [stalled = 0, ...others] = await oneOnEachMaster(400);
    const node = await masterOf(stalled);
    assert.equal((await m.admit({ accountId: stalled, keyId: 1, limits, quota: true, now: T0 })).quota?.used, 1);
    assert.equal(await m.ping(), true);
    cluster.pause(node.port);
    try {
      const started = Date.now();
      const deadline = started + REQUEST_DEADLINE_MS;
      await assert.rejects(m.admit({ accountId: stalled, keyId: 1, limits, quota: true, now: T0, deadline }), MeterUnavailableError);
      t.diagnostic(`stopped master: MeterUnavailableError after ${Date.now() - started} ms`);
      assert.ok(Date.now() - started <= REQUEST_DEADLINE_MS + DEADLINE_SLACK_MS, `gave up after ${Date.now() - started} ms`);
      for (const account of others) {
        const admitted = await m.admit({ accountId: account, keyId: 1, limits, quota: true, now: T0, deadline: Date.now() + REQUEST_DEADLINE_MS });
        assert.equal(admitted.quota?.allowed, true, `account ${account} on a master that answers`);
      }
      // Readiness says the meter cannot serve every account.
      assert.equal(await m.ping(), false);
    } finally {
      cluster.resume(node.port);
    }
    // The stalled master ran the admission when it resumed, past its deadline: nothing was counted.
    await waitFor(async () => (await m.admit({ accountId: stalled, keyId: 1, limits, quota: false, now: T0 + 1 })).burst.allowed, 'the master to answer again');
    assert.equal(await m.used(stalled, '2026-11'), 1);
    assert.equal(await m.ping(), true);
  });

  test('over HTTP: 503 for the account on a stopped master within the deadline, 200 for one on another', async (t) => {
    const ctx = await createTestContext({ env: { REDIS_CLUSTER_URLS: cluster.urls.join(','), ...enthusiastLimits(100, 100) } });
    t.after(() => ctx.close());
    assert.equal((await ctx.get(`${V1}/me`, 'alice')).statusCode, 200);
    // The slot depends on the account id only, whatever the key prefix.
    const alice = await masterOf(accountId(ctx, 'alice'));
    assert.notEqual((await masterOf(accountId(ctx, 'bob'))).port, alice.port, 'alice and bob on different masters');
    cluster.pause(alice.port);
    try {
      const started = Date.now();
      const res = await ctx.get(`${V1}/me`, 'alice');
      assert.equal(res.statusCode, 503, res.body);
      errorBody(res, 'service_unavailable');
      t.diagnostic(`stopped master over HTTP: 503 after ${Date.now() - started} ms`);
      assert.ok(Date.now() - started <= 2000, `503 after ${Date.now() - started} ms`);
      assert.equal((await ctx.get(`${V1}/me`, 'bob')).statusCode, 200);
    } finally {
      cluster.resume(alice.port);
    }
    await waitFor(async () => (await ctx.get(`${V1}/me`, 'alice')).statusCode === 200, 'alice served again');
  });

  test('SCRIPT FLUSH on every master: the next admission of each account counts exactly once', async () => {
    const m = await meter();
    const limits = { monthly: 1000, perMinute: 1000 };
    const accounts = await oneOnEachMaster(700);
    for (const account of accounts) assert.equal((await m.admit({ accountId: account, keyId: 1, limits, quota: true, now: T0 })).quota?.used, 1);
    const admin = new Cluster(cluster.urls.map((url) => ({ host: '127.0.0.1', port: Number(new URL(url).port) })));
    try {
      await new Promise((resolve) => admin.once('ready', resolve));
      for (const node of admin.nodes('master')) assert.equal(await node.script('FLUSH'), 'OK');
    } finally {
      admin.disconnect();
    }
    for (const account of accounts) {
      assert.equal((await m.admit({ accountId: account, keyId: 1, limits, quota: true, now: T0 + 1 })).quota?.used, 2, `account ${account}`);
      assert.equal(await m.used(account, '2026-11'), 2);
    }
  });

  test("the owners' statistics: one flush writes accounts on every master; a failed account's records alone are kept", async (t) => {
    const stats = new RedisUsageStats({ cluster: cluster.urls }, { prefix });
    t.after(() => stats.close());
    await stats.ready();
    const accounts = await oneOnEachMaster(600);
    const day = dayOf(T0);
    const record = (accountId: number, i: number): RequestRecord => ({
      accountId,
      keyId: accountId * 10,
      at: T0 + i,
      outcome: 'counted',
      address: `192.0.2.${i}`,
      used: true,
      rejection: null,
    });
    const counted = async (accountId: number) => (await stats.keyOutcomes(accountId, accountId * 10, day, day))[0]?.counts.counted;
    for (const account of accounts) for (let i = 1; i <= 3; i++) stats.record(record(account, i));
    await stats.flush();
    for (const account of accounts) {
      assert.equal(await counted(account), 3, `account ${account}`);
      assert.deepEqual((await stats.lastUse(account, [account * 10])).get(account * 10), { at: new Date(T0 + 3).toISOString(), address: '192.0.2.3' });
    }

    // One account's day count cannot be written (a key of the wrong type): its pipeline fails, the others' do not.
    const [failing = 0, ...others] = accounts;
    const admin = new Cluster(cluster.urls.map((url) => ({ host: '127.0.0.1', port: Number(new URL(url).port) })));
    t.after(() => admin.disconnect());
    const dayKey = `${prefix}stats:{${failing}}:out:${failing * 10}:${day}`;
    const saved = await admin.hgetall(dayKey);
    await admin.del(dayKey);
    await admin.set(dayKey, 'not a hash');
    for (const account of accounts) for (let i = 4; i <= 5; i++) stats.record(record(account, i));
    await assert.rejects(stats.flush(), /WRONGTYPE/);
    for (const account of others) assert.equal(await counted(account), 5, `account ${account} written by the failed flush`);
    await admin.del(dayKey);
    await admin.hset(dayKey, saved);
    await stats.flush();
    assert.equal(await counted(failing), 5, 'the failed account written by the next flush');
    for (const account of others) assert.equal(await counted(account), 5, `account ${account} not written twice`);
  });

  test('the shared metering suites pass whole against the cluster (TEST_STORE=postgres, TEST_REDIS_CLUSTER_URLS)', async (t) => {
    const files = [
      'test/metering/meter-direct.test.ts',
      'test/metering/meter-limits-http.test.ts',
      'test/metering/meter-headers-usage.test.ts',
      'test/metering/concurrency.test.ts',
      'test/metering/faults-give-back.test.ts',
      'test/metering/faults-redis.test.ts',
      'test/usage-stats/usage-stats.test.ts',
    ];
    const scriptsBefore = await cluster.scriptsRun();
    // The runner's own variables (NODE_TEST_CONTEXT) would make the child report to this run instead.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NODE_TEST')));
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=tap', ...files], {
      cwd: ROOT,
      env: { ...env, TEST_STORE: 'postgres', TEST_REDIS_CLUSTER_URLS: cluster.urls.join(',') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(output)?.[1] ?? -1);
    assert.equal(code, 0, output.split('\n').filter((line) => /not ok|Error|error:|expected|actual|timed out|failureType/.test(line)).slice(0, 40).join('\n'));
    assert.equal(count('fail'), 0);
    assert.ok(count('pass') >= 10, `passed ${count('pass')}`);
    // The suites name the meter they ran against: the Redis meter, and it was the cluster's masters that ran
    // its scripts. (The fixture's accounts, alice and bob, live on two of the three masters.)
    assert.match(output, /the meter \(RedisMeter\), called directly/);
    const scriptsAfter = await cluster.scriptsRun();
    const ran = [...scriptsAfter].map(([port, calls]) => calls - (scriptsBefore.get(port) ?? 0));
    t.diagnostic(`scripts run per master: ${ran.join(', ')}`);
    assert.ok(ran.reduce((sum, n) => sum + n, 0) > 100, `the masters ran ${ran.join(', ')} scripts`);
    assert.ok(ran.filter((n) => n > 0).length >= 2, `scripts ran on more than one master: ${ran.join(', ')}`);
    t.diagnostic(`shared suites on the cluster: ${count('pass')} passed, ${count('skipped')} skipped`);
  });

  // Last: the cluster keeps one master fewer afterwards.
  test('a master that dies: 503s for its accounts by the deadline, the others served, the process unharmed', async (t) => {
    const m = await meter();
    const limits = { monthly: 1000, perMinute: 1000 };
    const [lost = 0, ...others] = await oneOnEachMaster(500);
    const node = await masterOf(lost);
    await cluster.kill(node.port);
    // Several rounds: the client refreshes its slot map meanwhile and must neither crash nor hang.
    for (let round = 0; round < 5; round++) {
      const started = Date.now();
      await assert.rejects(
        m.admit({ accountId: lost, keyId: 1, limits, quota: true, now: T0, deadline: started + REQUEST_DEADLINE_MS }),
        MeterUnavailableError,
      );
      t.diagnostic(`dead master, round ${round + 1}: MeterUnavailableError after ${Date.now() - started} ms`);
      assert.ok(Date.now() - started <= REQUEST_DEADLINE_MS + DEADLINE_SLACK_MS, `gave up after ${Date.now() - started} ms`);
      for (const account of others) {
        const admitted = await m.admit({ accountId: account, keyId: 1, limits, quota: true, now: T0, deadline: Date.now() + REQUEST_DEADLINE_MS });
        assert.equal(admitted.quota?.used, round + 1, `account ${account} on a master that answers`);
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    assert.equal(await m.ping(), false, 'not ready while a master is gone');
  });
});
