/**
 * The in-memory half every statistics store shares (BufferedUsageStats): records are held, summed and
 * written in batches by the store's write(); what a failed write leaves is held for the next.
 */
import { mergeBuckets, mergeLastUse, mergeLog, mergeOutcomes, mergeRejections, requestLogOf, summarize, type LastUseRow, type OutcomeRow, type RejectionsOfKey } from './stats-batch.js';
import { COUNT_ROWS_PER_WRITE, COUNTS_WRITE_MS, FLUSH_DELAY_MS, FLUSH_RECORDS, LOG_LINES_PER_WRITE, LOG_WRITE_MS, MAX_HELD_RECORDS, type StatsPace } from './stats-pace.js';
import { BucketCounts } from './usage-buckets.js';
import type { DayOutcomes, LastUse, Rejection, RequestLogEntry, RequestRecord, StatsBatch, UsageStats } from './usage-stats.js';

/**
 * A flush that failed for some accounts only (a Redis Cluster with one master away): the others' records
 * were written and must not be written again. Any other error: nothing was written.
 */
export class StatsWriteError extends Error {
  constructor(
    cause: unknown,
    readonly accounts: ReadonlySet<number>,
  ) {
    super(cause instanceof Error ? cause.message : 'the statistics could not be written', { cause });
  }
}

/**
 * The in-memory half every store shares: records wait in an array, a timer writes them FLUSH_DELAY_MS after
 * the first one, one write at a time. A failed write keeps its records for the next flush (up to
 * MAX_HELD_RECORDS), so a brief outage of the store loses nothing.
 */
export abstract class BufferedUsageStats implements UsageStats {
  private held: RequestRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  /** A write asked for at the next turn, FLUSH_RECORDS being held. */
  private soon = false;
  /** The last write failed: records wait for the timer, not for their number, until one succeeds. */
  private failing = false;
  /** Records dropped because the store could not be written for too long. */
  dropped = 0;
  /** When records are written: FLUSH_DELAY_MS after the first, or at once when FLUSH_RECORDS are held. */
  pace: StatsPace = { flushDelayMs: FLUSH_DELAY_MS, flushRecords: FLUSH_RECORDS };

  protected abstract write(batch: StatsBatch): Promise<void>;
  /**
   * Whether a flush writes each hour's counts to its day too (the day buckets and the day outcomes), or the
   * store makes its days from its hours (BucketCounts; the outcomes' `o:` hours).
   */
  protected writesDayBuckets(): boolean {
    return true;
  }
  /** A flush's request log lines (requestLogOf); bench/stats-overhead.ts --log measures the item GET without them. */
  protected requestLogOf(records: readonly RequestRecord[]): StatsBatch['log'] {
    return requestLogOf(records);
  }
  abstract keyOutcomes(accountId: number, keyId: number, sinceDay: string, untilDay: string): Promise<DayOutcomes[]>;
  abstract keysOutcomes(accountId: number, keyIds: readonly number[], sinceDay: string, untilDay: string): Promise<DayOutcomes[]>;
  abstract recentRejections(accountId: number, keyId: number): Promise<Rejection[]>;
  abstract lastUse(accountId: number, keyIds: readonly number[]): Promise<Map<number, LastUse>>;
  abstract requestLog(accountId: number, keyId: number, since: string): Promise<RequestLogEntry[]>;
  abstract usageBuckets(accountId: number, keyIds: readonly number[], periods: readonly string[]): Promise<Map<string, Map<string, number>>>;
  abstract accountDays(accountId: number, shown: readonly number[], hidden: readonly number[], days: readonly string[]): Promise<Map<string, Map<string, number>>>;
  protected abstract disconnect(): Promise<void>;

  record(request: RequestRecord): void {
    this.held.push(request);
    if (this.held.length >= this.pace.flushRecords && !this.failing) this.flushSoon();
    else this.scheduleFlush();
  }

  /** A flush at the next turn of the event loop (after the request that filled the batch is answered). */
  private flushSoon(): void {
    if (this.soon) return;
    this.soon = true;
    setImmediate(() => {
      this.soon = false;
      void this.write_('busy').catch(() => {});
    });
  }

  /** A flush FLUSH_DELAY_MS from now, unless one is pending already. */
  private scheduleFlush(): void {
    if (this.timer !== null) return;
    this.timer = setTimeout(() => void this.write_('timer').catch(() => {}), this.pace.flushDelayMs);
    // A pending flush does not keep a process alive; close() writes what is left.
    this.timer.unref();
  }

