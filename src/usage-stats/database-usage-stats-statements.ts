/**
 * The statements of a statistics flush in the database (database-usage-stats.ts): the upserts of the day
 * counts, last uses and usage buckets and the rejections' insert and trim, built with Kysely for either
 * dialect, ROWS_PER_STATEMENT rows a statement; on SQLite, the same statements for one row, prepared once.
 */
import type SqliteDatabase from 'better-sqlite3';
import { sql, type Compilable, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { fullSweepSliceEnd, sweepChunks } from './request-log-chunks.js';
import { REJECTIONS_KEPT, type Rejection, type StatsBatch } from './usage-stats.js';

/** Rows per statement: well under SQLite's limit of bound parameters. */
const ROWS_PER_STATEMENT = 500;

export function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) out.push(rows.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}

/** The statements of one flush, built once for either dialect. */
export const outcomesUpsert = (db: Kysely<Database>, rows: StatsBatch['outcomes']) =>
  db
    .insertInto('key_outcomes_daily')
    .values(rows.map((r) => ({ key_id: r.keyId, day: r.day, outcome: r.outcome, requests: r.requests })))
    .onConflict((oc) => oc.columns(['key_id', 'day', 'outcome']).doUpdateSet({ requests: sql`key_outcomes_daily.requests + excluded.requests` }));

export const lastUseUpsert = (db: Kysely<Database>, rows: StatsBatch['lastUse']) =>
  db
    .insertInto('key_last_use')
    .values(rows.map((r) => ({ key_id: r.keyId, at: new Date(r.at).toISOString(), address: r.address })))
    .onConflict((oc) =>
      oc
        .column('key_id')
        .doUpdateSet({ at: sql`excluded.at`, address: sql`excluded.address` })
        // Another server may write an older use after a newer one: the latest stays.
        .where(sql<boolean>`excluded.at >= key_last_use.at`),
    );

export const bucketsUpsert = (db: Kysely<Database>, rows: StatsBatch['buckets']) =>
  db
    .insertInto('key_usage_buckets')
    .values(rows.map((r) => ({ key_id: r.keyId, period: r.period, field: r.field, requests: r.requests })))
    .onConflict((oc) => oc.columns(['key_id', 'period', 'field']).doUpdateSet({ requests: sql`key_usage_buckets.requests + excluded.requests` }));

const rejectionInsert = (db: Kysely<Database>, rows: ReadonlyArray<Rejection & { keyId: number }>) =>
  db.insertInto('key_rejections').values(
    rows.map((r) => ({
      key_id: r.keyId,
      at: r.at,
      method: r.method,
      path: r.path,
      status: r.status,
      error: r.error,
      message: r.message,
      request_id: r.requestId,
    })),
  );

/** The rejections' insert and the delete keeping the newest 20 per key (PostgreSQL; SQLite runs prepared statements per row and key). */
export function rejectionStatements(db: Kysely<Database>, batch: StatsBatch): Compilable[] {
  const out: Compilable[] = [];
  const rejections = batch.rejections.flatMap((entry) => entry.items.map((item) => ({ keyId: entry.keyId, ...item })));
  for (const rows of chunks(rejections)) out.push(rejectionInsert(db, rows));
  for (const rows of chunks(batch.rejections)) {
    out.push(
      db
        .deleteFrom('key_rejections')
        .where(
          'key_id',
          'in',
          rows.map((r) => r.keyId),
        )
        .where('id', 'not in', (eb) =>
          eb
            .selectFrom('key_rejections as kept')
            .select('kept.id')
            .whereRef('kept.key_id', '=', 'key_rejections.key_id')
            .orderBy('kept.at', 'desc')
            .orderBy('kept.id', 'desc')
            .limit(REJECTIONS_KEPT),
        ),
    );
  }
  return out;
}

/**
 * SQLite: the statements of every flush prepared once and run per row (a flush's rows are hundreds: a
 * multi-row statement built, compiled and prepared per flush cost 9 ms for 500 records). Their text is
 * Kysely's for one row, checked to take its values in the order run() gives them.
 */
export interface RowStatements {
  outcome: SqliteDatabase.Statement;
  lastUse: SqliteDatabase.Statement;
  bucket: SqliteDatabase.Statement;
  rejection: SqliteDatabase.Statement;
  trimRejections: SqliteDatabase.Statement;
  chunk: SqliteDatabase.Statement;
  sweep: SqliteDatabase.Statement;
  sliceEnd: SqliteDatabase.Statement;
}

export function prepareRowStatements(db: Kysely<Database>, conn: SqliteDatabase.Database): RowStatements {
  const prepare = (query: Compilable, expected: unknown[]) => {
    const compiled = query.compile();
    if (JSON.stringify(compiled.parameters) !== JSON.stringify(expected)) throw new Error('usage stats: unexpected parameter order');
    return conn.prepare(compiled.sql);
  };
  const at = 0;
  return {
    outcome: prepare(outcomesUpsert(db, [{ accountId: 0, keyId: 1, day: 'd', outcome: 'counted', requests: 2 }]), [1, 'd', 'counted', 2]),
    lastUse: prepare(lastUseUpsert(db, [{ accountId: 0, keyId: 1, at, address: 'a' }]), [1, new Date(at).toISOString(), 'a']),
    bucket: prepare(bucketsUpsert(db, [{ accountId: 0, keyId: 1, period: 'p', field: 'f', requests: 2 }]), [1, 'p', 'f', 2]),
    rejection: prepare(rejectionInsert(db, [{ keyId: 1, at: 'a', method: 'm', path: 'p', status: 2, error: 'e', message: 'g', requestId: 'r' }]), [1, 'a', 'm', 'p', 2, 'e', 'g', 'r']),
    // One key's rejections past its newest REJECTIONS_KEPT, read backwards along the (key_id, at, id) index:
    // the statement of rejectionStatements (PostgreSQL's) ran its subquery once per row of the keys, and a
    // flush's multi-row insert was parsed anew each time.
    trimRejections: prepare(
      db
        .deleteFrom('key_rejections')
        .where('key_id', '=', 1)
        .where('id', 'in', (eb) =>
          eb.selectFrom('key_rejections as kept').select('kept.id').where('kept.key_id', '=', 1).orderBy('kept.at', 'desc').orderBy('kept.id', 'desc').limit(-1).offset(REJECTIONS_KEPT),
        ),
      [1, 1, -1, REJECTIONS_KEPT],
    ),
    chunk: prepare(db.insertInto('key_request_log_chunks').values({ key_id: 1, oldest_ms: 2, newest_ms: 3, lines: 4, body: 'b' }), [1, 2, 3, 4, 'b']),
    sweep: prepare(sweepChunks(db, 1, 2, 3), [1, 2, 3]),
    sliceEnd: prepare(fullSweepSliceEnd(db, 1, 2), [1, 2]),
  };
}
