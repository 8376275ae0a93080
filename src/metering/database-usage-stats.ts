/**
 * Per-key statistics in the database (SQLite or PostgreSQL), written with the same Kysely statements on
 * both: per flush, upserts of the day counts, of the last uses and of the usage buckets, one insert of the
 * rejections and one delete keeping the newest 20 per key, one insert of the request log's lines and one
 * delete keeping the newest 100 per key, in one transaction. Every 10 minutes or so a flush also drops
 * request log lines past 7 days and hour buckets past 2 days (of keys no longer used). On SQLite the upserts run row by row through
 * statements prepared once (cheaper than building and preparing a statement of hundreds of rows per flush).
 *
 * SQLite: the flush runs synchronously on the store's connection (as the meter does), so nothing else can
 * run on that connection in the middle of it; it does not wait for another process's write lock (a
 * blocked wait would stall every request of this process): a busy file leaves the records for the next
 * flush.
 */
import type SqliteDatabase from 'better-sqlite3';
import { sql, type Compilable, type Kysely } from 'kysely';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { withBusyTimeout } from './sqlite-busy-timeout.js';
import { HOURS_KEPT_MS, hourOf } from './usage-buckets.js';
import {
  addField,
  BufferedUsageStats,
  outcomesByDay,
  REJECTIONS_KEPT,
  REQUEST_LOG_KEPT,
  REQUEST_LOG_MS,
  type DayOutcomes,
  type LastUse,
  type LogOutcome,
  type Rejection,
  type RequestLogEntry,
  type StatsBatch,
} from './usage-stats.js';

/** How often (real time) a flush also purges what is past its time. */
const PURGE_EVERY_MS = 10 * 60_000;

/** Rows per statement: well under SQLite's limit of bound parameters. */
const ROWS_PER_STATEMENT = 500;

function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) out.push(rows.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}

/** The statements of one flush, built once for either dialect. */
const outcomesUpsert = (db: Kysely<Database>, rows: StatsBatch['outcomes']) =>
  db
    .insertInto('key_outcomes_daily')
    .values(rows.map((r) => ({ key_id: r.keyId, day: r.day, outcome: r.outcome, requests: r.requests })))
    .onConflict((oc) => oc.columns(['key_id', 'day', 'outcome']).doUpdateSet({ requests: sql`key_outcomes_daily.requests + excluded.requests` }));

const lastUseUpsert = (db: Kysely<Database>, rows: StatsBatch['lastUse']) =>
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

const bucketsUpsert = (db: Kysely<Database>, rows: StatsBatch['buckets']) =>
  db
    .insertInto('key_usage_buckets')
    .values(rows.map((r) => ({ key_id: r.keyId, period: r.period, field: r.field, requests: r.requests })))
    .onConflict((oc) => oc.columns(['key_id', 'period', 'field']).doUpdateSet({ requests: sql`key_usage_buckets.requests + excluded.requests` }));

type LogRow = RequestLogEntry & { keyId: number };

const logInsert = (db: Kysely<Database>, rows: readonly LogRow[]) =>
  db.insertInto('key_request_log').values(
    rows.map((r) => ({
      key_id: r.keyId,
      at: r.at,
      method: r.method,
      path: r.path,
      status: r.status,
      error: r.error,
      outcome: r.outcome,
      duration_ms: r.durationMs,
      address: r.address,
      request_id: r.requestId,
    })),
  );

/** The request log's rows of these keys past the newest REQUEST_LOG_KEPT of each: one statement for all (PostgreSQL). */
const logTrim = (db: Kysely<Database>, keyIds: readonly number[]) =>
  db.deleteFrom('key_request_log').where('id', 'in', (eb) =>
    eb
      .selectFrom(
        eb
          .selectFrom('key_request_log')
          .select(['id', sql<number>`row_number() over (partition by key_id order by at desc, id desc)`.as('n')])
          .where('key_id', 'in', [...keyIds])
          .as('ranked'),
      )
      .select('ranked.id')
      .where('ranked.n', '>', REQUEST_LOG_KEPT),
  );

/** What is past its time, `newest` being the latest request written (epoch ms, the app's clock). */
const purges = (db: Kysely<Database>, newest: number): Compilable[] => [
  db.deleteFrom('key_request_log').where('at', '<', new Date(newest - REQUEST_LOG_MS).toISOString()),
  db
    .deleteFrom('key_usage_buckets')
    .where(sql<number>`length(period)`, '=', 13)
    .where('period', '<', hourOf(newest - HOURS_KEPT_MS)),
];

