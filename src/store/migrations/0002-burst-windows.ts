/**
 * A running count of each account's burst window, kept by the meters beside the window's rows, so that
 * admitting a request costs the same whatever the size of the window (count(*) over the rows grew with
 * the request rate).
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

export function burstWindowsMigration(dialect: Dialect) {
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema
        .createTable('burst_windows')
        .addColumn('account_id', dialect === 'postgres' ? 'bigint' : 'integer', (c) => c.primaryKey())
        .addColumn('n', 'integer', (c) => c.notNull())
        .execute();
      await sql`insert into burst_windows (account_id, n) select account_id, count(*) from burst_events group by account_id`.execute(db);
    },
  };
}
