/**
 * PostgreSQL tells every server when an account's access version or the data version changes, whoever made
 * the change (a service, `load`, an import, psql): one NOTIFY on the channel `shelfapi_versions`, sent when
 * the change commits. Each server LISTENs (src/store/version-listener.ts), writes an account's new version to
 * the meter's Redis and keeps the data version, so that a change typed into psql reaches every server within
 * a second although no server reads PostgreSQL on a request whose principal and answers it holds.
 *
 * The payload names the schema of the table (tests keep one schema per file in one database, and a channel
 * is the database's): `a <schema> <account id> <version>`, `a <schema> <account id> deleted`,
 * `d <schema> <version>`, `d <schema> none` (the data version row deleted); and, from migration 0018's
 * TRUNCATE triggers, `x <schema>` (drop every principal held). SQLite has no NOTIFY, and a
 * server on SQLite reads both versions on every request: nothing to do there.
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** The channel of migration 0014's notifications. */
export const VERSIONS_CHANNEL = 'shelfapi_versions';

export function versionNotifyMigration(dialect: Dialect) {
  return {
    async up(db: AnyDb): Promise<void> {
      if (dialect !== 'postgres') return;
      // After the row's own triggers (0008's bump on a plan change is a BEFORE trigger): the WHEN sees the
      // version as written.
      await sql`create function shelf_access_notify() returns trigger language plpgsql as $$
        begin
          if tg_op = 'DELETE' then
            perform pg_notify('shelfapi_versions', 'a ' || tg_table_schema || ' ' || old.id || ' deleted');
            return old;
          end if;
          perform pg_notify('shelfapi_versions', 'a ' || tg_table_schema || ' ' || new.id || ' ' || new.access_version);
          return new;
        end $$`.execute(db);
      await sql`create trigger accounts_access_notify after update on accounts
          for each row when (old.access_version is distinct from new.access_version)
          execute function shelf_access_notify()`.execute(db);
      await sql`create trigger accounts_access_notify_delete after delete on accounts
          for each row execute function shelf_access_notify()`.execute(db);
      await sql`create function shelf_data_version_notify() returns trigger language plpgsql as $$
        begin
          if tg_op = 'DELETE' then
            perform pg_notify('shelfapi_versions', 'd ' || tg_table_schema || ' none');
            return old;
          end if;
          perform pg_notify('shelfapi_versions', 'd ' || tg_table_schema || ' ' || new.version);
          return new;
        end $$`.execute(db);
      await sql`create trigger data_version_notify after insert or update or delete on data_version
          for each row execute function shelf_data_version_notify()`.execute(db);
    },
    async down(db: AnyDb): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`drop trigger if exists accounts_access_notify on accounts`.execute(db);
      await sql`drop trigger if exists accounts_access_notify_delete on accounts`.execute(db);
      await sql`drop trigger if exists data_version_notify on data_version`.execute(db);
      await sql`drop function if exists shelf_access_notify()`.execute(db);
      await sql`drop function if exists shelf_data_version_notify()`.execute(db);
    },
  };
}