  /**
   * Request log lines summed from flushed records but not written yet: a flush started because
   * FLUSH_RECORDS were held (a busy server, several a second) writes the log at most every LOG_WRITE_MS, its
   * newest 100 lines per key; lines a later request pushed out are never written. The timer's flush writes
   * them too, flush() (tests, close) all at once.
   */
  private pendingLog = new Map<number, StatsBatch['log'][number]>();
  private logWrittenAt = 0;
  /** A due log was written in part: the rest goes at the next turn, whatever the time. */
  private logBacklog = false;
  /**
   * Bucket counts, last uses, day counts by outcome and rejections summed from flushed records, not written
   * yet (COUNTS_WRITE_MS). Written at every flush, the outcomes and rejections were a third of what the
   * statistics cost SQLite on a busy server: one upsert and a trim per key, several times a second.
   */
  private pendingBuckets = new BucketCounts(this.writesDayBuckets());
  private pendingLastUse = new Map<number, LastUseRow>();
  private pendingOutcomes = new Map<number, Map<string, OutcomeRow>>();
  private pendingRejections = new Map<number, RejectionsOfKey>();
  private countsWrittenAt = 0;
  /**
   * Rows of counts, last uses and rejections a busy write takes at most (whole keys; the rest at the next
   * turns); Infinity: all at once (tests). A second's counts of 10,000 keys (~38,000 rows) written at once
   * held SQLite's event loop 130-230 ms each second; on PostgreSQL + Redis (no statistics thread) building
   * their script calls at once put an item GET's p99 at 109-162 ms, in slices 53-57 ms (docs/performance.md,
   * 2026-11-27).
   */
  protected countRowsPerWrite = COUNT_ROWS_PER_WRITE;
  /** Lines of the request log a busy write takes at most (LOG_LINES_PER_WRITE). */
  protected logLinesPerWrite = LOG_LINES_PER_WRITE;
  /**
   * The keys of a due write of the counts still to be taken, lowest id first (their rows lie together in
   * the tables' key-first indexes); keys counted while it goes wait for the next due write.
   */
  private countsQueue: number[] = [];
  /** A due write of the counts went in part: the rest goes at the next turn, whatever the time. */
  private countsBacklog = false;

  /**
   * Held log lines of whole keys, at least one key and about `lines` lines, taken out of those held. A busy
   * server's log of a second (10,000 lines over 1,000 keys) written at once held SQLite's event loop ~45 ms;
   * in slices of LOG_LINES_PER_WRITE, a turn at a time, the requests in between are answered.
   */
  private takeLog(lines: number): StatsBatch['log'] {
    const taken: StatsBatch['log'] = [];
    let n = 0;
    for (const [keyId, entry] of this.pendingLog) {
      if (taken.length > 0 && n + entry.items.length > lines) break;
      taken.push(entry);
      n += entry.items.length;
      this.pendingLog.delete(keyId);
    }
    return taken;
  }

  /** Whether counts, last uses or rejections are held, not written yet. */
  private countsHeld(): boolean {
    return this.pendingBuckets.size > 0 || this.pendingLastUse.size > 0 || this.pendingOutcomes.size > 0 || this.pendingRejections.size > 0;
  }

  /**
   * Held counts, last uses and rejections of whole keys, at least one key and about `rows` rows, taken out of
   * those held: the keys of the due write under way first (Infinity: every key held).
   */
  private takeCounts(rows: number): Pick<StatsBatch, 'buckets' | 'lastUse' | 'outcomes' | 'rejections'> {
    if (this.countsQueue.length === 0 || rows === Infinity) {
      const keyIds = new Set([...this.pendingBuckets.keyIds(), ...this.pendingLastUse.keys(), ...this.pendingOutcomes.keys(), ...this.pendingRejections.keys()]);
      this.countsQueue = [...keyIds].sort((a, b) => a - b);
    }
    const taken: Pick<StatsBatch, 'buckets' | 'lastUse' | 'outcomes' | 'rejections'> = { buckets: [], lastUse: [], outcomes: [], rejections: [] };
    let n = 0;
    let i = 0;
    for (; i < this.countsQueue.length; i++) {
      const keyId = this.countsQueue[i]!;
      const outcomes = this.pendingOutcomes.get(keyId);
      const lastUse = this.pendingLastUse.get(keyId);
      const rejections = this.pendingRejections.get(keyId);
      const keyRows = this.pendingBuckets.rowsOf(keyId) + (outcomes?.size ?? 0) + (lastUse === undefined ? 0 : 1) + (rejections?.items.length ?? 0);
      if (n > 0 && n + keyRows > rows) break;
      n += keyRows;
      taken.buckets.push(...this.pendingBuckets.take(keyId));
      if (outcomes !== undefined) taken.outcomes.push(...outcomes.values());
      if (lastUse !== undefined) taken.lastUse.push(lastUse);
      if (rejections !== undefined) taken.rejections.push(rejections);
      this.pendingOutcomes.delete(keyId);
      this.pendingLastUse.delete(keyId);
      this.pendingRejections.delete(keyId);
    }
    this.countsQueue = i === this.countsQueue.length ? [] : this.countsQueue.slice(i);
    return taken;
  }

