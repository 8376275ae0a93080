/**
 * The SQLite meter's row per account (burst_windows, migration 0009): everything one admission reads and
 * writes, so that it costs one read and one write of a single row (one page of the file):
 *
 * - the burst window: its admission times, oldest first (`recent`); beyond ROW_TIMES_MAX the oldest spill
 *   into burst_events, counted by `n` (rows from before the migration are there too);
 * - the quota count of one period (`period`, `used`); quota_usage holds every other period's;
 * - each key's last use and its count of requests on one day (`day`, `keys`); api_keys.last_used_at and
 *   key_usage_daily hold the rest.
 *
 * A row takes up a new period or day by writing back the count it held to quota_usage/key_usage_daily (and
 * its keys' last use to api_keys), then reading the new one's from there: so what those tables held before
 * the migration carries over, and a clock a little apart in another process only moves counts back and
 * forth, never loses one. Every method runs inside the caller's transaction.
 */
import type SqliteDatabase from 'better-sqlite3';
import type { BurstWindowsTable } from '../store/schema.js';
import { ROW_TIMES_MAX, WindowTimes, decodeKeys, encodeKeys, type KeyDay } from './meter-row.js';

/** The row as the store holds it (schema.ts), less the account id it was read by. */
type StoredRow = Omit<BurstWindowsTable, 'account_id'>;

/** An account's row while a transaction works on it. */
export interface AccountRow {
  accountId: number;
  times: WindowTimes;
  /** Admission times spilled: those in burst_events and those of `toSpill`. */
  spilled: number;
  /**
   * Times spilled in this transaction, ascending and newer than any in burst_events: inserted together at
   * save(). One statement per admission (and a prune and a read of the oldest) had been a fifth of the
   * request thread with one key past ROW_TIMES_MAX a minute (docs/performance.md).
   */
  toSpill: number[];
  /** The oldest time in burst_events as last read in this transaction; undefined: not read, null: none. */
  spilledOldest: number | null | undefined;
  period: string | null;
  used: number;
  day: string | null;
  keys: KeyDay[];
  dirty: boolean;
}

export class SqliteMeterRows {
  private readonly rowOf: SqliteDatabase.Statement;
  private readonly saveRow: SqliteDatabase.Statement;
  private readonly spill: SqliteDatabase.Statement;
  private readonly prune: SqliteDatabase.Statement;
  private readonly oldestOf: SqliteDatabase.Statement;
  private readonly usedOf: SqliteDatabase.Statement;
  private readonly archiveUsed: SqliteDatabase.Statement;
  private readonly dayOf: SqliteDatabase.Statement;
  private readonly archiveDay: SqliteDatabase.Statement;
  private readonly archiveLastUse: SqliteDatabase.Statement;

  constructor(conn: SqliteDatabase.Database) {
    this.rowOf = conn.prepare('SELECT n, recent, period, used, day, keys FROM burst_windows WHERE account_id = ?');
    this.saveRow = conn.prepare(
      `INSERT INTO burst_windows (account_id, n, recent, period, used, day, keys) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id) DO UPDATE SET n = excluded.n, recent = excluded.recent, period = excluded.period,
         used = excluded.used, day = excluded.day, keys = excluded.keys`,
    );
    this.spill = conn.prepare('INSERT INTO burst_events (account_id, at_ms) SELECT ?, value FROM json_each(?)');
    this.prune = conn.prepare('DELETE FROM burst_events WHERE account_id = ? AND at_ms <= ?');
    this.oldestOf = conn.prepare('SELECT min(at_ms) FROM burst_events WHERE account_id = ?').pluck();
    this.usedOf = conn.prepare('SELECT used FROM quota_usage WHERE account_id = ? AND period = ?').pluck();
    this.archiveUsed = conn.prepare(
      `INSERT INTO quota_usage (account_id, period, used) VALUES (?, ?, ?)
       ON CONFLICT (account_id, period) DO UPDATE SET used = excluded.used`,
    );
    this.dayOf = conn.prepare('SELECT requests FROM key_usage_daily WHERE key_id = ? AND day = ?').pluck();
    this.archiveDay = conn.prepare(
      `INSERT INTO key_usage_daily (key_id, day, requests) VALUES (?, ?, ?)
       ON CONFLICT (key_id, day) DO UPDATE SET requests = excluded.requests`,
    );
    this.archiveLastUse = conn.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
  }

