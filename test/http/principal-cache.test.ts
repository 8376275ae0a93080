/**
 * Each server holds the principals of the keys it has seen (src/auth/principal-cache.ts) and checks only the
 * account's access version per request. These tests hold the next-request rule against a principal held in
 * memory: two servers over one store (each with its own store connection, as two processes have), every
 * kind of change made through the services, by hand-written SQL and by the meter's own writes, and a version
 * that cannot be read.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { PrincipalCache } from '../../src/auth/principal-cache.js';
import { buildApp, type App } from '../../src/http/app.js';
import { hashKey } from '../../src/keys/api-key.js';
import { PostgresMeter } from '../../src/metering/postgres-meter.js';
import { SqliteMeter } from '../../src/metering/sqlite-meter.js';
import type { Meter } from '../../src/metering/meter.js';
import { changePlan } from '../../src/services/accounts.service.js';
import { OPERATOR } from '../../src/services/actor.js';
import { revokeKey, rollKey, setKeyScopes } from '../../src/services/keys.service.js';
import { migrateToLatest, migrationNames, openStore, type Store } from '../../src/store/database.js';
import { hotQueries } from '../../src/store/hot-queries.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { insertAccount } from '../../src/store/repositories/account.repository.js';
import { insertKey } from '../../src/store/repositories/api-key.repository.js';
import { createTestContext, openTestStore, type TestContext } from '../helpers/test-app.js';
import { assertError, keyIdOf, keyOf, url } from '../helpers/pipeline-helpers.js';
import { forgetAccessVersion, holdsPrincipals, principalsHeldBy, within } from '../helpers/held-principals.js';

describe('principals held per server', () => {
  let ctx: TestContext;
  /** Server B: its own app and its own connection to the same store; server A is ctx.app. */
  let storeB: Store;
  let meterB: Meter | null;
  let appB: App;

  before(async () => {
    ctx = await createTestContext({ expectServerErrors: true });
    storeB = openStore(ctx.config.database);
    // The Redis meter of a PostgreSQL run is shared (it is one Redis); the database meters get B's connection.
    meterB = ctx.config.redisUrl !== null || ctx.config.redisClusterUrls !== null ? null : storeB.sqlite ? new SqliteMeter(storeB.sqlite) : new PostgresMeter(storeB);
    appB = await buildApp({ config: ctx.config, store: storeB, meter: meterB ?? ctx.meter, clock: ctx.clock, logger: false });
    await appB.ready();
  });

  after(async () => {
    await appB.close();
    await meterB?.close();
    await storeB.close();
    await ctx.close();
  });

  const onA = (path: string, keyRef: string) => ctx.get(url(path), keyRef);
  const onB = (path: string, keyRef: string) => appB.inject({ method: 'GET', url: url(path), headers: { 'x-api-key': keyOf(ctx, keyRef) } });
  const on = { A: onA, B: onB };
  const admin = { now: () => ctx.clock.now(), keyPrefix: () => ctx.config.keyPrefix };

  async function seenOnBoth(path: string, keyRef: string): Promise<void> {
    for (const server of ['A', 'B'] as const) {
      // Twice: the second answer comes from the principal held since the first.
      for (let i = 0; i < 2; i++) assert.equal((await on[server](path, keyRef)).statusCode, 200, `${keyRef} on ${server}`);
    }
  }

  test('a key revoked through the service on one server is refused by the next request on the other', async () => {
    await seenOnBoth('/me', 'alice-second');
    await revokeKey(ctx.store, { keyId: await keyIdOf(ctx, 'alice-second'), now: admin.now(), keyPrefix: admin.keyPrefix(), actor: OPERATOR });
    assert.match(assertError(await onB('/me', 'alice-second'), 401, 'unauthorized').message, /revoked/i);
    assertError(await onA('/me', 'alice-second'), 401, 'unauthorized');
    assert.equal((await onB('/me', 'alice')).statusCode, 200, "the account's other keys still work");
  });

  test('a scope taken away is refused on the next request; a plan lapsed and renewed follows on both servers', async () => {
    await seenOnBoth('/catalogue/1', 'alice');
    await setKeyScopes(ctx.store, { keyId: await keyIdOf(ctx, 'alice'), scopes: ['prices:read'], now: admin.now(), keyPrefix: admin.keyPrefix(), actor: OPERATOR });
    assertError(await onB('/catalogue/1', 'alice'), 403, 'insufficient_scope');
    assertError(await onA('/catalogue/1', 'alice'), 403, 'insufficient_scope');
    assert.equal((await onB('/prices/1', 'alice')).statusCode, 200);

    await seenOnBoth('/me', 'bob');
    await changePlan(ctx.store, { accountId: ctx.loaded.accounts.bob!, plan: 'addon', planStatus: 'lapsed' });
    assertError(await onA('/me', 'bob'), 403, 'forbidden');
    assertError(await onB('/me', 'bob'), 403, 'forbidden');
    await changePlan(ctx.store, { accountId: ctx.loaded.accounts.bob!, plan: 'addon', planStatus: 'active' });
    assert.equal((await onB('/me', 'bob')).statusCode, 200);
    assert.equal((await onA('/me', 'bob')).statusCode, 200);
  });

  test('a key rolled with "now" stops on the next request; its replacement works on both servers', async () => {
    const keyId = await keyIdOf(ctx, 'alice-expiring');
    await seenOnBoth('/me', 'alice-expiring');
    const { created } = await rollKey(ctx.store, { keyId, stopOld: 'now', now: admin.now(), keyPrefix: admin.keyPrefix(), actor: OPERATOR });
    assertError(await onB('/me', 'alice-expiring'), 401, 'unauthorized');
    assertError(await onA('/me', 'alice-expiring'), 401, 'unauthorized');
    const res = await appB.inject({ method: 'GET', url: url('/me'), headers: { 'x-api-key': created.key } });
    assert.equal(res.statusCode, 200);
  });

  test('a change written by hand in SQL is seen too: the database bumps the version, not the services', async () => {
    await principalsHeldBy(ctx.app, appB);
    await seenOnBoth('/me', 'bob');
    const bobKey = await keyIdOf(ctx, 'bob');
    await ctx.store.db.updateTable('api_keys').set({ revoked_at: new Date(ctx.clock.now()).toISOString() }).where('id', '=', bobKey).execute();
    if (holdsPrincipals(appB)) {
      // PostgreSQL + Redis: no request reads PostgreSQL while its principal is current; the change reaches
      // Redis through the NOTIFY of migration 0014, within a second (docs/operations.md, "How a change reaches every server").
      for (const server of ['B', 'A'] as const) {
        await within(1000, `refused on ${server}`, async () => (await on[server]('/me', 'bob')).statusCode === 401);
      }
    }
    assertError(await onB('/me', 'bob'), 401, 'unauthorized');
    assertError(await onA('/me', 'bob'), 401, 'unauthorized');
  });

  test("the meter's own writes to a key (its last use) and a rename do not bump the version", async () => {
    const accountId = ctx.loaded.accounts.alice!;
    const version = async () =>
      Number((await ctx.store.db.selectFrom('accounts').select('access_version').where('id', '=', accountId).executeTakeFirstOrThrow()).access_version);
    const before = await version();
    await ctx.store.db.updateTable('api_keys').set({ last_used_at: new Date(ctx.clock.now()).toISOString() }).where('account_id', '=', accountId).execute();
    await ctx.store.db.updateTable('api_keys').set({ name: 'renamed' }).where('id', '=', await keyIdOf(ctx, 'alice-noscope')).execute();
    assert.equal(await version(), before);
  });

  test('when the version cannot be read, nothing is served from memory', async () => {
    await seenOnBoth('/prices/1', 'alice');
    // PostgreSQL + Redis: the version a request checks is the one in Redis; without it there, it must read.
    if (holdsPrincipals(appB)) await forgetAccessVersion(ctx, ctx.loaded.accounts.alice!);
    await sql`alter table accounts rename column access_version to access_version_away`.execute(ctx.store.db);
    try {
      const res = await onB('/prices/1', 'alice');
      assert.ok(res.statusCode >= 500, `refused with a 5xx, got ${res.statusCode}: ${res.body}`);
    } finally {
      await sql`alter table accounts rename column access_version_away to access_version`.execute(ctx.store.db);
    }
    assert.equal((await onB('/prices/1', 'alice')).statusCode, 200);
  });
});

