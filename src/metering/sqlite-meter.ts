/**
 * The database meter on SQLite. Admissions are decided inside BEGIN IMMEDIATE transactions on the shared
 * file, so they are exact for every process on the host, and each is durable (WAL) before its promise
 * resolves, so a response is never sent for a count that could still be lost.
 *
 * Group commit: admissions asked for within one turn of the event loop are decided one after another in
 * a single transaction. Each commit writes the same few pages (window, quota, key usage) whatever the
 * number of admissions in it, so under load the cost per request falls instead of rising; with one
 * request at a time a batch is simply that request.
 */
import type SqliteDatabase from 'better-sqlite3';
import type { Admission, AdmitRequest, KeyDailyUsage, Meter } from './meter.js';
import { MeterUnavailableError } from './meter.js';
import { WINDOW_MS, dayOf, periodOf } from './periods.js';

/**
 * After an admission found the file locked for the whole busy_timeout, further admissions make one attempt
 * without waiting, for this long (real time). Why: better-sqlite3 waits synchronously, so with the lock held
 * every request in flight would otherwise wait busy_timeout in turn, blocking the process: the k-th one
 * answered after k seconds, against "503 within 2 seconds" (decisions.md section 3). The first success ends
 * the window, and after it every admission waits as before, so ordinary contention between processes does
 * not turn into 503s.
 */
const FAIL_FAST_MS = 1000;

function isBusy(err: unknown): boolean {
  return err instanceof Error && /^SQLITE_BUSY/.test(String((err as { code?: unknown }).code));
}

interface Pending {
  request: AdmitRequest;
  resolve: (admission: Admission) => void;
  reject: (error: unknown) => void;
}

export class SqliteMeter implements Meter {
  private readonly admitBatch: (requests: AdmitRequest[]) => Admission[];
  private pending: Pending[] = [];
  private flushScheduled = false;
  private readonly refundStmt: SqliteDatabase.Statement;
  private readonly refundDayStmt: SqliteDatabase.Statement;
  private readonly usedStmt: SqliteDatabase.Statement;
  private readonly keyUsageStmt: SqliteDatabase.Statement;
  private readonly lastUsedStmt: SqliteDatabase.Statement;
  /** performance.now() until which writes do not wait for the lock (see FAIL_FAST_MS). */
  private failFastUntil = 0;

  constructor(private readonly conn: SqliteDatabase.Database) {
    const prune = conn.prepare('DELETE FROM burst_events WHERE account_id = ? AND at_ms <= ?');
    const shrink = conn.prepare('UPDATE burst_windows SET n = n - ? WHERE account_id = ?');
    const size = conn.prepare('SELECT n FROM burst_windows WHERE account_id = ?').pluck();
    const oldestOf = conn.prepare('SELECT min(at_ms) FROM burst_events WHERE account_id = ?').pluck();
    const record = conn.prepare('INSERT INTO burst_events (account_id, at_ms) VALUES (?, ?)');
    const grow = conn.prepare(
      `INSERT INTO burst_windows (account_id, n) VALUES (?, 1)
       ON CONFLICT (account_id) DO UPDATE SET n = n + 1`,
    );
    const usedNow = conn.prepare('SELECT used FROM quota_usage WHERE account_id = ? AND period = ?');
    const count = conn.prepare(
      `INSERT INTO quota_usage (account_id, period, used) VALUES (?, ?, 1)
       ON CONFLICT (account_id, period) DO UPDATE SET used = used + 1`,
    );
    const countDay = conn.prepare(
      `INSERT INTO key_usage_daily (key_id, day, requests) VALUES (?, ?, 1)
       ON CONFLICT (key_id, day) DO UPDATE SET requests = requests + 1`,
    );
    const touchKey = conn.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');

    const admit = (r: AdmitRequest): Admission => {
      // The window is (now - 60 s, now]: rows at or before its start leave it, and the count with them.
      const left = prune.run(r.accountId, r.now - WINDOW_MS).changes;
      if (left > 0) shrink.run(left, r.accountId);
      const n = (size.get(r.accountId) as number | undefined) ?? 0;
      if (n >= r.limits.perMinute) {
        const oldest = oldestOf.get(r.accountId) as number | null;
        const resetInMs = oldest === null ? WINDOW_MS : oldest + WINDOW_MS - r.now;
        return { burst: { allowed: false, remaining: 0, resetInMs }, quota: null };
      }
      const oldest = n === 0 ? r.now : ((oldestOf.get(r.accountId) as number | null) ?? r.now);
      record.run(r.accountId, r.now);
      grow.run(r.accountId);
      touchKey.run(new Date(r.now).toISOString(), r.keyId);
      const burst = {
        allowed: true,
        remaining: r.limits.perMinute - n - 1,
        resetInMs: oldest + WINDOW_MS - r.now,
      };
      const period = periodOf(r.now);
      const used = (usedNow.get(r.accountId, period) as { used: number } | undefined)?.used ?? 0;
      if (!r.quota) return { burst, quota: { allowed: true, used, period } };
      if (used >= r.limits.monthly) return { burst, quota: { allowed: false, used, period } };
      count.run(r.accountId, period);
      countDay.run(r.keyId, dayOf(r.now));
      return { burst, quota: { allowed: true, used: used + 1, period } };
    };
    this.admitBatch = conn.transaction((requests: AdmitRequest[]) => requests.map(admit)).immediate;

    this.refundStmt = conn.prepare(
      'UPDATE quota_usage SET used = used - 1 WHERE account_id = ? AND period = ? AND used > 0',
    );
    this.refundDayStmt = conn.prepare(
      'UPDATE key_usage_daily SET requests = requests - 1 WHERE key_id = ? AND day = ? AND requests > 0',
    );
    this.usedStmt = usedNow;
    this.lastUsedStmt = conn.prepare('SELECT last_used_at AS at FROM api_keys WHERE id = ?');
    this.keyUsageStmt = conn.prepare(
      'SELECT day, requests FROM key_usage_daily WHERE key_id = ? AND day >= ? AND day <= ? ORDER BY day DESC',
    );
  }

