/**
 * Opens the store named by configuration: SQLite (embedded default) or PostgreSQL, behind one Kysely
 * query layer. The raw SQLite handle is exposed for the two places that need synchronous control of
 * the connection: the database meter (BEGIN IMMEDIATE) and the CSV export (its own connection).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type Migration, type MigrationResultSet } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config.js';
import type { Dialect } from './dialect.js';
import { initialMigration } from './migrations/0001-initial.js';
import { burstWindowsMigration } from './migrations/0002-burst-windows.js';
import { dataVersionMigration } from './migrations/0003-data-version.js';
import { emailCaseMigration } from './migrations/0004-email-case.js';
import { keyManagementMigration } from './migrations/0005-key-management.js';
import { settingsSessionsMigration } from './migrations/0006-settings-sessions.js';
import { refundTokensMigration } from './migrations/0007-refund-tokens.js';
import { accessVersionMigration } from './migrations/0008-access-version.js';
import { windowRowsMigration } from './migrations/0009-window-rows.js';
import { noticesMigration } from './migrations/0010-notices.js';
import { allowedAddressesMigration } from './migrations/0011-allowed-addresses.js';
import { requestLogMigration } from './migrations/0012-request-log.js';
import { expiryRemindersMigration } from './migrations/0013-expiry-reminders.js';
import { versionNotifyMigration } from './migrations/0014-version-notify.js';
import { accountUsageDaysMigration } from './migrations/0015-account-usage-days.js';
import { accountDaysTriggerCostMigration } from './migrations/0016-account-days-trigger-cost.js';
import { requestLogChunksMigration } from './migrations/0017-request-log-chunks.js';
import { truncateAccessMigration } from './migrations/0018-truncate-access.js';
import { daysFromHoursMigration } from './migrations/0019-days-from-hours.js';
import { outcomesFromHoursMigration } from './migrations/0020-outcomes-from-hours.js';
import type { Database } from './schema.js';

/** How long a writer waits for another process's lock before the store counts as unavailable (503). */
export const SQLITE_BUSY_TIMEOUT_MS = 1000;
/**
 * The serving connection's page cache. The pages every request reads (key lookup, meter, the upper levels
 * of the item tables' B-trees) take a few MB; what filled a 64 MiB cache was list and search scans, whose
 * pages the kernel's page cache holds just as well. At 1M items, after a search and list workload, 16 MiB
 * left the server 27 MB smaller with the same CPU per request (bench/export-memory.ts).
 */
const SQLITE_CACHE_KIB = 16 * 1024;

export const POSTGRES_POOL_SIZE = 10;

export interface Store {
  readonly dialect: Dialect;
  readonly db: Kysely<Database>;
  /** The SQLite connection behind db; null on PostgreSQL. */
  readonly sqlite: SqliteDatabase.Database | null;
  /** Path of the SQLite file, for connections of their own (export); null on PostgreSQL. */
  readonly sqlitePath: string | null;
  /** The pool behind db on PostgreSQL, for named prepared statements (prepared-query.ts); null on SQLite. */
  readonly pgPool: pg.Pool | null;
  close(): Promise<void>;
}

// int8 (count(*), bigint ids) arrives as a string by default; every id we accept is a safe integer.
pg.types.setTypeParser(20, (v) => Number(v));

