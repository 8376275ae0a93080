/**
 * SQLite: a server holds each key's principal, and the meter's admission reads the account's access version
 * (and the data version) in its own transaction, beside the account's row (src/metering/sqlite-meter.ts).
 * These tests hold the next-request rule on that path: a change made through the services, from another
 * connection to the file, or typed into sqlite3 by hand, is seen by the very next request, and a held
 * principal found stale counts nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import type { Dataset } from '../../src/domain/dataset.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { changePlan } from '../../src/services/accounts.service.js';
import { OPERATOR } from '../../src/services/actor.js';
import { revokeKey } from '../../src/services/keys.service.js';
import { openStore, type Store } from '../../src/store/database.js';
import { periodOf } from '../../src/metering/periods.js';
import { assertError, keyIdOf, url } from '../helpers/pipeline-helpers.js';
import { createTestContext, TEST_STORE, type TestContext } from '../helpers/test-app.js';

const ACCOUNTS = ['service', 'by-hand', 'plan', 'items'] as const;
const DATASET: Dataset = {
  accounts: ACCOUNTS.map((ref) => ({ ref, email: `${ref}@example.com`, plan: 'enthusiast' })),
  keys: [
    ...ACCOUNTS.map((ref) => ({ ref, account: ref, name: ref, scopes: [...SCOPES] })),
    { ref: 'service-other', account: 'service', name: 'other', scopes: [...SCOPES] },
  ],
  catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
};

describe('principals held on SQLite', { skip: TEST_STORE === 'sqlite' ? false : 'SQLite only' }, () => {
  let ctx: TestContext;
  /** Another connection to the same file, as another process (the CLI, the settings screen of another worker) has. */
  let other: Store;

  before(async () => {
    ctx = await createTestContext({ dataset: DATASET });
    other = openStore({ dialect: 'sqlite', path: ctx.databaseUrl });
  });

  after(async () => {
    await other.close();
    await ctx.close();
  });

  /** A request or two, so that the server holds the key's principal. */
  async function held(path: string, keyRef: string): Promise<void> {
    for (let i = 0; i < 2; i++) assert.equal((await ctx.get(url(path), keyRef)).statusCode, 200);
  }

  test('a key revoked through the service on another connection: the very next request is refused, and counts nothing', async () => {
    await held('/catalogue/1', 'service');
    const accountId = ctx.loaded.accounts.service!;
    const used = await ctx.meter.used(accountId, periodOf(ctx.clock.now()));
    const burst = await ctx.meter.burstUsed(accountId, ctx.clock.now());
    await revokeKey(other, { keyId: await keyIdOf(ctx, 'service'), now: ctx.clock.now(), keyPrefix: ctx.config.keyPrefix, actor: OPERATOR });
    assert.match(assertError(await ctx.get(url('/catalogue/1'), 'service'), 401, 'unauthorized').message, /revoked/i);
    assert.equal(await ctx.meter.used(accountId, periodOf(ctx.clock.now())), used, 'the refused request took no quota');
    assert.equal(await ctx.meter.burstUsed(accountId, ctx.clock.now()), burst, 'nor a slot of the burst window');
    // The account's other key: read again once (the account's version moved), and answered.
    assert.equal((await ctx.get(url('/catalogue/1'), 'service-other')).statusCode, 200);
  });

  test('a key revoked by hand in sqlite3 is refused by the very next request', async () => {
    await held('/me', 'by-hand');
    const conn = new SqliteDatabase(ctx.databaseUrl);
    try {
      conn.prepare('update api_keys set revoked_at = ? where id = ?').run(new Date(ctx.clock.now()).toISOString(), await keyIdOf(ctx, 'by-hand'));
    } finally {
      conn.close();
    }
    assertError(await ctx.get(url('/me'), 'by-hand'), 401, 'unauthorized');
  });

  test("a plan changed on another connection: the very next request is metered by the new plan's limits", async () => {
    await held('/me', 'plan');
    await changePlan(other, { accountId: ctx.loaded.accounts.plan!, plan: 'addon', now: ctx.clock.now(), actor: OPERATOR });
    const res = await ctx.get(url('/me'), 'plan');
    assert.equal(res.statusCode, 200);
    assert.equal(res.json<{ limits: { perMinute: number } }>().limits.perMinute, ctx.config.planLimits.addon.perMinute);
  });

  test('an item changed and the data version bumped by hand: the very next request of a held key answers the new item', async () => {
    await held('/catalogue/1', 'items');
    const conn = new SqliteDatabase(ctx.databaseUrl);
    try {
      conn.transaction(() => {
        conn.prepare("update catalogue_items set name = 'Super Mario 64 DS' where master_item_id = 1").run();
        conn.prepare('update data_version set version = version + 1 where id = 1').run();
      })();
    } finally {
      conn.close();
    }
    const res = await ctx.get(url('/catalogue/1'), 'items');
    assert.equal(res.statusCode, 200);
    assert.equal(res.json<{ data: { name: string } }>().data.name, 'Super Mario 64 DS');
  });
});
