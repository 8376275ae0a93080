/**
 * Per-key statistics in the database (SQLite or PostgreSQL), written with the same Kysely statements on
 * both: per flush, upserts of the day counts, of the last uses and of the usage buckets, one insert of the
 * rejections and one delete keeping the newest 20 per key, the request log's lines as one row per key
 * (request-log-chunks.ts) and the sweeps of older rows that are due (ChunkSweeps), in one transaction. Every
 * 10 minutes or so (and at a process's first write) a purge drops request log lines past 7 days and hour
 * buckets past 2 days (of keys no longer used), PURGE_ROWS_PER_WRITE rows of each table a write until a
 * write finds fewer, and then starts a sweep of every chunk. On SQLite the upserts run row by row through
 * statements prepared once (cheaper than building and preparing a statement of hundreds of rows per flush).
 *
 * SQLite: the flush runs synchronously on the store's connection (as the meter does), so nothing else can
 * run on that connection in the middle of it; it does not wait for another process's write lock (a
 * blocked wait would stall every request of this process): a busy file leaves the records for the next
 * flush.
 */
import type SqliteDatabase from 'better-sqlite3';
import { sql, type Compilable, type CompiledQuery, type Kysely } from 'kysely';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { chunkOf, ChunkSweeps, FULL_SWEEP_SLICE, fullSweepSliceEnd, newestLines, readChunks, sweepChunks, type ChunkRow, type SweepPlan } from './request-log-chunks.js';
import { withBusyTimeout } from '../metering/sqlite-busy-timeout.js';
import { HOURS_KEPT_MS, hourOf } from './usage-buckets.js';
import { BufferedUsageStats } from './buffered-usage-stats.js';
import {
  addField,
  outcomesByDay,
  REJECTIONS_KEPT,
  REQUEST_LOG_KEPT,
  REQUEST_LOG_MS,
  type DayOutcomes,
  type LastUse,
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

/**
 * Rows of each table a purge deletes a write at most. The purge was one delete per table: the first after a
 * start held SQLite's event loop 12.9 s on a slow disk, and every request of the process waited.
 */
export const PURGE_ROWS_PER_WRITE = 2_000;

/**
 * A purge under way. `newest`: the latest request written when it began (epoch ms, the app's clock), from
 * which what is past its time is reckoned until it ends; per table, the key id its next slice starts from
 * (the rows of lower keys are gone), null once a slice found fewer rows than it may take.
 */
interface Purge {
  readonly newest: number;
  readonly chunksFrom: number | null;
  readonly bucketsFrom: number | null;
}

/** Every key id, for a purge's first slice. */
const FIRST_KEY = Number.MIN_SAFE_INTEGER;

/**
 * A purge's next slice of chunks past 7 days: at most `rows`, lowest key first from `fromKey`; returns the
 * key ids of those deleted. Found on the (key_id, oldest_ms, newest_ms, lines) index from `fromKey`, which
 * SQLite searches instead of the table's bodies. Taken in id order the slice walked the table's bodies
 * instead: 33-41 ms to find that none is left of 40,000 chunks, against 1.2 ms on the index (EXPLAIN QUERY
 * PLAN and times on a scratch database, 2026-11-27).
 */
const chunkPurge = (db: Kysely<Database>, newest: number, fromKey: number, rows: number) =>
  db
    .deleteFrom('key_request_log_chunks')
    .where('id', 'in', (eb) =>
      eb.selectFrom('key_request_log_chunks').select('id').where('key_id', '>=', fromKey).where('newest_ms', '<', newest - REQUEST_LOG_MS).orderBy('key_id').limit(rows),
    )
    .returning('key_id');

/**
 * A purge's next slice of hour buckets past 2 days, as chunkPurge, by the table's primary key (key_id,
 * period, field) on both dialects. `period || ''` keeps the period off the index: with statistics (ANALYZE)
 * SQLite otherwise chose a skip-scan of it (ANY(key_id) AND period<?), whose time did not follow `fromKey`
 * (a slice from key 900 of 10,000 keys of 156 rows each 22 ms, against 8 ms searching the index from
 * `fromKey` as now).
 */
const bucketPurge = (db: Kysely<Database>, newest: number, fromKey: number, rows: number) =>
  db
    .deleteFrom('key_usage_buckets')
    .where((eb) =>
      eb(
        eb.refTuple('key_id', 'period', 'field'),
        'in',
        eb
          .selectFrom('key_usage_buckets as b')
          .select(['b.key_id', 'b.period', 'b.field'])
          .where('b.key_id', '>=', fromKey)
          .where(sql<number>`length(b.period)`, '=', 13)
          .where(sql<string>`b.period || ''`, '<', hourOf(newest - HOURS_KEPT_MS))
          // By the whole primary key: with statistics SQLite builds the list twice (the IN's rows and a
          // Bloom filter), and both must be the same rows.
          .orderBy('b.key_id')
          .orderBy('b.period')
          .orderBy('b.field')
          .limit(rows)
          .$asTuple('key_id', 'period', 'field'),
      ),
    )
    .returning('key_id');

/** Where a table's purge goes on after a slice that deleted rows of these keys: null when it took fewer than it could. */
function purgedTo(keys: ReadonlyArray<{ key_id: number | string }>, rows: number): number | null {
  return keys.length < rows ? null : Math.max(...keys.map((k) => Number(k.key_id)));
}

/** The latest request of a batch (epoch ms), or null for none. */
function newestOf(batch: StatsBatch): number | null {
  let newest: number | null = null;
  for (const entry of batch.log) {
    const last = entry.items[entry.items.length - 1];
    if (last !== undefined) newest = Math.max(newest ?? 0, Date.parse(last.at));
  }
  return newest;
}

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
function rejectionStatements(db: Kysely<Database>, batch: StatsBatch): Compilable[] {
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

export class DatabaseUsageStats extends BufferedUsageStats {
  private readonly db: Kysely<Database>;
  private readonly sqlite: SqliteDatabase.Database | null;

  /**
   * `sweepAges`: when this process sweeps the chunks it wrote (SWEEP_AGES_MS; tests shorten them).
   * `purgeRowsPerWrite`: PURGE_ROWS_PER_WRITE (tests shorten it).
   */
  constructor(store: Store, options: { sweepAges?: readonly number[]; purgeRowsPerWrite?: number } = {}) {
    super();
    this.db = store.db;
    this.sqlite = store.sqlite;
    this.sweeps = new ChunkSweeps(options.sweepAges);
    this.purgeRows = options.purgeRowsPerWrite ?? PURGE_ROWS_PER_WRITE;
  }

  /** Real time the last purge ended; the first flush purges. */
  private purgedAt = 0;

  /** The purge under way, null between two. */
  private purge: Purge | null = null;

  private readonly purgeRows: number;

  /** The sweeps of the request log's chunks this process wrote (request-log-chunks.ts). */
  private readonly sweeps: ChunkSweeps;

  /** The request log's chunks of a batch, one per key. */
  private static chunksOf(batch: StatsBatch): ChunkRow[] {
    return batch.log.filter((entry) => entry.items.length > 0).map((entry) => chunkOf(entry.keyId, entry.items));
  }

  /**
   * The purge this write goes on with: the one under way, whatever the time (its rows are past their time
   * already), or a new one every PURGE_EVERY_MS of real time and at the first write. A new one is noted
   * only once its first slice is written.
   */
  private purgeDue(batch: StatsBatch): Purge | null {
    if (this.purge !== null) return this.purge;
    const newest = newestOf(batch);
    return newest !== null && Date.now() - this.purgedAt >= PURGE_EVERY_MS ? { newest, chunksFrom: FIRST_KEY, bucketsFrom: FIRST_KEY } : null;
  }

  protected async write(batch: StatsBatch): Promise<void> {
    const conn = this.sqlite;
    const logChunks = DatabaseUsageStats.chunksOf(batch);
    const plan = this.sweeps.plan(Date.now());
    const purge = this.purgeDue(batch);
    const purgeRows = this.purgeRows;
    if (conn === null) {
      const queries = [
        ...chunks(batch.outcomes).map((rows) => outcomesUpsert(this.db, rows)),
        ...chunks(batch.lastUse).map((rows) => lastUseUpsert(this.db, rows)),
        ...chunks(batch.buckets).map((rows) => bucketsUpsert(this.db, rows)),
        ...rejectionStatements(this.db, batch),
      ];
      if (queries.length === 0 && logChunks.length === 0 && plan.ranges.length === 0 && plan.fullAfter === null && purge === null) return;
      const { wrote, fullReached, purged } = await this.db.transaction().execute(async (trx) => {
        for (const query of queries) await trx.executeQuery(query.compile());
        let purged: Purge | null = null;
        if (purge !== null) {
          const { newest, chunksFrom, bucketsFrom } = purge;
          purged = {
            newest,
            chunksFrom: chunksFrom === null ? null : purgedTo(await chunkPurge(trx, newest, chunksFrom, purgeRows).execute(), purgeRows),
            bucketsFrom: bucketsFrom === null ? null : purgedTo(await bucketPurge(trx, newest, bucketsFrom, purgeRows).execute(), purgeRows),
          };
        }
        let ids: number[] = [];
        for (const rows of chunks(logChunks)) ids = ids.concat((await trx.insertInto('key_request_log_chunks').values(rows).returning('id').execute()).map((r) => Number(r.id)));
        for (const [from, to] of plan.ranges) await sweepChunks(trx, from, to).execute();
        let reached: number | null = null;
        if (plan.fullAfter !== null) {
          const last = (await fullSweepSliceEnd(trx, plan.fullAfter).executeTakeFirst())?.last;
          if (last !== undefined && last !== null) {
            reached = Number(last);
            await sweepChunks(trx, plan.fullAfter + 1, reached).execute();
          }
        }
        return { wrote: ids.length === 0 ? null : ([Math.min(...ids), Math.max(...ids)] as const), fullReached: reached, purged };
      });
      this.committed(plan, wrote, fullReached, purged);
      return;
    }
    if (batch.outcomes.length === 0 && batch.lastUse.length === 0 && batch.rejections.length === 0 && logChunks.length === 0 && batch.buckets.length === 0 && plan.ranges.length === 0 && plan.fullAfter === null && purge === null) return;
    // An operator's transaction open on this connection (never in a serving process): do not join it.
    if (conn.inTransaction) throw new Error('the store connection is inside a transaction; written at the next flush');
    const { outcome, lastUse, bucket, rejection, trimRejections, chunk, sweep, sliceEnd } = (this.#rowStatements ??= this.#prepareRowStatements(conn));
    // Compiled per write, not prepared once as the rows' statements are: a purge is a few writes every 10 minutes.
    const purgeSlices =
      purge === null
        ? null
        : {
            newest: purge.newest,
            chunks: purge.chunksFrom === null ? null : chunkPurge(this.db, purge.newest, purge.chunksFrom, purgeRows).compile(),
            buckets: purge.bucketsFrom === null ? null : bucketPurge(this.db, purge.newest, purge.bucketsFrom, purgeRows).compile(),
          };
    const deleted = (q: CompiledQuery | null) => (q === null ? null : purgedTo(conn.prepare(q.sql).all(...q.parameters) as Array<{ key_id: number }>, purgeRows));
    const { wrote, fullReached, purged } = withBusyTimeout(conn, 0, () =>
      conn
        .transaction(() => {
          for (const r of batch.outcomes) outcome.run(r.keyId, r.day, r.outcome, r.requests);
          for (const r of batch.lastUse) lastUse.run(r.keyId, new Date(r.at).toISOString(), r.address);
          for (const r of batch.buckets) bucket.run(r.keyId, r.period, r.field, r.requests);
          for (const entry of batch.rejections) {
            for (const r of entry.items) rejection.run(entry.keyId, r.at, r.method, r.path, r.status, r.error, r.message, r.requestId);
            trimRejections.run(entry.keyId, entry.keyId, -1, REJECTIONS_KEPT);
          }
          // One writer at a time: a transaction's chunks take consecutive ids.
          let first: number | null = null;
          let last = 0;
          for (const c of logChunks) {
            last = Number(chunk.run(c.key_id, c.oldest_ms, c.newest_ms, c.lines, c.body).lastInsertRowid);
            first ??= last;
          }
          for (const [from, to] of plan.ranges) sweep.run(from, to, REQUEST_LOG_KEPT);
          let reached: number | null = null;
          if (plan.fullAfter !== null) {
            const end = (sliceEnd.get(plan.fullAfter, FULL_SWEEP_SLICE) as { last: number | null } | undefined)?.last;
            if (end !== undefined && end !== null) {
              reached = end;
              sweep.run(plan.fullAfter + 1, end, REQUEST_LOG_KEPT);
            }
          }
          const purged: Purge | null =
            purgeSlices === null ? null : { newest: purgeSlices.newest, chunksFrom: deleted(purgeSlices.chunks), bucketsFrom: deleted(purgeSlices.buckets) };
          return { wrote: first === null ? null : ([first, last] as const), fullReached: reached, purged };
        })
        .immediate(),
    );
    this.committed(plan, wrote, fullReached, purged);
  }

  /**
   * After a write: the sweeps done and the chunks written are noted, and where the purge got to (a write
   * that failed notes nothing, and the next one takes the same slices). A purge that ended starts a sweep of
   * every chunk.
   */
  private committed(plan: SweepPlan, wrote: readonly [number, number] | null, fullReached: number | null, purged: Purge | null): void {
    plan.commit(wrote, fullReached);
    if (purged === null) return;
    if (purged.chunksFrom !== null || purged.bucketsFrom !== null) {
      this.purge = purged;
      return;
    }
    this.purge = null;
    this.purgedAt = Date.now();
    this.sweeps.sweepAll();
  }

  /**
   * SQLite: the statements of every flush prepared once and run per row (a flush's rows are hundreds: a
   * multi-row statement built, compiled and prepared per flush cost 9 ms for 500 records). Their text is
   * Kysely's for one row, checked to take its values in the order run() gives them.
   */
  #rowStatements: {
    outcome: SqliteDatabase.Statement;
    lastUse: SqliteDatabase.Statement;
    bucket: SqliteDatabase.Statement;
    rejection: SqliteDatabase.Statement;
    trimRejections: SqliteDatabase.Statement;
    chunk: SqliteDatabase.Statement;
    sweep: SqliteDatabase.Statement;
    sliceEnd: SqliteDatabase.Statement;
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
      rejection: prepare(rejectionInsert(this.db, [{ keyId: 1, at: 'a', method: 'm', path: 'p', status: 2, error: 'e', message: 'g', requestId: 'r' }]), [1, 'a', 'm', 'p', 2, 'e', 'g', 'r']),
      // One key's rejections past its newest REJECTIONS_KEPT, read backwards along the (key_id, at, id) index:
      // the statement of rejectionStatements (PostgreSQL's) ran its subquery once per row of the keys, and a
      // flush's multi-row insert was parsed anew each time.
      trimRejections: prepare(
        this.db
          .deleteFrom('key_rejections')
          .where('key_id', '=', 1)
          .where('id', 'in', (eb) =>
            eb.selectFrom('key_rejections as kept').select('kept.id').where('kept.key_id', '=', 1).orderBy('kept.at', 'desc').orderBy('kept.id', 'desc').limit(-1).offset(REJECTIONS_KEPT),
          ),
        [1, 1, -1, REJECTIONS_KEPT],
      ),
      chunk: prepare(this.db.insertInto('key_request_log_chunks').values({ key_id: 1, oldest_ms: 2, newest_ms: 3, lines: 4, body: 'b' }), [1, 2, 3, 4, 'b']),
      sweep: prepare(sweepChunks(this.db, 1, 2, 3), [1, 2, 3]),
      sliceEnd: prepare(fullSweepSliceEnd(this.db, 1, 2), [1, 2]),
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
    return newestLines(await readChunks(this.db, keyId, Date.parse(since)), since);
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
