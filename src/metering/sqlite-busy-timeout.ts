/**
 * Writes on the store's SQLite connection that must not wait the store's busy_timeout for another process's
 * lock (better-sqlite3 waits synchronously, blocking the event loop): the meter and the per-key statistics.
 */
import type SqliteDatabase from 'better-sqlite3';

/**
 * Runs `fn` with the connection's busy_timeout set to `ms`, then puts the store's back. better-sqlite3 is
 * synchronous: nothing else runs on the shared connection in between.
 */
export function withBusyTimeout<T>(conn: SqliteDatabase.Database, ms: number, fn: () => T): T {
  const timeout = conn.pragma('busy_timeout', { simple: true }) as number;
  conn.pragma(`busy_timeout = ${ms}`);
  try {
    return fn();
  } finally {
    conn.pragma(`busy_timeout = ${timeout}`);
  }
}