export function openSqliteConnection(path: string, options: { readonly?: boolean } = {}): SqliteDatabase.Database {
  if (path !== ':memory:' && !options.readonly) mkdirSync(dirname(path), { recursive: true });
  const conn = new SqliteDatabase(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  conn.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  if (!options.readonly) {
    conn.pragma('journal_mode = WAL');
    // NORMAL in WAL mode: a commit survives a process crash; only an OS crash can lose the last commits.
    conn.pragma('synchronous = NORMAL');
  }
  conn.pragma('foreign_keys = ON');
  if (!options.readonly) {
    // A larger page cache than SQLite's 2,000 pages, for the pages every request reads (key lookup, meter).
    // Not for the export's read-only connection: it reads every page once.
    conn.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
  }
  // Never memory-mapped: random reads over a million items map the whole file into the process (RSS 580 MB
  // under load at 1M items, above a 512 MB container), and saved only ~5 us of CPU per item read against
  // read() from the kernel's page cache, which holds the file just as well without counting in our memory
  // (docs/performance.md, "Memory under load").
  conn.pragma('mmap_size = 0');
  return conn;
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * The connection as Kysely sees it, with prepared statements kept by SQL text: Kysely's SQLite driver
 * prepares every query anew, which costs more than running the hot ones. A statement still iterating is
 * never handed out twice.
 */
function withStatementCache(sqlite: SqliteDatabase.Database): { prepare(sql: string): SqliteDatabase.Statement; close(): void } {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    prepare(sql) {
      const cached = cache.get(sql);
      if (cached !== undefined && !cached.busy) return cached;
      const statement = sqlite.prepare(sql);
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
      cache.set(sql, statement);
      return statement;
    },
    close: () => sqlite.close(),
  };
}

export interface StoreOptions {
  /**
   * How long one PostgreSQL query may take before the store counts as unreachable. Serving requests: 1.5 s,
   * so a request answers 503 within 2 seconds when PostgreSQL is away. Operator commands (load, seed, import)
   * pass `null`: their bulk statements on a million rows take longer, and an operator waits for them.
   */
  queryTimeoutMs?: number | null;
}

const REQUEST_QUERY_TIMEOUT_MS = 1500;

export function openStore(config: DatabaseConfig, options: StoreOptions = {}): Store {
  if (config.dialect === 'sqlite') {
    const sqlite = openSqliteConnection(config.path);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
    return {
      dialect: 'sqlite',
      db,
      sqlite,
      sqlitePath: config.path,
      pgPool: null,
      close: () => db.destroy(),
    };
  }
  const pool = new pg.Pool({
    connectionString: config.url,
    max: POSTGRES_POOL_SIZE,
    // Fail fast when PostgreSQL is away so requests answer 503 within 2 seconds instead of hanging.
    connectionTimeoutMillis: 1500,
    ...(options.queryTimeoutMs === null ? {} : { query_timeout: options.queryTimeoutMs ?? REQUEST_QUERY_TIMEOUT_MS }),
    // Keep connections open while idle: a burst must not pay for reconnecting (warmPool opens them).
    idleTimeoutMillis: 0,
  });
  // A connection losing its server (pg_terminate_backend, a restart, a network cut) emits 'error', and an
  // 'error' event without a listener ends the process. The pool listens on idle clients only; a client
  // that is checked out (a transaction between two statements) needs a listener of its own. Either way the
  // fault reaches the caller through its query, and the pool discards the broken client when it is
  // released (it is no longer queryable) and opens a new one on demand: the server reconnects by itself.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  // Kysely ends the pool only if a query went through it; a write transaction takes its client from the pool
  // directly (write-transaction.ts), so the pool is ended here too, or its sockets would keep the process alive.
  const close = async () => {
    await db.destroy();
    if (!pool.ending && !pool.ended) await pool.end();
  };
  return { dialect: 'postgres', db, sqlite: null, sqlitePath: null, pgPool: pool, close };
}

/** Opens every pooled connection up front, so the first burst of requests finds them ready. */
export async function warmPool(store: Store): Promise<void> {
  if (store.dialect !== 'postgres') return;
  await Promise.all(
    Array.from({ length: POSTGRES_POOL_SIZE }, () =>
      store.db.connection().execute(async (conn) => {
        await sql`select 1`.execute(conn);
        // Hold each connection a moment so that the pool opens a new one for every call.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }),
    ),
  );
}

/** Names of the migrations, in the order they apply. */
export function migrationNames(dialect: Dialect): string[] {
  return Object.keys(migrationsFor(dialect)).sort();
}

function migrationsFor(dialect: Dialect): Record<string, Migration> {
  return {
    '0001-initial': initialMigration(dialect),
    '0002-burst-windows': burstWindowsMigration(dialect),
    '0003-data-version': dataVersionMigration,
    '0004-email-case': emailCaseMigration(dialect),
    '0005-key-management': keyManagementMigration(dialect),
    '0006-settings-sessions': settingsSessionsMigration(dialect),
    '0007-refund-tokens': refundTokensMigration(dialect),
    '0008-access-version': accessVersionMigration(dialect),
    '0009-window-rows': windowRowsMigration(dialect),
    '0010-notices': noticesMigration(dialect),
    '0011-allowed-addresses': allowedAddressesMigration(dialect),
    '0012-request-log': requestLogMigration(dialect),
    '0013-expiry-reminders': expiryRemindersMigration(dialect),
    '0014-version-notify': versionNotifyMigration(dialect),
    '0015-account-usage-days': accountUsageDaysMigration(dialect),
    '0016-account-days-trigger-cost': accountDaysTriggerCostMigration(dialect),
    '0017-request-log-chunks': requestLogChunksMigration(dialect),
    '0018-truncate-access': truncateAccessMigration(dialect),
    '0019-days-from-hours': daysFromHoursMigration(),
    '0020-outcomes-from-hours': outcomesFromHoursMigration(),
  };
}

export async function migrateToLatest(store: Store): Promise<string[]> {
  return migrate(store, (migrator) => migrator.migrateToLatest());
}

/**
 * Every migration, run on `db` inside a PostgreSQL transaction the caller holds open (copy-store migrates its
 * target in the transaction that copies into it, so a refused copy leaves the target as it found it).
 */
export async function migrateToLatestWithin(db: Kysely<Database>, dialect: Dialect): Promise<string[]> {
  return migrate({ db, dialect }, (migrator) => migrator.migrateToLatest(), { disableTransactions: true });
}

/** Up to and including migration `name`: a store as it was before a later migration, for that migration's tests. */
export async function migrateTo(store: Store, name: string): Promise<string[]> {
  return migrate(store, (migrator) => migrator.migrateTo(name));
}

async function migrate(
  store: Pick<Store, 'db' | 'dialect'>,
  run: (migrator: Migrator) => Promise<MigrationResultSet>,
  options: { disableTransactions?: boolean } = {},
): Promise<string[]> {
  // Kysely looks for its migration table in every schema unless told which: name the one the tables go to
  // (the first of search_path), so several schemas of one database each keep their own history.
  const schema =
    store.dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(store.db)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => migrationsFor(store.dialect) },
    ...(schema ? { migrationTableSchema: schema } : {}),
    ...(options.disableTransactions === true ? { disableTransactions: true } : {}),
  });
  const { error, results } = await run(migrator);
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
