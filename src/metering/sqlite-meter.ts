/**
 * The database meter on SQLite. Admissions are decided inside BEGIN IMMEDIATE transactions on the shared
 * file, so they are exact for every process on the host, and each is durable (WAL) before its promise
 * resolves, so a response is never sent for a count that could still be lost.
 *
 * Group commit: admissions asked for within one turn of the event loop are decided one after another in
 * a single transaction. An admission reads and writes its account's row (sqlite-meter-rows.ts: window,
 * quota, the key's day and last use, one page of the file); the admissions of one account in a batch
 * read it once and write it once, so under load the cost per request falls instead of rising; with one
 * request at a time a batch is simply that request.
 *
 * The access check (admitChecked): a server that holds principals (api-pipeline.ts) has the batch read each
 * account's access version beside its row, so a held principal whose account changed is not admitted
 * (STALE) and a current one costs the request no read of its own; the batch also reads the data version,
 * which the requests it admitted then answer by.
 */
import type SqliteDatabase from 'better-sqlite3';
import type { AccessCheck, AccessCheckedMeter, Admission, AdmitRequest, KeyDailyUsage, Meter } from './meter.js';
import { admitUnchecked, MeterUnavailableError, STALE } from './meter.js';
import { DeadlineExceededError } from '../deadline.js';
import { dayOf, periodOf, WINDOW_MS } from './periods.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { SQLITE_BUSY_TIMEOUT_MS } from '../store/database.js';
import { withBusyTimeout } from './sqlite-busy-timeout.js';
import { SqliteMeterRows, type AccountRow } from './sqlite-meter-rows.js';

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
  /** The held principal's access version to check (AccessCheck.held), or null. */
  held: number | null;
  /** Epoch ms after which it is refused instead of written (see AdmitRequest.deadline). */
  deadline: number;
  resolve: (admission: Decided) => void;
  reject: (error: unknown) => void;
}

/** One batch of admissions: each account's row, read once and written once at the end. */
type BatchRows = Map<number, AccountRow>;

type Decided = Admission | typeof STALE;

export class SqliteMeter implements Meter, AccessCheckedMeter {
  private readonly admitBatch: (requests: Pending[]) => Decided[];
  #dataVersion: number | null = null;
  private pending: Pending[] = [];
  private flushScheduled = false;
  private readonly giveBack: (accountId: number, keyId: number, period: string, day: string) => void;
  private readonly usedNow: (accountId: number, period: string) => number;
  private readonly burstUsedNow: (accountId: number, now: number) => number;
  private readonly lastUsedNow: (accountId: number, keyIds: number[]) => Map<number, string>;
  private readonly keyUsageNow: (accountId: number, keyId: number, sinceDay: string, untilDay: string) => KeyDailyUsage[];
  /** The pause before the next attempt while the file is locked; 0 once a write went through. */
  private retryMs = 0;

