/**
 * PostgreSQL + Redis: a request whose server holds the key's principal makes one round trip, to Redis, and
 * the admission script checks the principal's access version there (src/metering/redis-access-versions.ts).
 * These tests hold the next-request rule on that path: a change through the services is fenced in Redis
 * before it returns (src/metering/access-change.ts), a change typed into psql reaches Redis through the NOTIFY
 * of migration 0014 within a second, a lost LISTEN connection stops the use of held principals until it is
 * back (src/store/version-listener.ts), and a change is refused, with nothing written, when Redis cannot be
 * reached. SQLite's held principals: held-principals-sqlite.test.ts. On PostgreSQL without Redis every request
 * reads the store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Dataset } from '../../src/domain/dataset.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { buildApp, versionListenerOf, type App } from '../../src/http/app.js';
import { AccessChangeUnavailableError, registerAccessFence } from '../../src/metering/access-change.js';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { Metrics } from '../../src/observability/metrics.js';
import { changePlan } from '../../src/services/accounts.service.js';
import { OPERATOR } from '../../src/services/actor.js';
import { revokeKey, setKeyScopes } from '../../src/services/keys.service.js';
import { openStore, type Store } from '../../src/store/database.js';
import { assertError, keyIdOf, keyOf, url } from '../helpers/pipeline-helpers.js';
import { forgetAccessVersion, holdsPrincipals, principalsHeldBy, terminateListeners, within } from '../helpers/held-principals.js';
import { startPrivateRedis } from '../helpers/private-services.js';
import { freePort, runCli } from '../helpers/server-process.js';
import { createTestContext, TEST_STORE, type TestContext } from '../helpers/test-app.js';

const ACCOUNTS = ['reader', 'revoked', 'scoped', 'psql', 'listen', 'unreachable', 'marked', 'cli'] as const;
const DATASET: Dataset = {
  accounts: ACCOUNTS.map((ref) => ({ ref, email: `${ref}@example.com`, plan: 'enthusiast' })),
  keys: [
    ...ACCOUNTS.map((ref) => ({ ref, account: ref, name: ref, scopes: [...SCOPES] })),
    { ref: 'revoked-other', account: 'revoked', name: 'other', scopes: [...SCOPES] },
  ],
  catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
};

const skip = TEST_STORE === 'postgres' && process.env.TEST_REDIS_CLUSTER_URLS === undefined ? false : 'PostgreSQL + one Redis only (TEST_STORE=postgres)';

describe('principals held on PostgreSQL + Redis', { skip }, () => {
  let ctx: TestContext;
  /** Server B: its own app and its own store connection over the same database and Redis. */
  let storeB: Store;
  let appB: App;
  /** Server B's /metrics registry. */
  const metricsB = new Metrics();

  before(async () => {
    ctx = await createTestContext({ expectServerErrors: true, dataset: DATASET });
    storeB = openStore(ctx.config.database);
    appB = await buildApp({ config: ctx.config, store: storeB, meter: ctx.meter, clock: ctx.clock, logger: false, metrics: metricsB });
    await appB.ready();
    assert.ok(holdsPrincipals(ctx.app) && holdsPrincipals(appB), 'both servers hold principals');
    await principalsHeldBy(ctx.app, appB);
  });

  after(async () => {
    await appB.close();
    await storeB.close();
    await ctx.close();
  });

  const onA = (path: string, keyRef: string) => ctx.get(url(path), keyRef);
  const onB = (path: string, keyRef: string) => appB.inject({ method: 'GET', url: url(path), headers: { 'x-api-key': keyOf(ctx, keyRef) } });
  const on = { A: onA, B: onB };
  const both = ['A', 'B'] as const;

  async function seenOnBoth(path: string, keyRef: string): Promise<void> {
    for (const server of both) {
      for (let i = 0; i < 2; i++) assert.equal((await on[server](path, keyRef)).statusCode, 200, `${keyRef} on ${server}`);
    }
  }

  /** A psql session of its own, as an operator's. */
  async function psql(text: string, values: unknown[]): Promise<void> {
    const client = new pg.Client({ connectionString: ctx.databaseUrl });
    await client.connect();
    try {
      await client.query(text, values);
    } finally {
      await client.end();
    }
  }

  test('a request whose principal is current reads nothing from PostgreSQL: its version is checked in Redis', async () => {
    await seenOnBoth('/me', 'reader');
    // Were the version read from PostgreSQL, these would fail (the column is gone for the moment).
    await sql`alter table accounts rename column access_version to access_version_away`.execute(ctx.store.db);
    try {
      for (const server of both) assert.equal((await on[server]('/me', 'reader')).statusCode, 200, `held on ${server}`);
      // And a principal whose version Redis lacks is not used: it is read from PostgreSQL (failing here).
      await forgetAccessVersion(ctx, ctx.loaded.accounts.reader!);
      for (const server of both) assert.ok((await on[server]('/me', 'reader')).statusCode >= 500, `read on ${server}`);
    } finally {
      await sql`alter table accounts rename column access_version_away to access_version`.execute(ctx.store.db);
    }
    for (const server of both) assert.equal((await on[server]('/me', 'reader')).statusCode, 200);
  });

  test('a key revoked through the service is refused by the very next request on another server', async () => {
    await seenOnBoth('/me', 'revoked');
    await revokeKey(ctx.store, { keyId: await keyIdOf(ctx, 'revoked'), now: ctx.clock.now(), keyPrefix: ctx.config.keyPrefix, actor: OPERATOR });
    assert.match(assertError(await onB('/me', 'revoked'), 401, 'unauthorized').message, /revoked/i);
    assertError(await onA('/me', 'revoked'), 401, 'unauthorized');
    // The account's other keys: read again once (their version moved too), then held again.
    for (const server of both) assert.equal((await on[server]('/me', 'revoked-other')).statusCode, 200);
  });

  test('a scope taken away through the service from another store connection: the next request is 403 on both', async () => {
    await seenOnBoth('/catalogue/1', 'scoped');
    await setKeyScopes(storeB, { keyId: await keyIdOf(ctx, 'scoped'), scopes: ['prices:read'], now: ctx.clock.now(), keyPrefix: ctx.config.keyPrefix, actor: OPERATOR });
    for (const server of both) assertError(await on[server]('/catalogue/1', 'scoped'), 403, 'insufficient_scope');
  });

  test('a key revoked by hand in psql is refused on both servers within a second', async () => {
    await seenOnBoth('/me', 'psql');
    const keyId = await keyIdOf(ctx, 'psql');
    const started = Date.now();
    await psql('update api_keys set revoked_at = $1 where id = $2', [new Date(ctx.clock.now()).toISOString(), keyId]);
    for (const server of both) {
      await within(1000 - (Date.now() - started), `refused on ${server}`, async () => (await on[server]('/me', 'psql')).statusCode === 401);
    }
  });

  test('the LISTEN connection terminated: a change typed into psql meanwhile still takes effect, and it listens again', async () => {
    await seenOnBoth('/me', 'listen');
    const listeners = [versionListenerOf(ctx.app)!, versionListenerOf(appB)!];
    assert.equal(await terminateListeners(ctx.databaseUrl), 2, "both servers' LISTEN connections");
    // The plan lapses while the servers may not be listening: the notification can be lost.
    await psql("update accounts set plan_status = 'lapsed' where id = $1", [ctx.loaded.accounts.listen!]);
    // A server that has not yet found its connection gone may still use what it holds: within a second.
    for (const server of both) await within(1000, `refused on ${server}`, async () => (await on[server]('/me', 'listen')).statusCode === 403);
    await principalsHeldBy(ctx.app, appB);
    assert.ok(listeners.every((listener) => listener.trusted()));
    for (const server of both) assertError(await on[server]('/me', 'listen'), 403, 'forbidden');
    // Held principals are used again once listening: a renewal typed into psql is seen within a second.
    await psql("update accounts set plan_status = 'active' where id = $1", [ctx.loaded.accounts.listen!]);
    for (const server of both) await within(1000, `served again on ${server}`, async () => (await on[server]('/me', 'listen')).statusCode === 200);
  });

  test('/metrics: the LISTEN connection is 1 while it listens, 0 once terminated, 1 again with a reconnect counted; --workers takes the worst', async () => {
    type Snapshot = MetricObjectWithValues<MetricValue<string>>[];
    const value = (snapshot: Snapshot, name: string) => {
      const found = snapshot.find((metric) => metric.name === name);
      assert.ok(found !== undefined, `${name} on /metrics`);
      return found.values[0]!.value;
    };
    // A copy: prom-client hands out its live value objects, which the next read would change.
    const read = async () => structuredClone(await metricsB.registry.getMetricsAsJSON()) as Snapshot;
    await principalsHeldBy(appB);
    const listening = await read();
    assert.equal(value(listening, 'shelfapi_version_listener_connected'), 1);
    assert.ok(value(listening, 'shelfapi_version_listener_silence_seconds') < 1, 'heard within its heartbeat');
    const reconnects = value(listening, 'shelfapi_version_listener_reconnects_total');

    assert.ok((await terminateListeners(ctx.databaseUrl)) >= 1);
    // It listens again 250 ms after it finds its connection gone: read often enough to see the gap.
    let lost: Snapshot | null = null;
    await within(2000, 'the gauge at 0', async () => {
      const now = await read();
      if (value(now, 'shelfapi_version_listener_connected') !== 0) return false;
      lost = now;
      return true;
    });
    await within(5000, 'the gauge at 1 again', async () => value(await read(), 'shelfapi_version_listener_connected') === 1);
    const back = await read();
    assert.equal(value(back, 'shelfapi_version_listener_reconnects_total'), reconnects + 1, 'one reconnect counted');
    assert.ok(value(back, 'shelfapi_version_listener_silence_seconds') < 1);

    // As the primary of `serve --workers` sums its workers up: one worker down shows as down.
    const workers = AggregatorRegistry.aggregate([listening, lost!]);
    const aggregated = (await workers.getMetricsAsJSON()) as Snapshot;
    assert.equal(value(aggregated, 'shelfapi_version_listener_connected'), 0, 'the lowest');
    assert.equal(value(aggregated, 'shelfapi_version_listener_reconnects_total'), reconnects + value(lost!, 'shelfapi_version_listener_reconnects_total'), 'summed');
    assert.equal(
      value(aggregated, 'shelfapi_version_listener_silence_seconds'),
      Math.max(value(listening, 'shelfapi_version_listener_silence_seconds'), value(lost!, 'shelfapi_version_listener_silence_seconds')),
      'the highest',
    );
  });

  test('Redis unreachable during a revoke: the revoke is refused with a clear error and changes nothing', async () => {
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const store = openStore(ctx.config.database);
    const meter = new RedisMeter(deadRedis, { prefix: ctx.meter instanceof RedisMeter ? ctx.meter.prefix : 'x:' });
    registerAccessFence(store, meter);
    const keyId = await keyIdOf(ctx, 'unreachable');
    const before = await ctx.store.db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirstOrThrow();
    const events = async () => (await ctx.store.db.selectFrom('security_events').select('id').execute()).length;
    const eventsBefore = await events();
    try {
      await assert.rejects(
        revokeKey(store, { keyId, now: ctx.clock.now(), keyPrefix: ctx.config.keyPrefix, actor: OPERATOR }),
        (error: unknown) => error instanceof AccessChangeUnavailableError && /Nothing was changed.*Redis/.test(error.message),
      );
      await assert.rejects(changePlan(store, { accountId: ctx.loaded.accounts.unreachable!, plan: 'enthusiast', planStatus: 'lapsed' }), AccessChangeUnavailableError);
    } finally {
      await meter.close();
      await store.close();
    }
    assert.deepEqual(await ctx.store.db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirstOrThrow(), before);
    assert.equal(await events(), eventsBefore, 'nothing in the security log');
    for (const server of both) assert.equal((await on[server]('/me', 'unreachable')).statusCode, 200);

    // The command line says the same and exits 1.
    const cli = await runCli(['keys', 'revoke', String(keyId)], { DATABASE_URL: ctx.databaseUrl, REDIS_URL: deadRedis });
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /^shelfapi: Nothing was changed: the meter's Redis could not be reached/);
    assert.equal((await ctx.store.db.selectFrom('api_keys').select('revoked_at').where('id', '=', keyId).executeTakeFirstOrThrow()).revoked_at, null);
  });

  test('the command line with Redis stopped, then stalled: every access change is refused in one line, exit 1, nothing written', async (t) => {
    const redis = await startPrivateRedis();
    t.after(async () => {
      redis.resume();
      await redis.destroy();
    });
    const accountId = ctx.loaded.accounts.cli!;
    const keyId = String(await keyIdOf(ctx, 'cli'));
    const commands = [
      ['keys', 'revoke', keyId],
      ['keys', 'roll', keyId, '--stop-old', 'now'],
      ['keys', 'set-scopes', keyId, 'catalogue:read'],
      ['keys', 'set-allowed-ips', keyId, '203.0.113.7'],
      ['keys', 'rename', keyId, 'renamed'],
      ['accounts', 'set-plan', String(accountId), '--plan', 'enthusiast', '--plan-status', 'lapsed'],
    ];
    const snapshot = async () => ({
      account: await ctx.store.db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirstOrThrow(),
      keys: await ctx.store.db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('id').execute(),
      events: await ctx.store.db.selectFrom('security_events').select('id').where('account_id', '=', accountId).execute(),
    });
    const before = await snapshot();
    // Stopped: every command. Stalled (SIGSTOP: connected, answering nothing): a key's change and a plan's.
    const runs = [
      { state: 'stopped', away: () => redis.stop(), commands },
      { state: 'stalled', away: async () => { await redis.start(); redis.pause(); }, commands: [commands[0]!, commands[5]!] },
    ];
    for (const { state, away, commands } of runs) {
      await away();
      for (const args of commands) {
        const started = Date.now();
        const cli = await runCli(args, { DATABASE_URL: ctx.databaseUrl, REDIS_URL: redis.url });
        const what = `${args.slice(0, 2).join(' ')} with Redis ${state}`;
        assert.equal(cli.code, 1, `${what}: ${cli.stderr}`);
        assert.match(cli.stderr, /^shelfapi: Nothing was changed: the meter's Redis could not be reached[^\n]*Try again once Redis answers\.\n$/, what);
        assert.equal(cli.stdout, '', what);
        // Loose: a process's start, the store's, and one connection attempt or one command's time limit.
        assert.ok(Date.now() - started < 15_000, `${what}: ${Date.now() - started} ms`);
      }
      assert.deepEqual(await snapshot(), before, `nothing written with Redis ${state}`);
    }
  });

  test('while a change of the account is marked in Redis, no held principal of it is used', async () => {
    await seenOnBoth('/me', 'marked');
    const meter = ctx.meter as RedisMeter;
    const token = await meter.markChanging(ctx.loaded.accounts.marked!);
    await sql`alter table accounts rename column access_version to access_version_away`.execute(ctx.store.db);
    try {
      for (const server of both) assert.ok((await on[server]('/me', 'marked')).statusCode >= 500, `read on ${server}`);
    } finally {
      await sql`alter table accounts rename column access_version_away to access_version`.execute(ctx.store.db);
    }
    const version = Number((await ctx.store.db.selectFrom('accounts').select('access_version').where('id', '=', ctx.loaded.accounts.marked!).executeTakeFirstOrThrow()).access_version);
    await meter.settleChange(ctx.loaded.accounts.marked!, token, version);
    for (const server of both) assert.equal((await on[server]('/me', 'revoked-other')).statusCode, 200);
  });
});
