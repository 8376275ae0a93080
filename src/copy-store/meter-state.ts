/**
 * The SQLite meter's counts, as the PostgreSQL meter keeps them. The SQLite meter holds what an admission
 * touches in one row per account (burst_windows; src/metering/sqlite-meter-rows.ts): the current month's
 * count, today's count and last use of each key, and the burst window's admission times. It writes the
 * month's and the day's counts back to quota_usage and key_usage_daily (and the last uses to api_keys)
 * only when its row moves on to another month or day. So after the rows of those tables are copied, each
 * account's row is merged in: its month's and day's counts replace the table's (the row's are the later),
 * a key's last use is the later of the two, and the window's times of the last minute become burst_events
 * rows (with their count in burst_windows), which is how the PostgreSQL meter keeps a window.
 */
import { sql, type Kysely } from 'kysely';
import { decodeKeys, decodeTimes } from '../metering/meter-row.js';
import { WINDOW_MS } from '../metering/periods.js';
import type { Database } from '../store/schema.js';
import type { SqliteSource } from './sqlite-source.js';

export interface MeterMerge {
  /** Month counts taken from the meter's rows (each replaced or added a quota_usage row). */
  monthCounts: number;
  /** Key-day counts taken from the meter's rows. */
  dayCounts: number;
  /** Last uses the meter's rows held later than api_keys. */
  lastUses: number;
  /** Admission times of the last minute, now burst_events rows. */
  burstTimes: number;
}

const CHUNK = 1000;

interface StoredRow {
  account_id: number;
  recent: Buffer | null;
  period: string | null;
  used: number | null;
  day: string | null;
  keys: Buffer | null;
}

export async function mergeMeterRows(source: SqliteSource, trx: Kysely<Database>, now: number): Promise<MeterMerge> {
  const months: Array<{ account_id: number; period: string; used: number }> = [];
  const days: Array<{ key_id: number; day: string; requests: number }> = [];
  const lastUses = new Map<number, string>();
  const window = new Map<number, number[]>();
  const since = now - WINDOW_MS;
  const inWindow = (accountId: number, at: number) => {
    if (at <= since) return;
    const times = window.get(accountId) ?? [];
    times.push(at);
    window.set(accountId, times);
  };

  const rows = source.conn.prepare('SELECT account_id, recent, period, used, day, keys FROM burst_windows').iterate() as Iterable<StoredRow>;
  for (const row of rows) {
    if (row.period !== null && row.used !== null) months.push({ account_id: row.account_id, period: row.period, used: row.used });
    if (row.day !== null) {
      for (const key of decodeKeys(row.keys)) {
        if (key.count !== null) days.push({ key_id: key.keyId, day: row.day, requests: key.count });
        if (key.lastUsedMs > 0) lastUses.set(key.keyId, new Date(key.lastUsedMs).toISOString());
      }
    }
    for (const at of decodeTimes(row.recent)) inWindow(row.account_id, at);
  }
  // Times spilled out of a row (past its 1,900), and rows from before the meter kept them in its row.
  const spilled = source.conn.prepare('SELECT account_id, at_ms FROM burst_events WHERE at_ms > ?').iterate(since) as Iterable<{ account_id: number; at_ms: number }>;
  for (const event of spilled) inWindow(event.account_id, event.at_ms);

  for (let i = 0; i < months.length; i += CHUNK) {
    await trx
      .insertInto('quota_usage')
      .values(months.slice(i, i + CHUNK))
      .onConflict((oc) => oc.columns(['account_id', 'period']).doUpdateSet({ used: sql`excluded.used` }))
      .execute();
  }
  for (let i = 0; i < days.length; i += CHUNK) {
    await trx
      .insertInto('key_usage_daily')
      .values(days.slice(i, i + CHUNK))
      .onConflict((oc) => oc.columns(['key_id', 'day']).doUpdateSet({ requests: sql`excluded.requests` }))
      .execute();
  }
  let laterUses = 0;
  const uses = [...lastUses];
  for (let i = 0; i < uses.length; i += CHUNK) {
    const values = uses.slice(i, i + CHUNK).map(([id, at]) => sql`(${id}::bigint, ${at}::text)`);
    const updated = await sql`
      update api_keys set last_used_at = v.at
      from (values ${sql.join(values)}) as v(id, at)
      where api_keys.id = v.id and (api_keys.last_used_at is null or api_keys.last_used_at < v.at)`.execute(trx);
    laterUses += Number(updated.numAffectedRows ?? 0n);
  }
  const events = [...window].flatMap(([account_id, times]) => times.map((at_ms) => ({ account_id, at_ms })));
  for (let i = 0; i < events.length; i += CHUNK) await trx.insertInto('burst_events').values(events.slice(i, i + CHUNK)).execute();
  const windows = [...window].map(([account_id, times]) => ({ account_id, n: times.length }));
  for (let i = 0; i < windows.length; i += CHUNK) await trx.insertInto('burst_windows').values(windows.slice(i, i + CHUNK)).execute();
  return { monthCounts: months.length, dayCounts: days.length, lastUses: laterUses, burstTimes: events.length };
}