/** The latest request of a batch (epoch ms), or null for none. */
function newestOf(batch: StatsBatch): number | null {
  let newest: number | null = null;
  for (const entry of batch.log) {
    const last = entry.items[entry.items.length - 1];
    if (last !== undefined) newest = Math.max(newest ?? 0, Date.parse(last.at));
  }
  return newest;
}

/** The rejections' insert and the delete keeping the newest 20 per key. */
function rejectionStatements(db: Kysely<Database>, batch: StatsBatch): Compilable[] {
  const out: Compilable[] = [];
  const rejections = batch.rejections.flatMap((entry) => entry.items.map((item) => ({ keyId: entry.keyId, ...item })));
  for (const rows of chunks(rejections)) {
    out.push(
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
      ),
    );
  }
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

export class DatabaseUsageStats extends BufferedUsageStats {
  private readonly db: Kysely<Database>;
  private readonly sqlite: SqliteDatabase.Database | null;

  constructor(store: Store) {
    super();
    this.db = store.db;
    this.sqlite = store.sqlite;
  }

  /** Real time of the last purge; the first flush purges. */
  private purgedAt = 0;

  /**
   * Lines this process wrote per key since it last trimmed that key's log. A key is trimmed to its newest
   * REQUEST_LOG_KEPT once REQUEST_LOG_KEPT more lines of it were written (and at its first write after a
   * start), not at every flush: the trim reads every kept line of the keys it trims, and trimming all of a
   * busy server's keys every second (1,001 keys, ~100,000 lines) held the event loop ~95 ms a second on
   * SQLite (docs/performance.md). The page reads the newest REQUEST_LOG_KEPT, so the lines past them between
   * two trims (fewer than REQUEST_LOG_KEPT per process writing the key) are never shown.
   */
  private readonly linesSinceTrim = new Map<number, number>();

  /** The keys of a batch's log due a trim, and what the counts become once the batch is written. */
  private trimPlan(batch: StatsBatch): { due: number[]; counts: Map<number, number> } {
    const due: number[] = [];
    const counts = new Map<number, number>();
    for (const entry of batch.log) {
      const written = (this.linesSinceTrim.get(entry.keyId) ?? REQUEST_LOG_KEPT) + entry.items.length;
      if (written >= REQUEST_LOG_KEPT) {
        due.push(entry.keyId);
        counts.set(entry.keyId, 0);
      } else counts.set(entry.keyId, written);
    }
    return { due, counts };
  }

  /** After a batch is written: its keys' counts. */
  private trimmed(counts: ReadonlyMap<number, number>): void {
    for (const [keyId, n] of counts) this.linesSinceTrim.set(keyId, n);
  }

  /** The request log's statements of a batch: its lines, the trim to 100 per key, and now and then the purges. */
  private logStatements(batch: StatsBatch, due: readonly number[]): Compilable[] {
    const lines = batch.log.flatMap((entry) => entry.items.map((item) => ({ ...item, keyId: entry.keyId })));
    const out: Compilable[] = chunks(lines).map((rows) => logInsert(this.db, rows));
    for (const keyIds of chunks(due)) out.push(logTrim(this.db, keyIds));
    const newest = newestOf(batch);
    if (newest !== null && Date.now() - this.purgedAt >= PURGE_EVERY_MS) {
      this.purgedAt = Date.now();
      out.push(...purges(this.db, newest));
    }
    return out;
  }

