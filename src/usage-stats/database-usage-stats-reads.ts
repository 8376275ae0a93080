/**
 * The owners' statistics read from the database (DatabaseUsageStats, database-usage-stats.ts), on SQLite and
 * PostgreSQL alike. Key ids are unique in the database: the account id is not needed but for its day totals.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { addField, outcomesByDay, REJECTIONS_KEPT, type DayOutcomes, type LastUse, type Rejection } from './usage-stats.js';

/**
 * The days' outcomes: each day's row of key_outcomes_daily plus its `o:` hours not yet purged (usage-buckets.ts),
 * summed per day and outcome over the keys.
 */
async function readOutcomes(db: Kysely<Database>, keyIds: readonly number[], sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
  if (keyIds.length === 0) return outcomesByDay(sinceDay, untilDay, []);
  const [rows, hours] = await Promise.all([
    db.selectFrom('key_outcomes_daily')
      .select(['day', 'outcome', (eb) => eb.fn.sum<number | string>('requests').as('requests')])
      .where('key_id', 'in', [...keyIds])
      .where('day', '>=', sinceDay)
      .where('day', '<=', untilDay)
      .groupBy(['day', 'outcome'])
      .execute(),
    hoursOfDays(db, sinceDay, untilDay, true).where('b.key_id', 'in', [...keyIds]).where('b.field', 'like', 'o:%').execute(),
  ]);
  return outcomesByDay(sinceDay, untilDay, [
    ...rows.map((row) => ({ ...row, requests: Number(row.requests) })),
    ...hours.map((row) => ({ day: row.day, outcome: row.field.slice(2), requests: Number(row.requests) })),
  ]);
}

export function readKeyOutcomes(db: Kysely<Database>, keyId: number, sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
  return readOutcomes(db, [keyId], sinceDay, untilDay);
}

export function readKeysOutcomes(db: Kysely<Database>, keyIds: readonly number[], sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
  return readOutcomes(db, keyIds, sinceDay, untilDay);
}

export async function readRecentRejections(db: Kysely<Database>, keyId: number): Promise<Rejection[]> {
  const rows = await db
    .selectFrom('key_rejections')
    .select(['at', 'method', 'path', 'status', 'error', 'message', 'request_id as requestId'])
    .where('key_id', '=', keyId)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(REJECTIONS_KEPT)
    .execute();
  return rows.map((r) => ({ ...r, status: Number(r.status) }));
}

export async function readLastUse(db: Kysely<Database>, keyIds: readonly number[]): Promise<Map<number, LastUse>> {
  if (keyIds.length === 0) return new Map();
  const rows = await db.selectFrom('key_last_use').select(['key_id', 'at', 'address']).where('key_id', 'in', [...keyIds]).execute();
  return new Map(rows.map((r) => [Number(r.key_id), { at: r.at, address: r.address }]));
}

/**
 * The days' counts still in hour rows (usage-buckets.ts: a day is its row plus its hours not yet purged),
 * summed per day and field, for the hours of the days from `first` to `last`; `o:` too with `outcomes` (the
 * account's totals, whose day outcomes come from key_outcomes_daily: its rows hold the purged hours only).
 */
function hoursOfDays(db: Kysely<Database>, first: string, last: string, outcomes = false) {
  const day = sql<string>`substr(b.period, 1, 10)`;
  return db
    .selectFrom('key_usage_buckets as b')
    .select([day.as('day'), 'b.field', (eb) => eb.fn.sum<number | string>('b.requests').as('requests')])
    .where('b.period', '>=', `${first}T00`)
    .where('b.period', '<=', `${last}T23`)
    .where(sql<number>`length(b.period)`, '=', 13)
    .$if(!outcomes, (q) => q.where('b.field', 'not like', 'o:%'))
    .groupBy([day, 'b.field']);
}

const firstOf = (days: readonly string[]) => days.reduce((a, b) => (a < b ? a : b));
const lastOf = (days: readonly string[]) => days.reduce((a, b) => (a > b ? a : b));

export async function readUsageBuckets(db: Kysely<Database>, keyIds: readonly number[], periods: readonly string[]): Promise<Map<string, Map<string, number>>> {
  const out = new Map<string, Map<string, number>>();
  if (keyIds.length === 0 || periods.length === 0) return out;
  const days = periods.filter((p) => p.length === 10);
  const [rows, hours] = await Promise.all([
    db
      .selectFrom('key_usage_buckets')
      .select(['period', 'field', (eb) => eb.fn.sum<number | string>('requests').as('requests')])
      .where('key_id', 'in', [...keyIds])
      .where('period', 'in', [...periods])
      .groupBy(['period', 'field'])
      .execute(),
    days.length === 0 ? [] : hoursOfDays(db, firstOf(days), lastOf(days)).where('b.key_id', 'in', [...keyIds]).execute(),
  ]);
  const wanted = new Set(days);
  for (const r of rows) addField(out, r.period, r.field, Number(r.requests));
  for (const r of hours) if (wanted.has(r.day)) addField(out, r.day, r.field, Number(r.requests));
  return out;
}

export async function readAccountDays(db: Kysely<Database>, accountId: number, hidden: readonly number[], days: readonly string[]): Promise<Map<string, Map<string, number>>> {
  const out = new Map<string, Map<string, number>>();
  if (days.length === 0) return out;
  const first = firstOf(days);
  const last = lastOf(days);
  // Migration 0015's totals hold every key of the account, through its triggers; the hidden keys' rows
  // (few: keys that ended over 90 days ago and are still tried) are taken away. The hours not yet purged
  // are added (those of the keys shown): the totals hold the days' rows only.
  const [totals, hours, hiddenBuckets, hiddenOutcomes] = await Promise.all([
    db
      .selectFrom('account_usage_days')
      .select(['day', 'field', 'requests'])
      .where('account_id', '=', accountId)
      .where('day', '>=', first)
      .where('day', '<=', last)
      .execute(),
    hoursOfDays(db, first, last, true)
      .innerJoin('api_keys as k', 'k.id', 'b.key_id')
      .where('k.account_id', '=', accountId)
      .$if(hidden.length > 0, (q) => q.where('b.key_id', 'not in', [...hidden]))
      .execute(),
    hidden.length === 0
      ? []
      : db
          .selectFrom('key_usage_buckets')
          .select(['period as day', 'field', 'requests'])
          .where('key_id', 'in', [...hidden])
          .where('period', 'in', [...days])
          .execute(),
    hidden.length === 0
      ? []
      : db
          .selectFrom('key_outcomes_daily')
          .select(['day', sql<string>`'o:' || outcome`.as('field'), 'requests'])
          .where('key_id', 'in', [...hidden])
          .where('day', '>=', first)
          .where('day', '<=', last)
          .execute(),
  ]);
  const wanted = new Set(days);
  for (const r of [...totals, ...hours]) if (wanted.has(r.day)) addField(out, r.day, r.field, Number(r.requests));
  for (const r of [...hiddenBuckets, ...hiddenOutcomes]) if (wanted.has(r.day)) addField(out, r.day, r.field, Number(r.requests), -1);
  return out;
}