describe('migration 0008 on a store that already holds accounts and keys', () => {
  test('existing accounts start at version 0, and the triggers bump from there', async () => {
    const old = await openTestStore({ upTo: '0007-refund-tokens' });
    try {
      const accountId = await insertAccount(old.store.db, { email: 'old@example.com', plan: 'enthusiast', planStatus: 'active', createdAt: '2026-01-01T00:00:00.000Z' });
      const keyId = await insertKey(old.store.db, {
        accountId,
        name: 'old',
        keyHash: 'f'.repeat(64),
        lastFour: 'ffff',
        scopes: ['catalogue:read'],
        createdAt: '2026-01-01T00:00:00.000Z',
        expiresAt: null,
        revokedAt: null,
      });
      assert.deepEqual(await migrateToLatest(old.store), migrationNames(old.store.dialect).filter((name) => name >= '0008'));
      const version = async () => (await old.store.db.selectFrom('accounts').select('access_version').where('id', '=', accountId).executeTakeFirstOrThrow()).access_version;
      assert.equal(await version(), 0);
      await old.store.db.updateTable('api_keys').set({ scopes: 'prices:read' }).where('id', '=', keyId).execute();
      assert.equal(await version(), 1);
      await old.store.db.updateTable('accounts').set({ plan_status: 'lapsed' }).where('id', '=', accountId).execute();
      assert.equal(await version(), 2);
      await old.store.db.deleteFrom('api_keys').where('id', '=', keyId).execute();
      assert.equal(await version(), 3);
    } finally {
      await old.close();
    }
  });
});

