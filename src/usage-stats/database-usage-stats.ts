/**
 * Per-key statistics in the database (SQLite or PostgreSQL), written with the same Kysely statements on
 * both: per flush, upserts of the day counts, of the last uses and of the hours' usage buckets, one insert of the
 * rejections and one delete keeping the newest 20 per key, the request log's lines as one row per key
 * (request-log-chunks.ts) and the sweeps of older rows that are due (ChunkSweeps), in one transaction. Every
 * 10 minutes or so (and at a process's first write) a purge drops request log lines past 7 days and hour
 * buckets past 2 days, adding those to their days' rows, PURGE_ROWS_PER_WRITE rows of each table a write until a
 * write finds fewer, and then starts a sweep of every chunk. On SQLite the upserts run row by row through
 * statements prepared once (cheaper than building and preparing a statement of hundreds of rows per flush).
 *
 * SQLite: the flush runs synchronously on the store's connection (as the meter does), so nothing else can
 * run on that connection in the middle of it; it does not wait for another process's write lock (a
 * blocked wait would stall every request of this process): a busy file leaves the records for the next
 * flush.
 *
 * The statements are database-usage-stats-statements.ts, the purge's database-usage-stats-purge.ts, the reads
 * database-usage-stats-reads.ts.
 */
import type SqliteDatabase from 'better-sqlite3';
import type { CompiledQuery, Kysely } from 'kysely';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { chunkOf, ChunkSweeps, FULL_SWEEP_SLICE, fullSweepSliceEnd, newestLines, readChunks, sweepChunks, type ChunkRow, type SweepPlan } from './request-log-chunks.js';
import { withBusyTimeout } from '../metering/sqlite-busy-timeout.js';
import { BufferedUsageStats } from './buffered-usage-stats.js';
import { bucketPurge, chunkPurge, daysOfHours, FIRST_KEY, newestOf, PURGE_EVERY_MS, PURGE_ROWS_PER_WRITE, purgedTo, type Purge, type PurgedBucket } from './database-usage-stats-purge.js';
import { bucketsUpsert, chunks, lastUseUpsert, outcomesUpsert, prepareRowStatements, rejectionStatements, type RowStatements } from './database-usage-stats-statements.js';
import { readAccountDays, readKeyOutcomes, readKeysOutcomes, readLastUse, readRecentRejections, readUsageBuckets } from './database-usage-stats-reads.js';
import { REJECTIONS_KEPT, REQUEST_LOG_KEPT, type DayOutcomes, type LastUse, type Rejection, type RequestLogEntry, type StatsBatch } from './usage-stats.js';

export class DatabaseUsageStats extends BufferedUsageStats {
  private readonly db: Kysely<Database>;
  private readonly sqlite: SqliteDatabase.Database | null;

  /**
   * `sweepAges`: when this process sweeps the chunks it wrote (SWEEP_AGES_MS; tests shorten them).
   * `purgeRowsPerWrite`: PURGE_ROWS_PER_WRITE (tests shorten it).
   * `lockWaitMs`: SQLite, how long a write waits for another connection's write lock: 0 on the request
   * thread (the wait would block it), longer from the statistics' own thread (usage-stats-worker.ts).
   * `rowsPerWrite`: the rows of counts and the lines of the log a busy write takes at most
   * (COUNT_ROWS_PER_WRITE and LOG_LINES_PER_WRITE unless given).
   */
  constructor(
    store: Store,
    options: { sweepAges?: readonly number[]; purgeRowsPerWrite?: number; lockWaitMs?: number; rowsPerWrite?: number } = {},
  ) {
    super();
    this.db = store.db;
    this.sqlite = store.sqlite;
    this.sweeps = new ChunkSweeps(options.sweepAges);
    this.purgeRows = options.purgeRowsPerWrite ?? PURGE_ROWS_PER_WRITE;
    this.lockWaitMs = options.lockWaitMs ?? 0;
    if (options.rowsPerWrite !== undefined) this.countRowsPerWrite = this.logLinesPerWrite = options.rowsPerWrite;
  }

  private readonly lockWaitMs: number;

