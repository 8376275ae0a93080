// PostgreSQL query time limits: a server gives up on a query after 1.5 s (so a request answers 503 within
// 2 seconds when PostgreSQL stops answering), while an operator command waits for its bulk statements
// (a million-row seed has statements longer than that, and failed with "Query read timeout").
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { isStoreUnavailable } from '../../src/http/store-unavailable.js';
import { openStore } from '../../src/store/database.js';
import { freshPostgresSchema, TEST_STORE } from '../helpers/test-app.js';

describe('PostgreSQL query time limits', { skip: TEST_STORE !== 'postgres' && 'PostgreSQL only' }, () => {
  let schema: { url: string; drop: () => Promise<void> };
  before(async () => {
    schema = await freshPostgresSchema();
  });
  after(async () => {
    await schema.drop();
  });

  it('a store serving requests reports a 2-second query as the store being unavailable', async () => {
    const store = openStore({ dialect: 'postgres', url: schema.url });
    try {
      const error = await sql`select pg_sleep(2)`.execute(store.db).then(
        () => null,
        (err: unknown) => err,
      );
      assert.ok(error instanceof Error, 'the query was cut off');
      assert.ok(isStoreUnavailable(error), `classified as unavailable: ${String(error)}`);
    } finally {
      await store.close();
    }
  });

  it('a store opened for an operator command waits for a long statement', async () => {
    const store = openStore({ dialect: 'postgres', url: schema.url }, { queryTimeoutMs: null });
    try {
      const result = await sql<{ done: number }>`select 1 as done from pg_sleep(2)`.execute(store.db);
      assert.equal(result.rows[0]?.done, 1);
    } finally {
      await store.close();
    }
  });
});
