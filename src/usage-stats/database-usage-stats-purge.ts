/**
 * The purge of what is past its time in the database (database-usage-stats.ts): request log chunks past 7 days
 * and hour buckets past 2 days, a slice of each table a write, lowest key first. A slice's hours are added to
 * their days' rows in the same transaction (daysOfHours): a flush writes hours only (usage-buckets.ts).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { dayOfHourRow, HOURS_KEPT_MS, hourOf, outcomeDayOfHourRow } from './usage-buckets.js';
import { isOutcome, REQUEST_LOG_MS, type StatsBatch } from './usage-stats.js';

/** How often (real time) a flush also purges what is past its time. */
export const PURGE_EVERY_MS = 10 * 60_000;

/**
 * Rows of each table a purge deletes a write at most. The purge was one delete per table: the first after a
 * start held SQLite's event loop 12.9 s on a slow disk, and every request of the process waited.
 */
export const PURGE_ROWS_PER_WRITE = 2_000;

/**
 * A purge under way. `newest`: the latest request written when it began (epoch ms, the app's clock), from
 * which what is past its time is reckoned until it ends; per table, the key id its next slice starts from
 * (the rows of lower keys are gone), null once a slice found fewer rows than it may take.
 */
export interface Purge {
  readonly newest: number;
  readonly chunksFrom: number | null;
  readonly bucketsFrom: number | null;
}

/** Every key id, for a purge's first slice. */
export const FIRST_KEY = Number.MIN_SAFE_INTEGER;

/**
 * A purge's next slice of chunks past 7 days: at most `rows`, lowest key first from `fromKey`; returns the
 * key ids of those deleted. Found on the (key_id, oldest_ms, newest_ms, lines) index from `fromKey`, which
 * SQLite searches instead of the table's bodies. Taken in id order the slice walked the table's bodies
 * instead: 33-41 ms to find that none is left of 40,000 chunks, against 1.2 ms on the index (EXPLAIN QUERY
 * PLAN and times on a scratch database, 2026-11-27).
 */
export const chunkPurge = (db: Kysely<Database>, newest: number, fromKey: number, rows: number) =>
  db
    .deleteFrom('key_request_log_chunks')
    .where('id', 'in', (eb) =>
      eb.selectFrom('key_request_log_chunks').select('id').where('key_id', '>=', fromKey).where('newest_ms', '<', newest - REQUEST_LOG_MS).orderBy('key_id').limit(rows),
    )
    .returning('key_id');

/**
 * A purge's next slice of hour buckets past 2 days, as chunkPurge, returning the rows deleted (daysOfHours
 * adds them to their days), by the table's primary key (key_id,
 * period, field) on both dialects. `period || ''` keeps the period off the index: with statistics (ANALYZE)
 * SQLite otherwise chose a skip-scan of it (ANY(key_id) AND period<?), whose time did not follow `fromKey`
 * (a slice from key 900 of 10,000 keys of 156 rows each 22 ms, against 8 ms searching the index from
 * `fromKey` as now).
 */
export const bucketPurge = (db: Kysely<Database>, newest: number, fromKey: number, rows: number) =>
  db
    .deleteFrom('key_usage_buckets')
    .where((eb) =>
      eb(
        eb.refTuple('key_id', 'period', 'field'),
        'in',
        eb
          .selectFrom('key_usage_buckets as b')
          .select(['b.key_id', 'b.period', 'b.field'])
          .where('b.key_id', '>=', fromKey)
          .where(sql<number>`length(b.period)`, '=', 13)
          .where(sql<string>`b.period || ''`, '<', hourOf(newest - HOURS_KEPT_MS))
          // By the whole primary key: with statistics SQLite builds the list twice (the IN's rows and a
          // Bloom filter), and both must be the same rows.
          .orderBy('b.key_id')
          .orderBy('b.period')
          .orderBy('b.field')
          .limit(rows)
          .$asTuple('key_id', 'period', 'field'),
      ),
    )
    .returning(['key_id', 'period', 'field', 'requests']);

/** A row of key_usage_buckets as a purge returns it (PostgreSQL's bigint ids as strings). */
export interface PurgedBucket {
  key_id: number | string;
  period: string;
  field: string;
  requests: number | string;
}

/**
 * What purged hours add to their days: the day rows of key_usage_buckets (summed per key, day and field) and,
 * for the `o:` hours, the day outcomes of key_outcomes_daily (per key, day and outcome; only the outcomes this
 * build knows, as a flush writes them). Upserted in the purge's transaction, so an hour counts in its day
 * exactly once: either its row is still there (and reads add it to the day) or its day's row holds it.
 */
export function daysOfHours(purged: readonly PurgedBucket[]): Pick<StatsBatch, 'buckets' | 'outcomes'> {
  const days = new Map<string, StatsBatch['buckets'][number]>();
  const outcomes = new Map<string, StatsBatch['outcomes'][number]>();
  for (const r of purged) {
    const keyId = Number(r.key_id);
    const requests = Number(r.requests);
    // accountId is not written: the upserts take the key, period (day) and field (outcome).
    const period = dayOfHourRow(r.period, r.field);
    if (period !== null) {
      const id = `${keyId}|${period}|${r.field}`;
      const row = days.get(id);
      if (row === undefined) days.set(id, { accountId: 0, keyId, period, field: r.field, requests });
      else row.requests += requests;
      continue;
    }
    const of = outcomeDayOfHourRow(r.period, r.field);
    if (of === null || !isOutcome(of.outcome)) continue;
    const outcome = of.outcome;
    const id = `${keyId}|${of.day}|${outcome}`;
    const row = outcomes.get(id);
    if (row === undefined) outcomes.set(id, { accountId: 0, keyId, day: of.day, outcome, requests });
    else row.requests += requests;
  }
  return { buckets: [...days.values()], outcomes: [...outcomes.values()] };
}

/** Where a table's purge goes on after a slice that deleted rows of these keys: null when it took fewer than it could. */
export function purgedTo(keys: ReadonlyArray<{ key_id: number | string }>, rows: number): number | null {
  return keys.length < rows ? null : Math.max(...keys.map((k) => Number(k.key_id)));
}

/** The latest request of a batch (epoch ms), or null for none. */
export function newestOf(batch: StatsBatch): number | null {
  let newest: number | null = null;
  for (const entry of batch.log) {
    const last = entry.items[entry.items.length - 1];
    if (last !== undefined) newest = Math.max(newest ?? 0, Date.parse(last.at));
  }
  return newest;
}
