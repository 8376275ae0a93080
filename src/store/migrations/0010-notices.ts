/**
 * Reminders for the platform to send (`shelfapi notices`): one row per thing an owner should hear about,
 * made once (`subject` is unique: the same expiry or the same month's 80% is never noticed twice) and
 * listed until an operator's mailer acknowledges it.
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

export function noticesMigration(dialect: Dialect) {
  const pg = dialect === 'postgres';
  const id = pg ? 'bigint' : 'integer';
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema
        .createTable('notices')
        .addColumn('id', id, (c) => (pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey()))
        .addColumn('subject', 'text', (c) => c.notNull().unique())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('account_id', id, (c) => c.notNull())
        .addColumn('key_id', id)
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('detail', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('acked_at', 'text')
        .execute();
      await sql`create index notices_unacked on notices (acked_at, id)`.execute(db);
    },
    async down(db: AnyDb): Promise<void> {
      await db.schema.dropTable('notices').execute();
    },
  };
}
