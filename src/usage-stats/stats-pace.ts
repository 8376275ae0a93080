/**
 * When the buffered statistics (buffered-usage-stats.ts) are written: how long records wait, how many start
 * a write at once, and how much of the request log and of the counts a busy server's write takes.
 */

/** How long records wait in memory before they are written. */
export const FLUSH_DELAY_MS = 500;
/**
 * Records that start a write at once instead of waiting for the timer. A SQLite write runs synchronously:
 * at 8,000 requests a second, half a second's records (about 3,700 rows each of counts and last uses) held
 * the event loop 40-49 ms every flush, which set the p99 of every request at 50 connections. Smaller writes
 * cost more in all (each dirties the same pages of the two tables), so this is a middle: item GETs at 50
 * connections on SQLite (1M items, under the profiler) had p99 39-40 ms and 8,438-8,810 requests a second
 * without it, 28 ms and 8,202 with 2,000, and 22-23 ms and 7,484-7,742 with 500.
 */
export const FLUSH_RECORDS = 2000;
export interface StatsPace {
  flushDelayMs: number;
  flushRecords: number;
}

/** Records held at most while the store cannot be written; past this, the oldest are dropped. */
export const MAX_HELD_RECORDS = 100_000;

/**
 * How often a busy server writes the request log (flushes started by their number of records). Every 2 s
 * rather than every second: with 1,001 keys a write holds about 9 lines per key, not 5, so half the chunks'
 * rows, index entries and sweeps; the log's share of the item GET went from about 10% to about 5%
 * (docs/performance.md, 2026-11-27 12:01). A quiet server's timer flush writes it at once.
 */
export const LOG_WRITE_MS = 2000;
/** Lines of the request log a busy server's flush writes at most (the rest at the next turns). */
export const LOG_LINES_PER_WRITE = 2000;
/**
 * How often a busy server writes the usage buckets, last uses, day counts by outcome and rejections. Summed
 * over a second rather than a flush (several a second when busy): with a thousand keys each flush held about
 * one request per key, and wrote ~2.6 bucket rows, a last use and an outcome's upsert for each request
 * (docs/performance.md).
 */
export const COUNTS_WRITE_MS = 1000;
/**
 * Rows of counts, last uses and rejections a write takes at most: about as long a hold of the event loop as a
 * slice of the log (LOG_LINES_PER_WRITE), a few milliseconds. SQLite writes on the event loop; PostgreSQL and
 * Redis are written asynchronously, but the write's statements or script calls are built on it.
 */
export const COUNT_ROWS_PER_WRITE = 2000;