  private guard<T>(fn: () => T): Promise<T> {
    try {
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(new MeterUnavailableError(err));
    }
  }

  /** Runs a write transaction, waiting for the lock unless the store was just found locked. */
  private write<T>(fn: () => T): T {
    if (performance.now() >= this.failFastUntil) {
      try {
        return fn();
      } catch (err) {
        if (isBusy(err)) this.failFastUntil = performance.now() + FAIL_FAST_MS;
        throw err;
      }
    }
    // The connection is shared with the store, and better-sqlite3 is synchronous: nothing else runs on it
    // between setting busy_timeout to 0 and putting it back.
    const timeout = this.conn.pragma('busy_timeout', { simple: true }) as number;
    this.conn.pragma('busy_timeout = 0');
    try {
      const result = fn();
      this.failFastUntil = 0;
      return result;
    } finally {
      this.conn.pragma(`busy_timeout = ${timeout}`);
    }
  }

  admit(request: AdmitRequest): Promise<Admission> {
    return new Promise((resolve, reject) => {
      this.pending.push({ request, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Decides every admission asked for since the last flush, in one transaction. */
  private flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    let admissions: Admission[];
    try {
      admissions = this.write(() => this.admitBatch(batch.map((p) => p.request)));
    } catch (err) {
      const error = new MeterUnavailableError(err);
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => p.resolve(admissions[i] as Admission));
  }

  refund(accountId: number, keyId: number, period: string, day: string): Promise<void> {
    return this.guard(() =>
      this.write(() =>
        this.conn.transaction(() => {
          this.refundStmt.run(accountId, period);
          this.refundDayStmt.run(keyId, day);
        }).immediate(),
      ),
    );
  }

  used(accountId: number, period: string): Promise<number> {
    return this.guard(() => (this.usedStmt.get(accountId, period) as { used: number } | undefined)?.used ?? 0);
  }

  keyUsage(keyId: number, sinceDay: string, untilDay = '9999-12-31'): Promise<KeyDailyUsage[]> {
    return this.guard(() => this.keyUsageStmt.all(keyId, sinceDay, untilDay) as KeyDailyUsage[]);
  }

  lastUsed(keyIds: number[]): Promise<Map<number, string>> {
    return this.guard(() => {
      const out = new Map<number, string>();
      for (const id of keyIds) {
        const row = this.lastUsedStmt.get(id) as { at: string | null } | undefined;
        if (row?.at) out.set(id, row.at);
      }
      return out;
    });
  }

  ping(): Promise<boolean> {
    return this.guard(() => this.conn.prepare('SELECT 1').get() !== undefined).catch(() => false);
  }

  async close(): Promise<void> {
    // The connection belongs to the store, which closes it.
  }
}
