/**
 * Give-backs made exactly once: the request id of every counted request given back, kept a day. A give-back
 * whose reply was lost (PostgreSQL stalled after its COMMIT, before answering) is retried in the background;
 * the retry finds its token here and gives back nothing more.
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

export function refundTokensMigration(dialect: Dialect) {
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema
        .createTable('refund_tokens')
        .addColumn('token', 'text', (col) => col.primaryKey())
        .addColumn('at_ms', dialect === 'postgres' ? 'bigint' : 'integer', (col) => col.notNull())
        .execute();
      await sql`create index refund_tokens_at on refund_tokens (at_ms)`.execute(db);
    },
    async down(db: AnyDb): Promise<void> {
      await db.schema.dropTable('refund_tokens').execute();
    },
  };
}
