/**
 * Day outcomes as migration 0019 made the other days: a flush writes the `o:` hours only, and the purge adds
 * each hour to key_outcomes_daily as it deletes it (src/usage-stats/database-usage-stats-purge.ts), so a day's
 * outcomes are its rows there plus its `o:` hours still kept. Without a key's outcome row and its account
 * total's trigger at every flush, SQLite over 2,000 busy keys answers about 4% more (docs/performance.md).
 * Here each day's row gives back what its `o:` hours still kept hold, so that every day reads the same after
 * as before; down adds them again. Migration 0016's triggers move the account's day totals with the rows (the
 * reads add the hours to them).
 */
import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current schema type
type AnyDb = Kysely<any>;

/** The `o:` hour rows of the outcome row at hand: its key and outcome, in its day. */
const HOURS_OF_DAY = `from key_usage_buckets h
  where h.key_id = key_outcomes_daily.key_id and h.field = 'o:' || key_outcomes_daily.outcome and length(h.period) = 13
    and h.period >= key_outcomes_daily.day || 'T00' and h.period <= key_outcomes_daily.day || 'T23'`;

export function outcomesFromHoursMigration() {
  return {
    async up(db: AnyDb): Promise<void> {
      await sql
        .raw(`update key_outcomes_daily set requests = requests - (select sum(h.requests) ${HOURS_OF_DAY}) where exists (select 1 ${HOURS_OF_DAY})`)
        .execute(db);
    },
    async down(db: AnyDb): Promise<void> {
      await sql
        .raw(
          `insert into key_outcomes_daily (key_id, day, outcome, requests)
           select key_id, substr(period, 1, 10), substr(field, 3), sum(requests) from key_usage_buckets
           where length(period) = 13 and field like 'o:%'
           group by key_id, substr(period, 1, 10), substr(field, 3)
           on conflict (key_id, day, outcome) do update set requests = key_outcomes_daily.requests + excluded.requests`,
        )
        .execute(db);
    },
  };
}