  /** Writes everything held now (tests, and close). */
  flush(): Promise<void> {
    return this.write_('all');
  }

  /**
   * One write of what is held. The request log: 'all' every line held; 'timer' a slice of it; 'busy' a slice
   * only when LOG_WRITE_MS have passed since it was last written, or a slice of it is still to go. The usage
   * buckets and last uses: 'busy' only when COUNTS_WRITE_MS have passed since they were last written.
   */
  private write_(mode: 'all' | 'timer' | 'busy'): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const next = this.writing.then(async () => {
      const records = this.held;
      if (records.length === 0 && this.pendingLog.size === 0 && !this.countsHeld()) return;
      this.held = [];
      const { batch, buckets: ownBuckets } = summarize(records);
      mergeLog(this.pendingLog, this.requestLogOf(records));
      const logDue = mode !== 'busy' || this.logBacklog || Date.now() - this.logWrittenAt >= LOG_WRITE_MS;
      batch.log = logDue ? this.takeLog(mode === 'all' ? Infinity : this.logLinesPerWrite) : [];
      // The counts, last uses and rejections of these records join those held; all of them go when due.
      const own = { lastUse: batch.lastUse, outcomes: batch.outcomes, rejections: batch.rejections };
      ownBuckets.addTo(this.pendingBuckets);
      mergeLastUse(this.pendingLastUse, own.lastUse);
      if (this.pendingBuckets.withDays) mergeOutcomes(this.pendingOutcomes, own.outcomes);
      mergeRejections(this.pendingRejections, own.rejections);
      const countsDue = mode !== 'busy' || this.countsBacklog || Date.now() - this.countsWrittenAt >= COUNTS_WRITE_MS;
      Object.assign(batch, countsDue ? this.takeCounts(mode === 'all' ? Infinity : this.countRowsPerWrite) : { buckets: [], lastUse: [], outcomes: [], rejections: [] });
      try {
        await this.write(batch);
        this.failing = false;
        if (logDue) this.logWrittenAt = Date.now();
        if (countsDue) this.countsWrittenAt = Date.now();
        // What is left of a due log or of due counts goes at the next turn; the log and counts held back,
        // by the timer's flush if no other comes first.
        this.logBacklog = logDue && this.pendingLog.size > 0;
        this.countsBacklog = countsDue && this.countsQueue.length > 0;
        if (this.logBacklog || this.countsBacklog) this.flushSoon();
        else if (this.pendingLog.size > 0 || this.countsHeld()) this.scheduleFlush();
      } catch (error) {
        this.failing = true;
        // Keep what was not written for the next flush, oldest dropped past the limit.
        const failed = error instanceof StatsWriteError ? error.accounts : null;
        const unwritten = failed === null ? records : records.filter((r) => failed.has(r.accountId));
        const kept = [...unwritten, ...this.held];
        this.dropped += Math.max(0, kept.length - MAX_HELD_RECORDS);
        this.held = kept.slice(-MAX_HELD_RECORDS);
        // Log lines of the records kept come again from them; merging drops the copies (same request id).
        const ofFailed = <T extends { accountId: number }>(rows: readonly T[]): readonly T[] =>
          failed === null ? rows : rows.filter((r) => failed.has(r.accountId));
        mergeLog(this.pendingLog, ofFailed(batch.log));
        // Counts taken and not written are held again, less what the records kept will bring again (last
        // uses and rejections merge to the same whichever way they come twice).
        if (countsDue) {
          mergeBuckets(this.pendingBuckets, ofFailed(batch.buckets));
          mergeLastUse(this.pendingLastUse, ofFailed(batch.lastUse));
          mergeOutcomes(this.pendingOutcomes, ofFailed(batch.outcomes));
          mergeRejections(this.pendingRejections, ofFailed(batch.rejections));
        }
        ownBuckets.addTo(this.pendingBuckets, -1, failed === null ? undefined : (accountId) => failed.has(accountId));
        if (this.pendingBuckets.withDays) mergeOutcomes(this.pendingOutcomes, ofFailed(own.outcomes), -1);
        this.scheduleFlush();
        throw error;
      }
    });
    this.writing = next.catch(() => {});
    return next;
  }

  /**
   * Writes what is held, then lets go of the store. A stop must not fail on statistics: when the last
   * write cannot be made (the store is away or locked), its records are counted as dropped, like records
   * past the limit, and the stop goes on (the quota never depends on them).
   */
  async close(): Promise<void> {
    try {
      await this.flush();
    } catch {
      this.dropped += this.held.length;
      this.held = [];
    } finally {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      await this.disconnect();
    }
  }
}