describe('an account deleted by hand and its id given to a new account', () => {
  test('a key of the deleted account held in memory is not taken as the new account\'s', async () => {
    const t = await openTestStore();
    try {
      const loaded = await loadDataset(
        t.store,
        { accounts: [{ ref: 'gone', email: 'gone@example.com', plan: 'enthusiast' }], keys: [{ ref: 'gone', account: 'gone', name: 'k', scopes: ['catalogue:read'] }] },
        { keyPrefix: 'shelf', now: Date.now() },
      );
      const accountId = loaded.accounts.gone!;
      const hash = hashKey(loaded.keys.gone!);
      const cache = new PrincipalCache(hotQueries(t.store));
      assert.equal((await cache.find(hash)).key?.accountId, accountId);
      // No code deletes accounts; by hand, with nothing asked of this server in between.
      await t.store.db.deleteFrom('api_keys').where('account_id', '=', accountId).execute();
      await t.store.db.deleteFrom('accounts').where('id', '=', accountId).execute();
      await insertAccount(t.store.db, { id: accountId, email: 'new@example.com', plan: 'enthusiast', planStatus: 'active', createdAt: '2026-01-01T00:00:00.000Z' });
      assert.equal((await cache.find(hash)).key, undefined, 'the deleted key is not found');
    } finally {
      await t.close();
    }
  });
});

describe('the number of principals a server holds', () => {
  test('stays at its bound, the least recently used going first, and every key still answers as the store says', async () => {
    const t = await openTestStore();
    try {
      const loaded = await loadDataset(
        t.store,
        {
          accounts: [{ ref: 'a', email: 'a@example.com', plan: 'enthusiast' }],
          keys: ['k1', 'k2', 'k3'].map((ref) => ({ ref, account: 'a', name: ref, scopes: ['catalogue:read'] })),
        },
        { keyPrefix: 'shelf', now: Date.now() },
      );
      const cache = new PrincipalCache(hotQueries(t.store), 2);
      for (const round of [1, 2]) {
        for (const ref of ['k1', 'k2', 'k3']) {
          const row = (await cache.find(hashKey(loaded.keys[ref]!))).key;
          assert.equal(row?.accountId, loaded.accounts.a, `${ref}, round ${round}`);
          assert.ok(cache.size <= 2);
        }
      }
      // Its last character changed: a key ending in 'x' (1 in 62) would otherwise be k1 itself.
      const k1 = loaded.keys.k1!;
      const unknown = `${k1.slice(0, -1)}${k1.endsWith('x') ? 'y' : 'x'}`;
      assert.equal((await cache.find(hashKey(unknown))).key, undefined, 'an unknown key is not found');
      assert.equal(cache.size, 2, 'nor held');
    } finally {
      await t.close();
    }
  });
});