  /** Days are made from hours at the purge (usage-buckets.ts), and read as their rows plus their hours kept. */
  protected override writesDayBuckets(): boolean {
    return false;
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
      // The day outcomes are not written: the `o:` hour rows among the buckets hold them until the purge adds
      // them to key_outcomes_daily (daysOfHours), as the other fields' days (usage-buckets.ts).
      const queries = [
        ...chunks(batch.lastUse).map((rows) => lastUseUpsert(this.db, rows)),
        ...chunks(batch.buckets).map((rows) => bucketsUpsert(this.db, rows)),
        ...rejectionStatements(this.db, batch),
      ];
      if (queries.length === 0 && logChunks.length === 0 && plan.ranges.length === 0 && plan.fullAfter === null && purge === null) return;
      const purgeHours = async (trx: Kysely<Database>, newest: number, from: number) => {
        const gone = await bucketPurge(trx, newest, from, purgeRows).execute();
        const days = daysOfHours(gone);
        for (const rows of chunks(days.buckets)) await trx.executeQuery(bucketsUpsert(trx, rows).compile());
        for (const rows of chunks(days.outcomes)) await trx.executeQuery(outcomesUpsert(trx, rows).compile());
        return purgedTo(gone, purgeRows);
      };
      const { wrote, fullReached, purged } = await this.db.transaction().execute(async (trx) => {
        for (const query of queries) await trx.executeQuery(query.compile());
        let purged: Purge | null = null;
        if (purge !== null) {
          const { newest, chunksFrom, bucketsFrom } = purge;
          purged = {
            newest,
            chunksFrom: chunksFrom === null ? null : purgedTo(await chunkPurge(trx, newest, chunksFrom, purgeRows).execute(), purgeRows),
            bucketsFrom: bucketsFrom === null ? null : await purgeHours(trx, newest, bucketsFrom),
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
    const { outcome, lastUse, bucket, rejection, trimRejections, chunk, sweep, sliceEnd } = (this.#rowStatements ??= prepareRowStatements(this.db, conn));
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
    const deletedHours = (q: CompiledQuery | null) => {
      if (q === null) return null;
      const gone = conn.prepare(q.sql).all(...q.parameters) as PurgedBucket[];
      const days = daysOfHours(gone);
      for (const r of days.buckets) bucket.run(r.keyId, r.period, r.field, r.requests);
      for (const r of days.outcomes) outcome.run(r.keyId, r.day, r.outcome, r.requests);
      return purgedTo(gone, purgeRows);
    };
    const { wrote, fullReached, purged } = withBusyTimeout(conn, this.lockWaitMs, () =>
      conn
        .transaction(() => {
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
            purgeSlices === null ? null : { newest: purgeSlices.newest, chunksFrom: deleted(purgeSlices.chunks), bucketsFrom: deletedHours(purgeSlices.buckets) };
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

  /** SQLite: the statements of every flush, prepared at its first write (database-usage-stats-statements.ts). */
  #rowStatements: RowStatements | null = null;

  keyOutcomes(_accountId: number, keyId: number, sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
    return readKeyOutcomes(this.db, keyId, sinceDay, untilDay);
  }

  keysOutcomes(_accountId: number, keyIds: readonly number[], sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
    return readKeysOutcomes(this.db, keyIds, sinceDay, untilDay);
  }

  recentRejections(_accountId: number, keyId: number): Promise<Rejection[]> {
    return readRecentRejections(this.db, keyId);
  }

  lastUse(_accountId: number, keyIds: readonly number[]): Promise<Map<number, LastUse>> {
    return readLastUse(this.db, keyIds);
  }

  async requestLog(_accountId: number, keyId: number, since: string): Promise<RequestLogEntry[]> {
    return newestLines(await readChunks(this.db, keyId, Date.parse(since)), since);
  }

  usageBuckets(_accountId: number, keyIds: readonly number[], periods: readonly string[]): Promise<Map<string, Map<string, number>>> {
    return readUsageBuckets(this.db, keyIds, periods);
  }

  accountDays(accountId: number, _shown: readonly number[], hidden: readonly number[], days: readonly string[]): Promise<Map<string, Map<string, number>>> {
    return readAccountDays(this.db, accountId, hidden, days);
  }

  protected async disconnect(): Promise<void> {
    // The connection belongs to the store, which closes it.
  }
}