  constructor(private readonly conn: SqliteDatabase.Database) {
    const rows = new SqliteMeterRows(conn);

    const admit = (r: AdmitRequest, batch: BatchRows): Admission => {
      let row = batch.get(r.accountId);
      if (row === undefined) batch.set(r.accountId, (row = rows.load(r.accountId)));
      // The window is (now - 60 s, now]: times at or before its start leave it.
      const cutoff = r.now - WINDOW_MS;
      if (row.times.prune(cutoff) > 0) row.dirty = true;
      rows.pruneSpilled(row, cutoff);
      const n = row.times.length + row.spilled;
      let oldest = row.times.length > 0 ? row.times.at(0) : null;
      const spilled = rows.oldestSpilled(row);
      if (spilled !== null && (oldest === null || spilled < oldest)) oldest = spilled;
      if (n >= r.limits.perMinute) {
        const resetInMs = oldest === null ? WINDOW_MS : oldest + WINDOW_MS - r.now;
        return { burst: { allowed: false, remaining: 0, resetInMs }, quota: null };
      }
      rows.record(row, r.now);
      const period = periodOf(r.now);
      const key = rows.keyOn(row, r.keyId, dayOf(r.now));
      key.lastUsedMs = r.now;
      const burst = {
        allowed: true,
        remaining: r.limits.perMinute - n - 1,
        resetInMs: (oldest ?? r.now) + WINDOW_MS - r.now,
      };
      if (!r.quota) return { burst, quota: { allowed: true, used: rows.usedIn(row, period), period } };
      rows.holdPeriod(row, period);
      if (row.used >= r.limits.monthly) return { burst, quota: { allowed: false, used: row.used, period } };
      row.used++;
      key.count = (key.count ?? 0) + 1;
      return { burst, quota: { allowed: true, used: row.used, period } };
    };
    const accessOf = conn.prepare('SELECT access_version FROM accounts WHERE id = ?').pluck();
    const dataVersionOf = conn.prepare('SELECT version FROM data_version WHERE id = 1').pluck();
    this.admitBatch = conn.transaction((requests: Pending[]) => {
      const batch: BatchRows = new Map();
      const versions = new Map<number, number | undefined>();
      const current = (accountId: number) => {
        if (!versions.has(accountId)) versions.set(accountId, accessOf.get(accountId) as number | undefined);
        return versions.get(accountId);
      };
      // Only a held principal's request answers by the data version read here (the others read it with the key).
      if (requests.some((p) => p.held !== null)) {
        const version = dataVersionOf.get() as number | undefined;
        // No data_version row is a broken store: refuse rather than serve answers kept for some version.
        if (version === undefined) throw new Error('the store has no data version');
        this.#dataVersion = Number(version);
      }
      const admissions = requests.map((p): Decided => (p.held !== null && current(p.request.accountId) !== p.held ? STALE : admit(p.request, batch)));
      for (const row of batch.values()) if (row.dirty) rows.save(row);
      return admissions;
    }).immediate;

    const refund = conn.prepare(
      'UPDATE quota_usage SET used = used - 1 WHERE account_id = ? AND period = ? AND used > 0',
    );
    const refundDay = conn.prepare(
      'UPDATE key_usage_daily SET requests = requests - 1 WHERE key_id = ? AND day = ? AND requests > 0',
    );
    this.giveBack = conn.transaction((accountId: number, keyId: number, period: string, day: string) => {
      const row = rows.load(accountId);
      if (row.period === period) {
        if (row.used > 0) {
          row.used--;
          row.dirty = true;
        }
      } else {
        refund.run(accountId, period);
      }
      const key = rows.keyIfOn(row, keyId, day);
      if (key === undefined) refundDay.run(keyId, day);
      else if (key.count !== null && key.count > 0) {
        key.count--;
        row.dirty = true;
      }
      if (row.dirty) rows.save(row);
    }).immediate;

    // Reads are deferred transactions: the row and the tables beside it seen at one instant.
    this.usedNow = conn.transaction((accountId: number, period: string) => rows.usedIn(rows.load(accountId), period));
    const spilledIn = conn.prepare('SELECT count(*) FROM burst_events WHERE account_id = ? AND at_ms > ? AND at_ms <= ?').pluck();
    this.burstUsedNow = conn.transaction((accountId: number, now: number) => {
      const row = rows.load(accountId);
      const inRow = row.times.countIn(now - WINDOW_MS, now);
      return row.spilled > 0 ? inRow + (spilledIn.get(accountId, now - WINDOW_MS, now) as number) : inRow;
    });
    const lastUsedOf = conn.prepare('SELECT last_used_at FROM api_keys WHERE id = ?').pluck();
    this.lastUsedNow = conn.transaction((accountId: number, keyIds: number[]) => {
      const held = new Map(rows.load(accountId).keys.map((k) => [k.keyId, k.lastUsedMs]));
      const out = new Map<number, string>();
      for (const id of keyIds) {
        const ms = held.get(id);
        const at = ms === undefined ? (lastUsedOf.get(id) as string | null | undefined) : new Date(ms).toISOString();
        if (at) out.set(id, at);
      }
      return out;
    });
    const daysOf = conn.prepare(
      'SELECT day, requests FROM key_usage_daily WHERE key_id = ? AND day >= ? AND day <= ? ORDER BY day DESC',
    );
    this.keyUsageNow = conn.transaction((accountId: number, keyId: number, sinceDay: string, untilDay: string) => {
      const days = daysOf.all(keyId, sinceDay, untilDay) as KeyDailyUsage[];
      const row = rows.load(accountId);
      const key = row.day === null ? undefined : rows.keyIfOn(row, keyId, row.day);
      if (key === undefined || key.count === null || row.day === null || row.day < sinceDay || row.day > untilDay) return days;
      const day = row.day;
      const at = days.findIndex((d) => d.day <= day);
      if (at >= 0 && days[at]!.day === day) days[at] = { day, requests: key.count };
      else days.splice(at < 0 ? days.length : at, 0, { day, requests: key.count });
      return days;
    });
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
    return admitUnchecked(this, request);
  }

  admitChecked(request: AdmitRequest, access: AccessCheck): Promise<Decided> {
    return new Promise((resolve, reject) => {
      const deadline = request.deadline ?? Date.now() + SQLITE_BUSY_TIMEOUT_MS;
      this.pending.push({ request, held: access.held, deadline, resolve, reject });
      this.scheduleFlush(0);
    });
  }

  /** The data version read by the last batch that admitted a held principal (null before the first). */
  get dataVersion(): number | null {
    return this.#dataVersion;
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
      // Past its deadline before it was written (the file locked by another writer, or a busy host): a late
      // request, not a store outage, so the key's line behind it is not refused for it (key-gate.ts).
      else p.reject(new MeterUnavailableError(new DeadlineExceededError('the admission')));
    }
    this.pending = [];
    if (batch.length === 0) return;
    let admissions: Decided[];
    try {
      admissions = this.attempt(() => this.admitBatch(batch));
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
    batch.forEach((p, i) => p.resolve(admissions[i]!));
  }

  async refund(accountId: number, keyId: number, period: string, day: string, deadline?: number): Promise<void> {
    try {
      await this.write(() => this.giveBack(accountId, keyId, period, day), deadline ?? Date.now() + SQLITE_BUSY_TIMEOUT_MS);
    } catch (err) {
      throw new MeterUnavailableError(err);
    }
  }

  used(accountId: number, period: string): Promise<number> {
    return this.guard(() => this.usedNow(accountId, period));
  }

  keyUsage(accountId: number, keyId: number, sinceDay: string, untilDay = '9999-12-31'): Promise<KeyDailyUsage[]> {
    return this.guard(() => this.keyUsageNow(accountId, keyId, sinceDay, untilDay));
  }

  lastUsed(accountId: number, keyIds: number[]): Promise<Map<number, string>> {
    return this.guard(() => this.lastUsedNow(accountId, keyIds));
  }

  burstUsed(accountId: number, now: number): Promise<number> {
    return this.guard(() => this.burstUsedNow(accountId, now));
  }

  ping(): Promise<boolean> {
    return this.guard(() => this.conn.prepare('SELECT 1').get() !== undefined).catch(() => false);
  }

  async close(): Promise<void> {
    // The connection belongs to the store, which closes it.
  }
}
