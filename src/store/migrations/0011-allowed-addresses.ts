/**
 * A key's allowed addresses (docs/contract.md, "Allowed addresses"): api_keys.allowed_addresses, the
 * canonical addresses and CIDR ranges separated by spaces, or null for any address.
 *
 * The key lookup reads the column (api-key.repository.ts keyByHashQuery) and servers hold it with the key's
 * row (src/auth/principal-cache.ts), so a change must bump the account's access version as every other
 * column of that lookup does: migration 0008's update trigger is made again with this column among those it
 * watches. The PostgreSQL trigger function stays as 0008 made it.
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** Migration 0008's list, and this one's. */
const KEY_COLUMNS_0008 = 'account_id, key_hash, scopes, expires_at, revoked_at, retires_at';
const KEY_COLUMNS = `${KEY_COLUMNS_0008}, allowed_addresses`;

async function keyUpdateTrigger(db: AnyDb, dialect: Dialect, columns: string): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`drop trigger if exists api_keys_access_update`.execute(db);
    // recursive_triggers is off (SQLite's default), and the bump sets no column this trigger watches.
    await sql
      .raw(
        `create trigger api_keys_access_update after update of ${columns} on api_keys begin
           update accounts set access_version = access_version + 1 where id in (old.account_id, new.account_id);
         end`,
      )
      .execute(db);
    return;
  }
  await sql`drop trigger if exists api_keys_access_update on api_keys`.execute(db);
  await sql
    .raw(
      `create trigger api_keys_access_update after update of ${columns} on api_keys
         for each row execute function shelf_key_access_bump()`,
    )
    .execute(db);
}

export function allowedAddressesMigration(dialect: Dialect) {
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema.alterTable('api_keys').addColumn('allowed_addresses', 'text').execute();
      await keyUpdateTrigger(db, dialect, KEY_COLUMNS);
    },
    async down(db: AnyDb): Promise<void> {
      await keyUpdateTrigger(db, dialect, KEY_COLUMNS_0008);
      await db.schema.alterTable('api_keys').dropColumn('allowed_addresses').execute();
    },
  };
}
