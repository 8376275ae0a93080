/**
 * The store copy-store reads: an SQLite file, opened read-only (nothing of it is ever changed), checked to
 * be a shelfapi store at this release's latest migration, and read in one read transaction so that every
 * table is read as of one moment.
 *
 * A store at an older migration is refused rather than migrated: migrating it would change the source,
 * and the operator runs `shelfapi migrate` on it first (the message says how), with their backups in hand.
 */
import { statSync } from 'node:fs';
import type SqliteDatabase from 'better-sqlite3';
import { InputError } from '../errors/input-error.js';
import { migrationNames, openSqliteConnection } from '../store/database.js';

export type SourceValue = string | number | null;
export type SourceRow = Record<string, SourceValue>;

/** Rows per batch handed to the target. */
export const BATCH_ROWS = 5000;

export interface SqliteSource {
  readonly path: string;
  readonly conn: SqliteDatabase.Database;
  /** Every table of the file (SQLite's own included), by name. */
  tables(): string[];
  columns(table: string): string[];
  count(table: string): number;
  /** The table's rows in batches, `columns` of each, in rowid order (or as stored, for a table without one). */
  batches(table: string, columns: readonly string[]): Generator<SourceRow[]>;
  close(): void;
}

/** A value as the target takes it: a BLOB as PostgreSQL's bytea text (`\x` and hex), everything else as read. */
function targetValue(value: unknown): SourceValue {
  if (value === null || typeof value === 'string' || typeof value === 'number') return value;
  if (Buffer.isBuffer(value)) return `\\x${value.toString('hex')}`;
  if (typeof value === 'bigint') return value.toString();
  throw new Error(`unexpected value of type ${typeof value}`);
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

export function openSqliteSource(path: string): SqliteSource {
  let stat;
  try {
    stat = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError(code === 'ENOENT' ? `--from ${path}: no such file` : `--from ${path}: cannot read it (${code ?? 'error'})`);
  }
  if (!stat.isFile()) throw new InputError(`--from ${path}: not a file (an SQLite store file is expected)`);
  let conn: SqliteDatabase.Database;
  try {
    conn = openSqliteConnection(path, { readonly: true });
  } catch (error) {
    throw new InputError(`--from ${path}: cannot open it as SQLite (${(error as Error).message})`);
  }
  try {
    checkShelfapiStore(conn, path);
    // One read transaction for the whole copy: every table as of one moment, even if a server still writes.
    conn.exec('BEGIN');
    conn.prepare('SELECT count(*) FROM kysely_migration').pluck().get();
  } catch (error) {
    conn.close();
    throw error;
  }
  return {
    path,
    conn,
    tables: () => conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[],
    columns: (table) => (conn.prepare(`SELECT name FROM pragma_table_info(?) ORDER BY cid`).pluck().all(table) as string[]),
    count: (table) => Number(conn.prepare(`SELECT count(*) FROM ${quoted(table)}`).pluck().get()),
    *batches(table, columns) {
      const hasRowid = (conn.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(table) as string | undefined)
        ?.toUpperCase()
        .includes('WITHOUT ROWID') !== true;
      const statement = conn.prepare(
        `SELECT ${columns.map(quoted).join(', ')} FROM ${quoted(table)}${hasRowid ? ' ORDER BY rowid' : ''}`,
      );
      let batch: SourceRow[] = [];
      for (const raw of statement.iterate() as Iterable<Record<string, unknown>>) {
        const row: SourceRow = {};
        for (const column of columns) row[column] = targetValue(raw[column]);
        batch.push(row);
        if (batch.length >= BATCH_ROWS) {
          yield batch;
          batch = [];
        }
      }
      if (batch.length > 0) yield batch;
    },
    close: () => {
      if (conn.inTransaction) conn.exec('ROLLBACK');
      conn.close();
    },
  };
}

/** A shelfapi store at the latest migration, or an InputError saying what it is instead. */
function checkShelfapiStore(conn: SqliteDatabase.Database, path: string): void {
  let tables: string[];
  try {
    tables = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  } catch (error) {
    // SQLITE_NOTADB: a file of another kind (its header is not SQLite's).
    throw new InputError(`--from ${path}: not an SQLite database (${(error as Error).message})`);
  }
  if (!tables.includes('kysely_migration') || !tables.includes('accounts')) {
    throw new InputError(`--from ${path}: an SQLite database, but not a shelfapi store (it has no shelfapi tables)`);
  }
  const applied = conn.prepare('SELECT name FROM kysely_migration ORDER BY name').pluck().all() as string[];
  const expected = migrationNames('sqlite');
  const unknown = applied.filter((name) => !expected.includes(name));
  if (unknown.length > 0) {
    throw new InputError(
      `--from ${path}: the store was migrated by a newer shelfapi (migration ${unknown.join(', ')} is unknown to this one); copy it with that release`,
    );
  }
  const missing = expected.filter((name) => !applied.includes(name));
  if (missing.length > 0) {
    throw new InputError(
      `--from ${path}: the store is at an older migration (${applied.at(-1) ?? 'none'}; this release's latest is ${expected.at(-1) ?? ''}). ` +
        `Stop its servers, run DATABASE_URL=${path} shelfapi migrate, then copy again; nothing was changed`,
    );
  }
}
