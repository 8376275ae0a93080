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
import { setTimeout as sleep } from 'node:timers/promises';
import { SQLITE_BUSY_TIMEOUT_MS } from '../store/database.js';
import { withBusyTimeout } from './sqlite-busy-timeout.js';

/**
 * Waiting for another process's write lock. better-sqlite3 waits synchronously, blocking the event loop for
 * as long as busy_timeout allows: with the lock held elsewhere every request in flight froze the process
 * about a second in turn, /healthz included. So a write here blocks for at most LOCK_SPIN_MS, and while
 * the file stays locked the meter retries from timers, pausing a little longer each time up to
 * RETRY_MAX_MS, until each request's deadline; the event loop serves everything else meanwhile.
 */
const LOCK_SPIN_MS = 5;
const RETRY_FIRST_MS = 5;
const RETRY_MAX_MS = 50;

function isBusy(err: unknown): boolean {
  return err instanceof Error && /^SQLITE_BUSY/.test(String((err as { code?: unknown }).code));
}

interface Pending {
  request: AdmitRequest;
  /** Epoch ms after which it is refused instead of written (see AdmitRequest.deadline). */
  deadline: number;
  resolve: (admission: Admission) => void;
  reject: (error: unknown) => void;
}

export class SqliteMeter implements Meter {
  private readonly admitBatch: (requests: AdmitRequest[]) => Admission[];
  private pending: Pending[] = [];
  private flushScheduled = false;
  private readonly giveBack: (accountId: number, keyId: number, period: string, day: string) => void;
  private readonly usedStmt: SqliteDatabase.Statement;
  private readonly keyUsageStmt: SqliteDatabase.Statement;
  private readonly lastUsedStmt: SqliteDatabase.Statement;
  private readonly burstUsedStmt: SqliteDatabase.Statement;
  /** The pause before the next attempt while the file is locked; 0 once a write went through. */
  private retryMs = 0;

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

    const refund = conn.prepare(
      'UPDATE quota_usage SET used = used - 1 WHERE account_id = ? AND period = ? AND used > 0',
    );
    const refundDay = conn.prepare(
      'UPDATE key_usage_daily SET requests = requests - 1 WHERE key_id = ? AND day = ? AND requests > 0',
    );
    this.giveBack = conn.transaction((accountId: number, keyId: number, period: string, day: string) => {
      refund.run(accountId, period);
      refundDay.run(keyId, day);
    }).immediate;
    this.usedStmt = usedNow;
    this.lastUsedStmt = conn.prepare('SELECT last_used_at AS at FROM api_keys WHERE id = ?');
    this.burstUsedStmt = conn.prepare('SELECT count(*) FROM burst_events WHERE account_id = ? AND at_ms > ? AND at_ms <= ?').pluck();
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

  /** One attempt at a write transaction, waiting at most LOCK_SPIN_MS for the lock. */
  private attempt<T>(fn: () => T): T {
    return withBusyTimeout(this.conn, LOCK_SPIN_MS, fn);
  }

  /** The next pause while the file stays locked: RETRY_FIRST_MS, doubling up to RETRY_MAX_MS. */
  private nextRetryMs(): number {
    this.retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_FIRST_MS, this.retryMs * 2));
    return this.retryMs;
  }

  /** A write transaction, retried from timers while the file is locked, until `deadline` (epoch ms). */
  private async write<T>(fn: () => T, deadline: number): Promise<T> {
    for (;;) {
      try {
        const result = this.attempt(fn);
        this.retryMs = 0;
        return result;
      } catch (err) {
        if (!isBusy(err) || Date.now() >= deadline) throw err;
      }
      await sleep(Math.min(this.nextRetryMs(), Math.max(0, deadline - Date.now())));
    }
  }

  admit(request: AdmitRequest): Promise<Admission> {
    return new Promise((resolve, reject) => {
      const deadline = request.deadline ?? Date.now() + SQLITE_BUSY_TIMEOUT_MS;
      this.pending.push({ request, deadline, resolve, reject });
      this.scheduleFlush(0);
    });
  }

  private scheduleFlush(delayMs: number): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    if (delayMs === 0) setImmediate(() => this.flush());
    else setTimeout(() => this.flush(), delayMs);
  }

  /**
   * Decides every admission asked for since the last flush, in one transaction. While the file is locked
   * they wait together for the next attempt, joined by those asked for meanwhile; one past its deadline is
   * refused without being written, so a request answered 503 never counts.
   */
  private flush(): void {
    this.flushScheduled = false;
    const now = Date.now();
    const batch: Pending[] = [];
    for (const p of this.pending) {
      if (now < p.deadline) batch.push(p);
      else p.reject(new MeterUnavailableError(new Error('the store stayed locked until the deadline')));
    }
    this.pending = [];
    if (batch.length === 0) return;
    let admissions: Admission[];
    try {
      admissions = this.attempt(() => this.admitBatch(batch.map((p) => p.request)));
    } catch (err) {
      if (isBusy(err)) {
        this.pending = batch;
        this.scheduleFlush(this.nextRetryMs());
        return;
      }
      const error = new MeterUnavailableError(err);
      for (const p of batch) p.reject(error);
      return;
    }
    this.retryMs = 0;
    batch.forEach((p, i) => p.resolve(admissions[i] as Admission));
  }

  async refund(accountId: number, keyId: number, period: string, day: string, deadline?: number): Promise<void> {
    try {
      await this.write(() => this.giveBack(accountId, keyId, period, day), deadline ?? Date.now() + SQLITE_BUSY_TIMEOUT_MS);
    } catch (err) {
      throw new MeterUnavailableError(err);
    }
  }

  used(accountId: number, period: string): Promise<number> {
    return this.guard(() => (this.usedStmt.get(accountId, period) as { used: number } | undefined)?.used ?? 0);
  }

  // The account is not needed here: key ids are unique in the database (the Redis meter needs it).
  keyUsage(_accountId: number, keyId: number, sinceDay: string, untilDay = '9999-12-31'): Promise<KeyDailyUsage[]> {
    return this.guard(() => this.keyUsageStmt.all(keyId, sinceDay, untilDay) as KeyDailyUsage[]);
  }

  lastUsed(_accountId: number, keyIds: number[]): Promise<Map<number, string>> {
    return this.guard(() => {
      const out = new Map<number, string>();
      for (const id of keyIds) {
        const row = this.lastUsedStmt.get(id) as { at: string | null } | undefined;
        if (row?.at) out.set(id, row.at);
      }
      return out;
    });
  }

  burstUsed(accountId: number, now: number): Promise<number> {
    return this.guard(() => this.burstUsedStmt.get(accountId, now - WINDOW_MS, now) as number);
  }

  ping(): Promise<boolean> {
    return this.guard(() => this.conn.prepare('SELECT 1').get() !== undefined).catch(() => false);
  }

  async close(): Promise<void> {
    // The connection belongs to the store, which closes it.
  }
}
