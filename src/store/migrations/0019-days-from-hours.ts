/**
 * Usage buckets: a flush writes hours only, and the purge adds each hour to its day's row as it deletes it
 * (src/usage-stats/usage-buckets.ts), so a day is its row plus its hours still kept. Written at every flush,
 * the day rows (and their account totals' triggers) were half of what the statistics cost SQLite where many
 * keys are busy (docs/performance.md). Here each day's row gives back what its hours still kept hold, so that
 * every day reads the same after as before; down adds them again. Migration 0016's triggers move the
 * account's day totals with the rows.
 *
 * Reads add the hours to their days (database-usage-stats-reads.ts), found on an index of the hour rows
 * alone: on the primary key, 90 days of a key's rows had to be walked for its two days of hours
 * (bench/settings-pages.ts, SQLite: the account CSV of 20 keys p95 22.7 ms against 12.8 with the index). A
 * flush's upserts of a known hour leave the index untouched (they change the requests only).
 */
import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** The hour rows of the day row at hand: its key and field, in its day. */
const HOURS_OF_DAY = `from key_usage_buckets h
  where h.key_id = key_usage_buckets.key_id and h.field = key_usage_buckets.field and length(h.period) = 13
    and h.period >= key_usage_buckets.period || 'T00' and h.period <= key_usage_buckets.period || 'T23'`;

export function daysFromHoursMigration() {
  return {
    async up(db: AnyDb): Promise<void> {
      await db.schema.createIndex('key_usage_hours').on('key_usage_buckets').columns(['key_id', 'period']).where(sql<boolean>`length(period) = 13`).execute();
      await sql
        .raw(
          `update key_usage_buckets set requests = requests - (select sum(h.requests) ${HOURS_OF_DAY})
           where length(period) = 10 and field not like 'o:%' and exists (select 1 ${HOURS_OF_DAY})`,
        )
        .execute(db);
    },
    async down(db: AnyDb): Promise<void> {
      await db.schema.dropIndex('key_usage_hours').execute();
      await sql
        .raw(
          `insert into key_usage_buckets (key_id, period, field, requests)
           select key_id, substr(period, 1, 10), field, sum(requests) from key_usage_buckets
           where length(period) = 13 and field not like 'o:%'
           group by key_id, substr(period, 1, 10), field
           on conflict (key_id, period, field) do update set requests = key_usage_buckets.requests + excluded.requests`,
        )
        .execute(db);
    },
  };
}