  protected async write(batch: StatsBatch): Promise<void> {
    const conn = this.sqlite;
    const trim = this.trimPlan(batch);
    if (conn === null) {
      const queries = [
        ...chunks(batch.outcomes).map((rows) => outcomesUpsert(this.db, rows)),
        ...chunks(batch.lastUse).map((rows) => lastUseUpsert(this.db, rows)),
        ...chunks(batch.buckets).map((rows) => bucketsUpsert(this.db, rows)),
        ...rejectionStatements(this.db, batch),
        ...this.logStatements(batch, trim.due),
      ];
      if (queries.length === 0) return;
      await this.db.transaction().execute(async (trx) => {
        for (const query of queries) await trx.executeQuery(query.compile());
      });
      this.trimmed(trim.counts);
      return;
    }
    if (batch.outcomes.length === 0 && batch.lastUse.length === 0 && batch.rejections.length === 0 && batch.log.length === 0 && batch.buckets.length === 0) return;
    // An operator's transaction open on this connection (never in a serving process): do not join it.
    if (conn.inTransaction) throw new Error('the store connection is inside a transaction; written at the next flush');
    const { outcome, lastUse, bucket, line, trimKey } = (this.#rowStatements ??= this.#prepareRowStatements(conn));
    const rejections = rejectionStatements(this.db, batch).map((q) => q.compile());
    const purgesAt = this.purgedAt;
    const newest = newestOf(batch);
    const purge = newest !== null && Date.now() - this.purgedAt >= PURGE_EVERY_MS ? purges(this.db, newest).map((q) => q.compile()) : [];
    try {
      if (purge.length > 0) this.purgedAt = Date.now();
      withBusyTimeout(conn, 0, () =>
        conn
          .transaction(() => {
            for (const r of batch.outcomes) outcome.run(r.keyId, r.day, r.outcome, r.requests);
            for (const r of batch.lastUse) lastUse.run(r.keyId, new Date(r.at).toISOString(), r.address);
            for (const r of batch.buckets) bucket.run(r.keyId, r.period, r.field, r.requests);
            for (const q of rejections) conn.prepare(q.sql).run(...(q.parameters as unknown[]));
            for (const entry of batch.log) {
              for (const l of entry.items) line.run(entry.keyId, l.at, l.method, l.path, l.status, l.error, l.outcome, l.durationMs, l.address, l.requestId);
            }
            for (const keyId of trim.due) trimKey.run(keyId, keyId, -1, REQUEST_LOG_KEPT);
            for (const q of purge) conn.prepare(q.sql).run(...(q.parameters as unknown[]));
          })
          .immediate(),
      );
      this.trimmed(trim.counts);
    } catch (error) {
      this.purgedAt = purgesAt;
      throw error;
    }
  }

  /**
   * SQLite: the two upserts of every flush as one-row statements prepared once and run per row (a flush's
   * rows are hundreds: a multi-row statement built, compiled and prepared per flush cost 9 ms for 500
   * records). Their text is Kysely's for one row, checked to take its values in the order run() gives them.
   */
  #rowStatements: {
    outcome: SqliteDatabase.Statement;
    lastUse: SqliteDatabase.Statement;
    bucket: SqliteDatabase.Statement;
    line: SqliteDatabase.Statement;
    trimKey: SqliteDatabase.Statement;
  } | null = null;

