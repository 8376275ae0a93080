/**
 * Key management from the settings screen and the command line (docs/contract.md, "Keys"):
 * - api_keys.retires_at: when a rolled key stops working (the request path compares it with now, so no
 *   job has to run); replaced_by: the key that replaced it.
 * - security_events: the owner's security log (90 days).
 * - key_outcomes_daily, key_rejections, key_last_use: per-key statistics for owners, written in batches
 *   at most a second after the requests (src/usage-stats/usage-stats.ts).
 */
import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

export function keyManagementMigration(dialect: Dialect) {
  const pg = dialect === 'postgres';
  const id = pg ? 'bigint' : 'integer';
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema.alterTable('api_keys').addColumn('retires_at', 'text').execute();
      await db.schema.alterTable('api_keys').addColumn('replaced_by', id).execute();

      await db.schema
        .createTable('security_events')
        .addColumn('id', id, (c) => (pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
        .addColumn('account_id', id, (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('address', 'text')
        .addColumn('key_id', id)
        .addColumn('key_name', 'text')
        .addColumn('key_hint', 'text')
        .addColumn('detail', 'text')
        .execute();
      await db.schema.createIndex('security_events_account').on('security_events').columns(['account_id', 'at', 'id']).execute();

      await db.schema
        .createTable('key_outcomes_daily')
        .addColumn('key_id', id, (c) => c.notNull())
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('requests', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('key_outcomes_daily_pk', ['key_id', 'day', 'outcome'])
        .execute();

      await db.schema
        .createTable('key_rejections')
        .addColumn('id', id, (c) => (pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
        .addColumn('key_id', id, (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('method', 'text', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('error', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('request_id', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('key_rejections_key').on('key_rejections').columns(['key_id', 'at', 'id']).execute();

      await db.schema
        .createTable('key_last_use')
        .addColumn('key_id', id, (c) => c.primaryKey())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('address', 'text')
        .execute();
    },
  };
}