  load(accountId: number): AccountRow {
    const row = this.rowOf.get(accountId) as StoredRow | undefined;
    return {
      accountId,
      times: WindowTimes.decode(row?.recent ?? null),
      spilled: row?.n ?? 0,
      toSpill: [],
      spilledOldest: undefined,
      period: row?.period ?? null,
      used: row?.used ?? 0,
      day: row?.day ?? null,
      keys: decodeKeys(row?.keys ?? null),
      dirty: false,
    };
  }

  save(row: AccountRow): void {
    if (row.toSpill.length > 0) {
      this.spill.run(row.accountId, JSON.stringify(row.toSpill));
      row.toSpill = [];
      row.spilledOldest = undefined;
    }
    this.saveRow.run(
      row.accountId,
      row.spilled,
      row.times.encode(),
      row.period,
      row.period === null ? null : row.used,
      row.day,
      row.keys.length === 0 ? null : encodeKeys(row.keys),
    );
    row.dirty = false;
  }

  /** Adds an admission time to the window, spilling the oldest (at save()) past ROW_TIMES_MAX. */
  record(row: AccountRow, at: number): void {
    row.times.add(at);
    if (row.times.length > ROW_TIMES_MAX) {
      row.toSpill.push(row.times.shift());
      row.spilled++;
    }
    row.dirty = true;
  }

  /** Drops the spilled times at or before `cutoff` (they left the window). */
  pruneSpilled(row: AccountRow, cutoff: number): void {
    if (row.spilled === 0) return;
    if (row.spilled > row.toSpill.length) {
      const oldest = this.oldestSpilled(row);
      if (oldest !== null && oldest <= cutoff) {
        const left = this.prune.run(row.accountId, cutoff).changes;
        row.spilled -= left;
        row.spilledOldest = undefined;
        row.dirty ||= left > 0;
      }
    }
    let drop = 0;
    while (drop < row.toSpill.length && row.toSpill[drop]! <= cutoff) drop++;
    if (drop > 0) {
      row.toSpill.splice(0, drop);
      row.spilled -= drop;
      row.dirty = true;
    }
  }

  /** The oldest spilled time, null for none. */
  oldestSpilled(row: AccountRow): number | null {
    if (row.spilled === 0) return null;
    if (row.spilled > row.toSpill.length) {
      if (row.spilledOldest === undefined) row.spilledOldest = (this.oldestOf.get(row.accountId) as number | null) ?? null;
      if (row.spilledOldest !== null) return row.spilledOldest;
    }
    return row.toSpill[0] ?? null;
  }

  /** The period's count: the row's, or quota_usage's for a period the row does not hold. */
  usedIn(row: AccountRow, period: string): number {
    return row.period === period ? row.used : this.quotaUsage(row.accountId, period);
  }

  quotaUsage(accountId: number, period: string): number {
    return (this.usedOf.get(accountId, period) as number | undefined) ?? 0;
  }

  /** Makes `period` the one the row counts in. */
  holdPeriod(row: AccountRow, period: string): void {
    if (row.period === period) return;
    if (row.period !== null) this.archiveUsed.run(row.accountId, row.period, row.used);
    row.used = this.quotaUsage(row.accountId, period);
    row.period = period;
    row.dirty = true;
  }

  /** The key's entry for `day`, made the row's day (its keys' counts and last use written back first). */
  keyOn(row: AccountRow, keyId: number, day: string): KeyDay {
    if (row.day !== day) {
      if (row.day !== null) {
        for (const k of row.keys) {
          if (k.count !== null) this.archiveDay.run(k.keyId, row.day, k.count);
          this.archiveLastUse.run(new Date(k.lastUsedMs).toISOString(), k.keyId);
        }
      }
      row.day = day;
      row.keys = [];
      row.dirty = true;
    }
    let key = row.keys.find((k) => k.keyId === keyId);
    if (key === undefined) {
      const count = (this.dayOf.get(keyId, day) as number | undefined) ?? null;
      // lastUsedMs is set by the caller, which touches the key.
      key = { keyId, lastUsedMs: 0, count };
      row.keys.push(key);
      row.dirty = true;
    }
    return key;
  }

  /** The key's entry in the row when it holds `day`, without taking the day up. */
  keyIfOn(row: AccountRow, keyId: number, day: string): KeyDay | undefined {
    return row.day === day ? row.keys.find((k) => k.keyId === keyId) : undefined;
  }
}
