/**
 * Writes on the store's SQLite connection that must not wait the store's busy_timeout for another process's
 * lock (better-sqlite3 waits synchronously, blocking the event loop): the meter and the per-key statistics.
 */
import type SqliteDatabase from 'better-sqlite3';

interface BusyTimeoutStatements {
  read: SqliteDatabase.Statement;
  /** PRAGMA takes no parameters: one statement per value set. */
  set: Map<number, SqliteDatabase.Statement>;
}

/**
 * Prepared once per connection: `conn.pragma()` compiles its statement on every call, and the meter swaps
 * the timeout around every group commit (three pragmas cost about as much as the admission's own row).
 */
const statements = new WeakMap<SqliteDatabase.Database, BusyTimeoutStatements>();

function statementsOf(conn: SqliteDatabase.Database): BusyTimeoutStatements {
  let found = statements.get(conn);
  if (found === undefined) {
    found = { read: conn.prepare('PRAGMA busy_timeout').pluck(), set: new Map() };
    statements.set(conn, found);
  }
  return found;
}

function setBusyTimeout(conn: SqliteDatabase.Database, ms: number): void {
  const { set } = statementsOf(conn);
  let statement = set.get(ms);
  if (statement === undefined) {
    if (!Number.isSafeInteger(ms) || ms < 0) throw new Error(`busy_timeout: not a number of ms: ${ms}`);
    statement = conn.prepare(`PRAGMA busy_timeout = ${ms}`);
    set.set(ms, statement);
  }
  statement.get();
}

/**
 * Runs `fn` with the connection's busy_timeout set to `ms`, then puts the store's back. better-sqlite3 is
 * synchronous: nothing else runs on the shared connection in between.
 */
export function withBusyTimeout<T>(conn: SqliteDatabase.Database, ms: number, fn: () => T): T {
  const timeout = statementsOf(conn).read.get() as number;
  setBusyTimeout(conn, ms);
  try {
    return fn();
  } finally {
    setBusyTimeout(conn, timeout);
  }
}
