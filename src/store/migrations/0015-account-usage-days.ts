/**
 * The account's usage per UTC day (issue 19: the overview's and the account CSV's 90 days read 90 days'
 * rows, not 20 keys x 90 days): account_usage_days holds, per account, day and field, the sum over the
 * account's keys of key_usage_buckets' day rows (`e:<endpoint>`, `t:<i>`) and of key_outcomes_daily
 * (`o:<outcome>`).
 *
 * Kept by triggers on the two per-key tables, not by the statistics' flush: every writer then keeps it
 * exact in the same transaction as the key's row, whoever it is (the flush, a server of the previous release
 * still running after `shelfapi migrate`, a row typed into psql), and a key's row changed or deleted by hand
 * moves the account's total with it. The migration fills it from the rows already there. Hour rows
 * (`2026-11-24T08`, 13 characters) are not summed: the 24-hour range reads the keys' hours.
 *
 * SQLite: WITHOUT ROWID, so the primary key's b-tree holds the row and a range of days is read without a
 * second lookup per row (key_usage_buckets, a rowid table, costs both).
 */
import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** What each per-key table adds to the account's day: its day, field and requests as SQL over a row `r`. */
const SOURCES = [
  { table: 'key_usage_buckets', day: (r: string) => `${r}.period`, field: (r: string) => `${r}.field`, where: (r: string) => `length(${r}.period) = 10` },
  { table: 'key_outcomes_daily', day: (r: string) => `${r}.day`, field: (r: string) => `'o:' || ${r}.outcome`, where: () => '1 = 1' },
] as const;

const UPSERT_END = `on conflict (account_id, day, field) do update set requests = account_usage_days.requests + excluded.requests`;

/** Adds `sign` times row r's requests to its account's day (the account read from api_keys by the row's key). */
function addRow(source: (typeof SOURCES)[number], r: 'new' | 'old', sign: '' | '-'): string {
  return `insert into account_usage_days (account_id, day, field, requests)
    select k.account_id, ${source.day(r)}, ${source.field(r)}, ${sign}${r}.requests from api_keys k
    where k.id = ${r}.key_id and ${source.where(r)}
    ${UPSERT_END}`;
}

export function accountUsageDaysMigration(dialect: Dialect) {
  const pg = dialect === 'postgres';
  const id = pg ? 'bigint' : 'integer';
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema
        .createTable('account_usage_days')
        .addColumn('account_id', id, (c) => c.notNull())
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('field', 'text', (c) => c.notNull())
        .addColumn('requests', id, (c) => c.notNull())
        .addPrimaryKeyConstraint('account_usage_days_pk', ['account_id', 'day', 'field'])
        .$call((b) => (pg ? b : b.modifyEnd(sql`without rowid`)))
        .execute();
      for (const s of SOURCES) {
        await sql
          .raw(
            `insert into account_usage_days (account_id, day, field, requests)
             select k.account_id, ${s.day('r')}, ${s.field('r')}, sum(r.requests) from ${s.table} r
             join api_keys k on k.id = r.key_id where ${s.where('r')}
             group by k.account_id, ${s.day('r')}, ${s.field('r')}
             ${UPSERT_END}`,
          )
          .execute(db);
      }
      for (const s of SOURCES) {
        // An update of a row is its old requests taken away and its new ones added (a key or day changed
        // by hand moves between totals).
        const steps = { insert: [addRow(s, 'new', '')], update: [addRow(s, 'old', '-'), addRow(s, 'new', '')], delete: [addRow(s, 'old', '-')] };
        for (const [event, statements] of Object.entries(steps)) {
          const name = `${s.table}_account_${event}`;
          if (pg) {
            const returned = event === 'delete' ? 'old' : 'new';
            await sql.raw(`create function ${name}() returns trigger language plpgsql as $$ begin ${statements.join('; ')}; return ${returned}; end $$`).execute(db);
            await sql.raw(`create trigger ${name} after ${event} on ${s.table} for each row execute function ${name}()`).execute(db);
          } else {
            await sql.raw(`create trigger ${name} after ${event} on ${s.table} for each row begin ${statements.join('; ')}; end`).execute(db);
          }
        }
      }
    },
    async down(db: AnyDb): Promise<void> {
      for (const s of SOURCES) {
        for (const event of ['insert', 'update', 'delete']) {
          const name = `${s.table}_account_${event}`;
          await sql.raw(`drop trigger if exists ${name}${pg ? ` on ${s.table}` : ''}`).execute(db);
          if (pg) await sql.raw(`drop function if exists ${name}()`).execute(db);
        }
      }
      await db.schema.dropTable('account_usage_days').execute();
    },
  };
}
