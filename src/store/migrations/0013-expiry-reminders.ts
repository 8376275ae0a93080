/**
 * The overview's expiry banner, hidden per key until the next UTC day (src/services/expiry-reminders.ts):
 * one row per account and key, with the time the dismissal lapses. Rows that lapsed are pruned whenever the
 * account hides another, so the table holds at most one row per live key.
 */
import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

export function expiryRemindersMigration(dialect: Dialect) {
  const id = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema
        .createTable('expiry_reminder_dismissals')
        .addColumn('account_id', id, (c) => c.notNull())
        .addColumn('key_id', id, (c) => c.notNull())
        .addColumn('until', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('expiry_reminder_dismissals_pkey', ['account_id', 'key_id'])
        .execute();
    },
    async down(db: AnyDb): Promise<void> {
      await db.schema.dropTable('expiry_reminder_dismissals').execute();
    },
  };
}
