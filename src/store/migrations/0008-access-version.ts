/**
 * An access version per account, bumped by the database itself whenever what a request's key lookup reads
 * changes: a key's scopes, expiry, revocation, stop time, hash or account (or the key deleted), and the
 * account's plan or plan status. A server may then keep a key's principal in memory and check one integer
 * by primary key on each request instead of joining the key and its account: the next request after a
 * revoke, roll, scope or plan change still sees it, on every server, whichever service, CLI command, load
 * or hand-written UPDATE made it. Triggers, not calls in the services, so no writer can forget the bump.
 *
 * The triggers fire on the columns named, not on every update: the meter writes `last_used_at` on every
 * request, and that must not empty every server's cache. A key being made needs no bump (an unknown key is
 * never cached), nor does a rename (the name is not part of the principal).
 *
 * An account made after another was deleted may get its id (SQLite reuses the highest rowid). It starts
 * above every version a deleted account reached (access_version_floor), so a server still holding a key of
 * the deleted account sees a version it never held and looks the key up again.
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** The columns of api_keys that the key lookup reads (api-key.repository.ts keyByHashQuery). */
const KEY_COLUMNS = 'account_id, key_hash, scopes, expires_at, revoked_at, retires_at';

export function accessVersionMigration(dialect: Dialect) {
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema
        .alterTable('accounts')
        .addColumn('access_version', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createTable('access_version_floor')
        .addColumn('id', 'integer', (c) => c.primaryKey().check(sql`id = 1`))
        .addColumn('version', 'integer', (c) => c.notNull())
        .execute();
      await sql`insert into access_version_floor (id, version) values (1, 0)`.execute(db);
      if (dialect === 'sqlite') {
        // recursive_triggers is off (SQLite's default), and the bump sets no column these triggers watch.
        await sql
          .raw(
            `create trigger api_keys_access_update after update of ${KEY_COLUMNS} on api_keys begin
               update accounts set access_version = access_version + 1 where id in (old.account_id, new.account_id);
             end`,
          )
          .execute(db);
        await sql`create trigger api_keys_access_delete after delete on api_keys begin
            update accounts set access_version = access_version + 1 where id = old.account_id;
          end`.execute(db);
        await sql`create trigger accounts_access_plan after update of plan, plan_status on accounts begin
            update accounts set access_version = access_version + 1 where id = new.id;
          end`.execute(db);
        await sql`create trigger accounts_access_delete after delete on accounts begin
            update access_version_floor set version = max(version, old.access_version + 1) where id = 1;
          end`.execute(db);
        await sql`create trigger accounts_access_insert after insert on accounts begin
            update accounts set access_version = (select version from access_version_floor where id = 1) where id = new.id;
          end`.execute(db);
        return;
      }
      // The accounts table of the trigger's own schema, whatever the writer's search_path (tests keep one
      // schema per file in one database).
      await sql`create function shelf_key_access_bump() returns trigger language plpgsql as $$
        begin
          if tg_op = 'DELETE' then
            execute format('update %I.accounts set access_version = access_version + 1 where id = $1', tg_table_schema)
              using old.account_id;
            return old;
          end if;
          execute format('update %I.accounts set access_version = access_version + 1 where id in ($1, $2)', tg_table_schema)
            using old.account_id, new.account_id;
          return new;
        end $$`.execute(db);
      await sql
        .raw(
          `create trigger api_keys_access_update after update of ${KEY_COLUMNS} on api_keys
             for each row execute function shelf_key_access_bump()`,
        )
        .execute(db);
      await sql`create trigger api_keys_access_delete after delete on api_keys
          for each row execute function shelf_key_access_bump()`.execute(db);
      await sql`create function shelf_plan_access_bump() returns trigger language plpgsql as $$
        begin
          new.access_version := old.access_version + 1;
          return new;
        end $$`.execute(db);
      await sql`create trigger accounts_access_plan before update of plan, plan_status on accounts
          for each row execute function shelf_plan_access_bump()`.execute(db);
      await sql`create function shelf_account_access_floor() returns trigger language plpgsql as $$
        declare
          floor_version integer;
        begin
          if tg_op = 'DELETE' then
            execute format('update %I.access_version_floor set version = greatest(version, $1 + 1) where id = 1', tg_table_schema)
              using old.access_version;
            return old;
          end if;
          execute format('select version from %I.access_version_floor where id = 1', tg_table_schema) into floor_version;
          new.access_version := floor_version;
          return new;
        end $$`.execute(db);
      await sql`create trigger accounts_access_delete after delete on accounts
          for each row execute function shelf_account_access_floor()`.execute(db);
      await sql`create trigger accounts_access_insert before insert on accounts
          for each row execute function shelf_account_access_floor()`.execute(db);
    },
    async down(db: AnyDb): Promise<void> {
      await sql`drop trigger if exists api_keys_access_update ${sql.raw(dialect === 'postgres' ? 'on api_keys' : '')}`.execute(db);
      await sql`drop trigger if exists api_keys_access_delete ${sql.raw(dialect === 'postgres' ? 'on api_keys' : '')}`.execute(db);
      for (const trigger of ['accounts_access_plan', 'accounts_access_delete', 'accounts_access_insert']) {
        await sql`drop trigger if exists ${sql.raw(trigger)} ${sql.raw(dialect === 'postgres' ? 'on accounts' : '')}`.execute(db);
      }
      if (dialect === 'postgres') {
        await sql`drop function if exists shelf_key_access_bump()`.execute(db);
        await sql`drop function if exists shelf_plan_access_bump()`.execute(db);
        await sql`drop function if exists shelf_account_access_floor()`.execute(db);
      }
      await db.schema.dropTable('access_version_floor').execute();
      await db.schema.alterTable('accounts').dropColumn('access_version').execute();
    },
  };
}
