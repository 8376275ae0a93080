/**
 * The settings screen's sign-in state, kept in the store so that every server sees it at once: the
 * generated handover secret (when none is configured), the handover tokens already used (single use),
 * the sessions (only the hash of each cookie), the one-time slot that shows a new key once, and the
 * create forms already submitted (a resubmitted form never makes a second key).
 */
import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

export function settingsSessionsMigration(dialect: Dialect) {
  const id = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema
        .createTable('settings_secrets')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('settings_handover_uses')
        .addColumn('jti', 'text', (c) => c.primaryKey())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('settings_handover_uses_expires').on('settings_handover_uses').column('expires_at').execute();
      await db.schema
        .createTable('settings_sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('account_id', id, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_seen_at', 'text', (c) => c.notNull())
        .addColumn('address', 'text')
        .execute();
      await db.schema.createIndex('settings_sessions_last_seen').on('settings_sessions').column('last_seen_at').execute();
      await db.schema
        .createTable('settings_reveals')
        .addColumn('session_hash', 'text', (c) => c.primaryKey().references('settings_sessions.id_hash').onDelete('cascade'))
        .addColumn('key_id', id, (c) => c.notNull())
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('settings_form_uses')
        .addColumn('nonce', 'text', (c) => c.primaryKey())
        .addColumn('session_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('settings_form_uses_created').on('settings_form_uses').column('created_at').execute();
      await db.schema.createIndex('settings_form_uses_session').on('settings_form_uses').column('session_hash').execute();
    },
  };
}
