/**
 * The owner's request log and usage in depth (docs/contract.md, "Statistics"; src/usage-stats/usage-stats.ts,
 * usage-buckets.ts), written in batches like the other per-key statistics:
 * - key_request_log: each key's last 100 requests of every outcome, 7 days (trimmed at every flush);
 * - key_usage_buckets: per key and UTC hour (`2026-11-24T08`, kept 2 days) or day (`2026-11-24`),
 *   requests by endpoint, by outcome (hours) and by server-time bucket.
 */
import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** key_request_log as this migration made it; 0017's down makes it again from this one definition. */
export async function createRequestLogTable(db: AnyDb, pg: boolean): Promise<void> {
  const id = pg ? 'bigint' : 'integer';
  await db.schema
    .createTable('key_request_log')
    .addColumn('id', id, (c) => (pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
    .addColumn('key_id', id, (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('duration_ms', pg ? 'double precision' : 'real', (c) => c.notNull())
    .addColumn('address', 'text')
    .addColumn('request_id', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('key_request_log_key').on('key_request_log').columns(['key_id', 'at', 'id']).execute();
}

export function requestLogMigration(dialect: Dialect) {
  const pg = dialect === 'postgres';
  const id = pg ? 'bigint' : 'integer';
  return {
    async up(db: AnyDb): Promise<void> {
      await createRequestLogTable(db, pg);

      await db.schema
        .createTable('key_usage_buckets')
        .addColumn('key_id', id, (c) => c.notNull())
        .addColumn('period', 'text', (c) => c.notNull())
        .addColumn('field', 'text', (c) => c.notNull())
        .addColumn('requests', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('key_usage_buckets_pk', ['key_id', 'period', 'field'])
        .execute();
    },
    async down(db: AnyDb): Promise<void> {
      await db.schema.dropTable('key_usage_buckets').execute();
      await db.schema.dropTable('key_request_log').execute();
    },
  };
}