  #prepareRowStatements(conn: SqliteDatabase.Database) {
    const prepare = (query: Compilable, expected: unknown[]) => {
      const compiled = query.compile();
      if (JSON.stringify(compiled.parameters) !== JSON.stringify(expected)) throw new Error('usage stats: unexpected parameter order');
      return conn.prepare(compiled.sql);
    };
    const at = 0;
    return {
      outcome: prepare(outcomesUpsert(this.db, [{ accountId: 0, keyId: 1, day: 'd', outcome: 'counted', requests: 2 }]), [1, 'd', 'counted', 2]),
      lastUse: prepare(lastUseUpsert(this.db, [{ accountId: 0, keyId: 1, at, address: 'a' }]), [1, new Date(at).toISOString(), 'a']),
      bucket: prepare(bucketsUpsert(this.db, [{ accountId: 0, keyId: 1, period: 'p', field: 'f', requests: 2 }]), [1, 'p', 'f', 2]),
      line: prepare(
        logInsert(this.db, [
          { keyId: 1, at: 'a', method: 'm', path: 'p', status: 2, error: 'e', outcome: 'counted', durationMs: 3, address: 'd', requestId: 'r' },
        ]),
        [1, 'a', 'm', 'p', 2, 'e', 'counted', 3, 'd', 'r'],
      ),
      // One key's lines past its newest REQUEST_LOG_KEPT, read backwards along the (key_id, at, id) index: a
      // window over the keys' lines (logTrim, PostgreSQL's way) cost SQLite ~0.27 ms a key.
      trimKey: prepare(
        this.db
          .deleteFrom('key_request_log')
          .where('key_id', '=', 1)
          .where('id', 'in', (eb) =>
            eb
              .selectFrom('key_request_log as kept')
              .select('kept.id')
              .where('kept.key_id', '=', 1)
              .orderBy('kept.at', 'desc')
              .orderBy('kept.id', 'desc')
              .limit(-1)
              .offset(REQUEST_LOG_KEPT),
          ),
        [1, 1, -1, REQUEST_LOG_KEPT],
      ),
    };
  }

  async keyOutcomes(_accountId: number, keyId: number, sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
    const rows = await this.db
      .selectFrom('key_outcomes_daily')
      .select(['day', 'outcome', 'requests'])
      .where('key_id', '=', keyId)
      .where('day', '>=', sinceDay)
      .where('day', '<=', untilDay)
      .execute();
    return outcomesByDay(sinceDay, untilDay, rows.map((row) => ({ ...row, requests: Number(row.requests) })));
  }

  async keysOutcomes(_accountId: number, keyIds: readonly number[], sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
    if (keyIds.length === 0) return outcomesByDay(sinceDay, untilDay, []);
    const rows = await this.db
      .selectFrom('key_outcomes_daily')
      .select(['day', 'outcome', (eb) => eb.fn.sum<number | string>('requests').as('requests')])
      .where('key_id', 'in', [...keyIds])
      .where('day', '>=', sinceDay)
      .where('day', '<=', untilDay)
      .groupBy(['day', 'outcome'])
      .execute();
    return outcomesByDay(sinceDay, untilDay, rows.map((row) => ({ ...row, requests: Number(row.requests) })));
  }

  async recentRejections(_accountId: number, keyId: number): Promise<Rejection[]> {
    const rows = await this.db
      .selectFrom('key_rejections')
      .select(['at', 'method', 'path', 'status', 'error', 'message', 'request_id as requestId'])
      .where('key_id', '=', keyId)
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .limit(REJECTIONS_KEPT)
      .execute();
    return rows.map((r) => ({ ...r, status: Number(r.status) }));
  }

  async lastUse(_accountId: number, keyIds: readonly number[]): Promise<Map<number, LastUse>> {
    if (keyIds.length === 0) return new Map();
    const rows = await this.db.selectFrom('key_last_use').select(['key_id', 'at', 'address']).where('key_id', 'in', [...keyIds]).execute();
    return new Map(rows.map((r) => [Number(r.key_id), { at: r.at, address: r.address }]));
  }

  async requestLog(_accountId: number, keyId: number, since: string): Promise<RequestLogEntry[]> {
    const rows = await this.db
      .selectFrom('key_request_log')
      .select(['at', 'method', 'path', 'status', 'error', 'outcome', 'duration_ms', 'address', 'request_id'])
      .where('key_id', '=', keyId)
      .where('at', '>=', since)
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .limit(REQUEST_LOG_KEPT)
      .execute();
    return rows.map((r) => ({
      at: r.at,
      method: r.method,
      path: r.path,
      status: Number(r.status),
      error: r.error,
      outcome: r.outcome as LogOutcome,
      durationMs: Number(r.duration_ms),
      address: r.address,
      requestId: r.request_id,
    }));
  }

  async usageBuckets(_accountId: number, keyIds: readonly number[], periods: readonly string[]): Promise<Map<string, Map<string, number>>> {
    const out = new Map<string, Map<string, number>>();
    if (keyIds.length === 0 || periods.length === 0) return out;
    const rows = await this.db
      .selectFrom('key_usage_buckets')
      .select(['period', 'field', (eb) => eb.fn.sum<number | string>('requests').as('requests')])
      .where('key_id', 'in', [...keyIds])
      .where('period', 'in', [...periods])
      .groupBy(['period', 'field'])
      .execute();
    for (const r of rows) {
      const fields = out.get(r.period) ?? new Map<string, number>();
      fields.set(r.field, Number(r.requests));
      out.set(r.period, fields);
    }
    return out;
  }

  async accountDays(accountId: number, _shown: readonly number[], hidden: readonly number[], days: readonly string[]): Promise<Map<string, Map<string, number>>> {
    const out = new Map<string, Map<string, number>>();
    if (days.length === 0) return out;
    const first = days.reduce((a, b) => (a < b ? a : b));
    const last = days.reduce((a, b) => (a > b ? a : b));
    // Migration 0015's totals hold every key of the account, through its triggers; the hidden keys' rows
    // (few: keys that ended over 90 days ago and are still tried) are taken away.
    const [totals, hiddenBuckets, hiddenOutcomes] = await Promise.all([
      this.db
        .selectFrom('account_usage_days')
        .select(['day', 'field', 'requests'])
        .where('account_id', '=', accountId)
        .where('day', '>=', first)
        .where('day', '<=', last)
        .execute(),
      hidden.length === 0
        ? []
        : this.db
            .selectFrom('key_usage_buckets')
            .select(['period as day', 'field', 'requests'])
            .where('key_id', 'in', [...hidden])
            .where('period', 'in', [...days])
            .execute(),
      hidden.length === 0
        ? []
        : this.db
            .selectFrom('key_outcomes_daily')
            .select(['day', sql<string>`'o:' || outcome`.as('field'), 'requests'])
            .where('key_id', 'in', [...hidden])
            .where('day', '>=', first)
            .where('day', '<=', last)
            .execute(),
    ]);
    const wanted = new Set(days);
    for (const r of totals) if (wanted.has(r.day)) addField(out, r.day, r.field, Number(r.requests));
    for (const r of [...hiddenBuckets, ...hiddenOutcomes]) if (wanted.has(r.day)) addField(out, r.day, r.field, Number(r.requests), -1);
    return out;
  }

  protected async disconnect(): Promise<void> {
    // The connection belongs to the store, which closes it.
  }
}
