/**
 * A TRUNCATE of a table the access check reads (api_keys, accounts) or of the data version takes effect
 * within a second, as every other change typed into psql does. Migrations 0008 and 0014 watch rows, and a
 * TRUNCATE fires no row trigger: after `truncate api_keys cascade` no account's version moved, so every
 * server kept answering 200 to the deleted keys from the principals it held. Statement-level triggers here:
 *   - after a truncate of api_keys, every account's access version is bumped (servers on PostgreSQL alone
 *     read it on each request; 0014 tells the servers on PostgreSQL + Redis of each account);
 *   - before a truncate of accounts, the floor (0008) is raised above every version about to go: with
 *     RESTART IDENTITY an account made afterwards takes a deleted account's id, and must not start at a
 *     version some server holds for a deleted key. Servers on PostgreSQL alone find the account gone;
 *   - after a truncate of either, the notification `x <schema>` makes every LISTENing server drop every
 *     principal it holds (version-listener.ts): 0014 cannot name the accounts that went;
 *   - after a truncate of data_version, `d <schema> none`, as 0014 sends when its row is deleted.
 * SQLite has no TRUNCATE (a `delete from` without a where fires the row triggers): nothing to do there.
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** name, before or after, table, function: the statement-level triggers this migration makes. */
const TRIGGERS = [
  ['api_keys_access_truncate', 'after', 'api_keys', 'shelf_truncate_access'],
  ['accounts_access_truncate', 'after', 'accounts', 'shelf_truncate_access'],
  ['accounts_access_truncate_floor', 'before', 'accounts', 'shelf_truncate_access_floor'],
  ['data_version_truncate', 'after', 'data_version', 'shelf_truncate_data_version'],
] as const;

export function truncateAccessMigration(dialect: Dialect) {
  return {
    async up(db: AnyDb): Promise<void> {
      if (dialect !== 'postgres') return;
      // The tables of the trigger's own schema, whatever the writer's search_path (as in 0008).
      await sql`create function shelf_truncate_access() returns trigger language plpgsql as $$
        begin
          if tg_table_name = 'api_keys' then
            execute format('update %I.accounts set access_version = access_version + 1', tg_table_schema);
          end if;
          perform pg_notify('shelfapi_versions', 'x ' || tg_table_schema);
          return null;
        end $$`.execute(db);
      await sql`create function shelf_truncate_access_floor() returns trigger language plpgsql as $$
        begin
          execute format(
            'update %I.access_version_floor set version = greatest(version, (select coalesce(max(access_version), -1) + 1 from %I.accounts)) where id = 1',
            tg_table_schema, tg_table_schema);
          return null;
        end $$`.execute(db);
      await sql`create function shelf_truncate_data_version() returns trigger language plpgsql as $$
        begin
          perform pg_notify('shelfapi_versions', 'd ' || tg_table_schema || ' none');
          return null;
        end $$`.execute(db);
      for (const [name, when, table, fn] of TRIGGERS) {
        await sql
          .raw(`create trigger ${name} ${when} truncate on ${table} for each statement execute function ${fn}()`)
          .execute(db);
      }
    },
    async down(db: AnyDb): Promise<void> {
      if (dialect !== 'postgres') return;
      for (const [name, , table] of TRIGGERS) await sql.raw(`drop trigger if exists ${name} on ${table}`).execute(db);
      await sql`drop function if exists shelf_truncate_access()`.execute(db);
      await sql`drop function if exists shelf_truncate_access_floor()`.execute(db);
      await sql`drop function if exists shelf_truncate_data_version()`.execute(db);
    },
  };
}
