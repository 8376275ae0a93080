/**
 * A TRUNCATE typed into psql of a table the access check reads (api_keys, accounts) takes effect within a
 * second, as every other change made by hand in SQL does (migration 0018): row-level triggers never see a
 * TRUNCATE, so before it every deleted key kept answering 200 from the principals servers hold, on
 * PostgreSQL metering and on PostgreSQL + Redis alike. SQLite has no TRUNCATE (its `delete from` without a
 * where fires the row triggers): nothing to test there.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import type { Dataset } from '../../src/domain/dataset.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { holdsPrincipals, principalsHeldBy, within } from '../helpers/held-principals.js';
import { keyOf, url } from '../helpers/pipeline-helpers.js';
import { migrateTo, migrateToLatest } from '../../src/store/database.js';
import { createTestContext, openTestStore, TEST_STORE, type TestContext } from '../helpers/test-app.js';

const ACCOUNTS = ['first', 'second'] as const;
const DATASET: Dataset = {
  accounts: ACCOUNTS.map((ref) => ({ ref, email: `${ref}@example.com`, plan: 'enthusiast' })),
  keys: ACCOUNTS.map((ref) => ({ ref, account: ref, name: ref, scopes: [...SCOPES] })),
  catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
};

const skip = TEST_STORE === 'postgres' && process.env.TEST_REDIS_CLUSTER_URLS === undefined ? false : 'PostgreSQL only (SQLite has no TRUNCATE)';

/** A psql session of its own, as an operator's. */
async function psql(databaseUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

for (const [mode, env] of [
  ['PostgreSQL + Redis', {}],
  ['PostgreSQL metering (no Redis)', { REDIS_URL: '' }],
] as const) {
  describe(`TRUNCATE typed into psql, ${mode}`, { skip }, () => {
    let ctx: TestContext;

    before(async () => {
      ctx = await createTestContext({ dataset: DATASET, env });
      assert.equal(holdsPrincipals(ctx.app), mode === 'PostgreSQL + Redis', 'the mode under test');
      await principalsHeldBy(ctx.app);
    });

    after(async () => {
      await ctx.close();
    });

    const me = (keyRef: string) => ctx.app.inject({ method: 'GET', url: url('/me'), headers: { 'x-api-key': keyOf(ctx, keyRef) } });

    async function held(keyRef: string): Promise<void> {
      // Twice: the second answer comes from the principal held since the first.
      for (let i = 0; i < 2; i++) assert.equal((await me(keyRef)).statusCode, 200, keyRef);
    }

    test('truncate api_keys cascade: every deleted key is refused within a second', async () => {
      await held('first');
      await held('second');
      const started = Date.now();
      await psql(ctx.databaseUrl, 'truncate api_keys cascade');
      for (const keyRef of ACCOUNTS) {
        await within(1000 - (Date.now() - started), `${keyRef} refused`, async () => (await me(keyRef)).statusCode === 401);
      }
    });

    test('truncate accounts restart identity cascade, and an account made at once takes the first id: the old keys are refused', async () => {
      // The keys of the previous test are gone: another context (another schema) with keys of its own.
      const other = await createTestContext({ dataset: DATASET, env });
      try {
        await principalsHeldBy(other.app);
        const on = (keyRef: string) => other.app.inject({ method: 'GET', url: url('/me'), headers: { 'x-api-key': keyOf(other, keyRef) } });
        for (const keyRef of ACCOUNTS) for (let i = 0; i < 2; i++) assert.equal((await on(keyRef)).statusCode, 200, keyRef);
        const started = Date.now();
        // The new account reuses the first account's id: its version must not be one a server holds.
        await psql(
          other.databaseUrl,
          `truncate accounts restart identity cascade;
           insert into accounts (email, plan, plan_status, created_at) values ('new@example.com', 'enthusiast', 'active', '2026-01-01T00:00:00.000Z')`,
        );
        for (const keyRef of ACCOUNTS) {
          await within(1000 - (Date.now() - started), `${keyRef} refused`, async () => (await on(keyRef)).statusCode === 401);
        }
      } finally {
        await other.close();
      }
    });
  });
}

describe(`migration 0018 (${TEST_STORE}): down and up again`, () => {
  test('its triggers go and come back; on SQLite it changes nothing', async () => {
    const { store, close } = await openTestStore();
    try {
      const triggers = async () =>
        store.dialect === 'postgres'
          ? (await sql<{ name: string }>`select tgname as name from pg_trigger where tgname like '%truncate%' and tgrelid::regclass::text in ('api_keys', 'accounts', 'data_version') order by 1`.execute(store.db)).rows.map((row) => row.name)
          : [];
      const expected = store.dialect === 'postgres' ? ['accounts_access_truncate', 'accounts_access_truncate_floor', 'api_keys_access_truncate', 'data_version_truncate'] : [];
      assert.deepEqual(await triggers(), expected);
      // The migrations after it go down and up with it.
      assert.deepEqual((await migrateTo(store, '0017-request-log-chunks')).at(-1), '0018-truncate-access');
      assert.deepEqual(await triggers(), []);
      assert.deepEqual((await migrateToLatest(store))[0], '0018-truncate-access');
      assert.deepEqual(await triggers(), expected);
    } finally {
      await close();
    }
  });
});
