/**
 * A key's allowed addresses on the Data API (README, "Order of checks", step 3): from any other address the
 * key is 401 naming the address, counted in neither the burst nor the quota, and kept among the key's
 * rejections as "refused address"; X-Forwarded-For decides only behind a proxy named in TRUST_PROXY; a
 * change is effective on the next request, on every server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { buildApp, type App } from '../../src/http/app.js';
import { PostgresMeter } from '../../src/metering/postgres-meter.js';
import { SqliteMeter } from '../../src/metering/sqlite-meter.js';
import type { Meter } from '../../src/metering/meter.js';
import { dayOf } from '../../src/metering/periods.js';
import { OPERATOR } from '../../src/services/actor.js';
import { setAllowedAddresses } from '../../src/services/keys.service.js';
import { migrateTo, migrateToLatest, openStore, type Store } from '../../src/store/database.js';
import { insertAccount } from '../../src/store/repositories/account.repository.js';
import { insertKey } from '../../src/store/repositories/api-key.repository.js';
import { createTestContext, openTestStore, type TestContext } from '../helpers/test-app.js';
import { within } from '../helpers/held-principals.js';
import { assertError, burstLeft, keyIdOf, keyOf, me, nextWindow, quotaUsed, url } from '../helpers/pipeline-helpers.js';

async function allow(ctx: TestContext, keyRef: string, addresses: string): Promise<void> {
  const keyId = await keyIdOf(ctx, keyRef);
  await setAllowedAddresses(ctx.store, { keyId, addresses, now: ctx.clock.now(), keyPrefix: ctx.config.keyPrefix, actor: OPERATOR });
}

function from(ctx: TestContext | { app: App }, path: string, key: string, options: { remoteAddress?: string; forwardedFor?: string; method?: 'GET' | 'POST' } = {}) {
  return ctx.app.inject({
    method: options.method ?? 'GET',
    url: url(path),
    headers: { 'x-api-key': key, ...(options.forwardedFor === undefined ? {} : { 'x-forwarded-for': options.forwardedFor }) },
    ...(options.remoteAddress === undefined ? {} : { remoteAddress: options.remoteAddress }),
  });
}

function refusedFrom(res: Awaited<ReturnType<typeof from>>, address: string): void {
  const body = assertError(res, 401, 'unauthorized');
  assert.equal(body.message, `This key may not be used from ${address}.`);
  assert.equal(res.headers['ratelimit'], undefined, 'a refused address is not metered');
  assert.equal(res.headers['x-ratelimit-remaining'], undefined);
}

describe('allowed addresses, the socket peer (no TRUST_PROXY)', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  test('a key limited to 127.0.0.2/32 is refused from 127.0.0.1 with 401 naming the address; nothing is counted', async () => {
    nextWindow(ctx);
    await allow(ctx, 'alice-second', '127.0.0.2/32');
    const key = keyOf(ctx, 'alice-second');
    const before = await me(ctx, 'alice');
    const quotaBefore = await quotaUsed(ctx, 'alice');
    for (const path of ['/catalogue/1', '/me', '/prices/export.csv', '/no-such-route']) refusedFrom(await from(ctx, path, key), '127.0.0.1');
    const head = await ctx.app.inject({ method: 'HEAD', url: url('/catalogue/1'), headers: { authorization: `Bearer ${key}` } });
    assert.equal(head.statusCode, 401);
    assert.equal(head.headers['ratelimit'], undefined);
    const after = await me(ctx, 'alice');
    assert.equal(after.used, before.used, '/me usage unchanged: nothing counted in the quota');
    assert.equal(await quotaUsed(ctx, 'alice'), quotaBefore);
    assert.equal(burstLeft(after.res), burstLeft(before.res) - 1, 'only the second /me took a burst slot');
    // From the allowed address the same key works, and counts.
    const allowed = await from(ctx, '/catalogue/1', key, { remoteAddress: '127.0.0.2' });
    assert.equal(allowed.statusCode, 200, allowed.body);
    assert.equal(await quotaUsed(ctx, 'alice'), quotaBefore + 1);
  });

  test('127.0.0.0/8 lets it through; an IPv4-mapped peer matches IPv4 rules; IPv6 ranges', async () => {
    const key = keyOf(ctx, 'alice-second');
    await allow(ctx, 'alice-second', '127.0.0.0/8');
    assert.equal((await from(ctx, '/catalogue/1', key)).statusCode, 200);
    assert.equal((await from(ctx, '/catalogue/1', key, { remoteAddress: '::ffff:127.0.0.9' })).statusCode, 200);
    refusedFrom(await from(ctx, '/catalogue/1', key, { remoteAddress: '::ffff:128.0.0.1' }), '128.0.0.1');
    await allow(ctx, 'alice-second', '2001:db8::/32, 203.0.113.7');
    refusedFrom(await from(ctx, '/catalogue/1', key), '127.0.0.1');
    assert.equal((await from(ctx, '/catalogue/1', key, { remoteAddress: '2001:db8:5::1' })).statusCode, 200);
    refusedFrom(await from(ctx, '/catalogue/1', key, { remoteAddress: '2001:db9::1' }), '2001:db9::1');
    await allow(ctx, 'alice-second', '');
    assert.equal((await from(ctx, '/catalogue/1', key, { remoteAddress: '198.51.100.1' })).statusCode, 200, 'an empty list: any address');
  });

  test('an IPv4 client matches an IPv6 range that holds its IPv4-mapped form (::/0, ::ffff:0:0/96, ...)', async () => {
    const key = keyOf(ctx, 'alice-second');
    for (const range of ['::/0', '::/8', '::ffff:0:0/96', '::ffff:127.0.0.0/104', '::fffe:0:0/95']) {
      await allow(ctx, 'alice-second', range);
      assert.equal((await from(ctx, '/catalogue/1', key)).statusCode, 200, `127.0.0.1 in ${range}`);
      assert.equal((await from(ctx, '/catalogue/1', key, { remoteAddress: '::ffff:127.0.0.1' })).statusCode, 200, `::ffff:127.0.0.1 in ${range}`);
    }
    // Ranges that do not hold ::ffff:127.0.0.1: refused, naming the address as IPv4.
    for (const range of ['::ffff:128.0.0.0/104', '2001:db8::/32', '::/96', '::ffff:0:0/128', '64:ff9b::/96']) {
      await allow(ctx, 'alice-second', range);
      refusedFrom(await from(ctx, '/catalogue/1', key), '127.0.0.1');
    }
    // And an IPv6 client still matches only IPv6 ranges: no IPv4 rule lets it in.
    await allow(ctx, 'alice-second', '0.0.0.0/0');
    refusedFrom(await from(ctx, '/catalogue/1', key, { remoteAddress: '2001:db8::1' }), '2001:db8::1');
    await allow(ctx, 'alice-second', '');
  });

  test('without TRUST_PROXY, X-Forwarded-For is ignored', async () => {
    await allow(ctx, 'alice-second', '203.0.113.7');
    refusedFrom(await from(ctx, '/me', keyOf(ctx, 'alice-second'), { forwardedFor: '203.0.113.7' }), '127.0.0.1');
    await allow(ctx, 'alice-second', '');
  });

  test('its place in the order of checks: after the method and the key, before the plan, the route, the scope and the parameters', async () => {
    await allow(ctx, 'alice-noscope', '127.0.0.2');
    const noScope = keyOf(ctx, 'alice-noscope');
    assertError(await from(ctx, '/catalogue/1', noScope, { method: 'POST' }), 405, 'method_not_allowed');
    refusedFrom(await from(ctx, '/catalogue/1', noScope), '127.0.0.1');
    refusedFrom(await from(ctx, '/catalogue/abc', noScope), '127.0.0.1');
    await allow(ctx, 'carol', '127.0.0.2');
    refusedFrom(await from(ctx, '/me', keyOf(ctx, 'carol')), '127.0.0.1');
    assertError(await from(ctx, '/me', keyOf(ctx, 'carol'), { remoteAddress: '127.0.0.2' }), 403, 'forbidden');
    // A revoked or expired key says so, whatever its address.
    await ctx.store.db.updateTable('api_keys').set({ allowed_addresses: '127.0.0.2' }).where('id', '=', await keyIdOf(ctx, 'alice-revoked')).execute();
    assert.match(assertError(await from(ctx, '/me', keyOf(ctx, 'alice-revoked')), 401, 'unauthorized').message, /revoked/);
    await allow(ctx, 'alice-noscope', '');
  });

  test("the refusals are among the key's rejections as \"refused address\", with the address in the message", async () => {
    await allow(ctx, 'bob', '192.0.2.0/24');
    const key = keyOf(ctx, 'bob');
    refusedFrom(await from(ctx, '/prices/1', key), '127.0.0.1');
    refusedFrom(await from(ctx, '/prices/2', key, { remoteAddress: '198.51.100.23' }), '198.51.100.23');
    await ctx.stats.flush();
    const accountId = ctx.loaded.accounts.bob!;
    const keyId = await keyIdOf(ctx, 'bob');
    const today = dayOf(ctx.clock.now());
    const [day] = await ctx.stats.keyOutcomes(accountId, keyId, today, today);
    assert.equal(day?.counts.refused_address, 2);
    assert.equal(day?.counts.revoked_or_expired, 0);
    const rejections = await ctx.stats.recentRejections(accountId, keyId);
    assert.deepEqual(
      rejections.slice(0, 2).map((r) => [r.path, r.status, r.error, r.message]),
      [
        ['/developer/v1/prices/2', 401, 'unauthorized', 'This key may not be used from 198.51.100.23.'],
        ['/developer/v1/prices/1', 401, 'unauthorized', 'This key may not be used from 127.0.0.1.'],
      ],
    );
    assert.equal((await ctx.stats.lastUse(accountId, [keyId])).get(keyId), undefined, 'a refused request is not a use of the key');
    await allow(ctx, 'bob', '');
  });
});

describe('allowed addresses behind a proxy (TRUST_PROXY=127.0.0.1)', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ env: { TRUST_PROXY: '127.0.0.1' } });
    await allow(ctx, 'alice', '203.0.113.7');
  });
  after(async () => {
    await ctx.close();
  });

  test('X-Forwarded-For decides: its right-most address that is not the proxy', async () => {
    const key = keyOf(ctx, 'alice');
    assert.equal((await from(ctx, '/catalogue/1', key, { forwardedFor: '203.0.113.7' })).statusCode, 200);
    assert.equal((await from(ctx, '/catalogue/1', key, { forwardedFor: '198.51.100.1, 203.0.113.7' })).statusCode, 200, 'what the client wrote is left of it');
    assert.equal((await from(ctx, '/catalogue/1', key, { forwardedFor: '203.0.113.7, 127.0.0.1' })).statusCode, 200, 'past the trusted proxies');
    refusedFrom(await from(ctx, '/catalogue/1', key, { forwardedFor: '203.0.113.8' }), '203.0.113.8');
    refusedFrom(await from(ctx, '/catalogue/1', key, { forwardedFor: '203.0.113.7, 198.51.100.1' }), '198.51.100.1');
    refusedFrom(await from(ctx, '/catalogue/1', key), '127.0.0.1');
    refusedFrom(await from(ctx, '/catalogue/1', key, { forwardedFor: 'forged' }), 'unknown');
  });

  test('from a peer that is not a trusted proxy, X-Forwarded-For is ignored', async () => {
    refusedFrom(await from(ctx, '/catalogue/1', keyOf(ctx, 'alice'), { remoteAddress: '192.0.2.10', forwardedFor: '203.0.113.7' }), '192.0.2.10');
  });

  test("the key's last use records the forwarded address", async () => {
    assert.equal((await from(ctx, '/me', keyOf(ctx, 'alice'), { forwardedFor: '203.0.113.7' })).statusCode, 200);
    await ctx.stats.flush();
    const keyId = await keyIdOf(ctx, 'alice');
    assert.equal((await ctx.stats.lastUse(ctx.loaded.accounts.alice!, [keyId])).get(keyId)?.address, '203.0.113.7');
  });
});

describe('a change of the list, on the next request, on every server', () => {
  let ctx: TestContext;
  let storeB: Store;
  let meterB: Meter | null;
  let appB: App;

  before(async () => {
    ctx = await createTestContext();
    storeB = openStore(ctx.config.database);
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

  test('held principals on two servers follow a list set, widened and removed through the service', async () => {
    const key = keyOf(ctx, 'alice');
    const onBoth = async (expected: number, remoteAddress?: string) => {
      for (const app of [ctx, { app: appB }]) {
        // Twice: the second answer comes from the principal the first left in memory.
        for (let i = 0; i < 2; i++) assert.equal((await from(app, '/me', key, remoteAddress === undefined ? {} : { remoteAddress })).statusCode, expected);
      }
    };
    await onBoth(200);
    await allow(ctx, 'alice', '127.0.0.2');
    await onBoth(401);
    await onBoth(200, '127.0.0.2');
    await allow(ctx, 'alice', '127.0.0.2, 127.0.0.1');
    await onBoth(200);
    await allow(ctx, 'alice', '');
    await onBoth(200, '198.51.100.1');
  });

  test('a list written by hand in SQL bumps the account\'s access version (migration 0011), so servers see it too', async () => {
    const key = keyOf(ctx, 'bob');
    const accountId = ctx.loaded.accounts.bob!;
    const version = async () =>
      Number((await ctx.store.db.selectFrom('accounts').select('access_version').where('id', '=', accountId).executeTakeFirstOrThrow()).access_version);
    assert.equal((await from({ app: appB }, '/me', key)).statusCode, 200);
    const before = await version();
    await sql`update api_keys set allowed_addresses = '10.0.0.0/8' where id = ${await keyIdOf(ctx, 'bob')}`.execute(ctx.store.db);
    assert.equal(await version(), before + 1);
    // Typed into SQL, not through the services: on PostgreSQL + Redis a server holding the key's principal
    // learns of it from the NOTIFY, within a second (docs/operations.md, "How a change reaches every server"); elsewhere at once.
    let answer = await from({ app: appB }, '/me', key);
    await within(1000, 'refused on the other server', async () => (answer = await from({ app: appB }, '/me', key)).statusCode === 401);
    refusedFrom(answer, '127.0.0.1');
    await sql`update api_keys set allowed_addresses = null where id = ${await keyIdOf(ctx, 'bob')}`.execute(ctx.store.db);
    assert.equal((await from({ app: appB }, '/me', key)).statusCode, 200);
  });
});

describe('migration 0011 on a store that already holds keys, up and down', () => {
  test('existing keys allow any address; the column bumps the access version; down restores 0008\'s trigger', async () => {
    const old = await openTestStore({ upTo: '0010-notices' });
    try {
      const accountId = await insertAccount(old.store.db, { email: 'old@example.com', plan: 'enthusiast', planStatus: 'active', createdAt: '2026-01-01T00:00:00.000Z' });
      const keyId = await insertKey(old.store.db, {
        accountId,
        name: 'old',
        keyHash: 'e'.repeat(64),
        lastFour: 'eeee',
        scopes: ['catalogue:read'],
        createdAt: '2026-01-01T00:00:00.000Z',
        expiresAt: null,
        revokedAt: null,
      });
      assert.equal((await migrateToLatest(old.store))[0], '0011-allowed-addresses');
      const version = async () =>
        Number((await old.store.db.selectFrom('accounts').select('access_version').where('id', '=', accountId).executeTakeFirstOrThrow()).access_version);
      const before = await version();
      assert.equal((await old.store.db.selectFrom('api_keys').select('allowed_addresses').where('id', '=', keyId).executeTakeFirstOrThrow()).allowed_addresses, null);
      await sql`update api_keys set allowed_addresses = '10.0.0.0/8' where id = ${keyId}`.execute(old.store.db);
      assert.equal(await version(), before + 1);
      await sql`update api_keys set scopes = 'prices:read' where id = ${keyId}`.execute(old.store.db);
      assert.equal(await version(), before + 2, 'the columns of 0008 still bump');
      await sql`update api_keys set name = 'renamed' where id = ${keyId}`.execute(old.store.db);
      assert.equal(await version(), before + 2, 'a rename still does not');
      await migrateTo(old.store, '0010-notices');
      await sql`update api_keys set scopes = 'export' where id = ${keyId}`.execute(old.store.db);
      assert.equal(await version(), before + 3, 'after down, 0008\'s trigger is back');
      await assert.rejects(sql`select allowed_addresses from api_keys`.execute(old.store.db), 'the column is gone');
      assert.equal((await migrateToLatest(old.store))[0], '0011-allowed-addresses', 'and up again');
    } finally {
      await old.close();
    }
  });
});
