/**
 * Per-key statistics in the database (SQLite or PostgreSQL), written with the same Kysely statements on
 * both: per flush, upserts of the day counts and of the last uses, one insert of the rejections and one
 * delete keeping the newest 20 per key, in one transaction. On SQLite the upserts run row by row through
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
import { BufferedUsageStats, outcomesByDay, REJECTIONS_KEPT, type DayOutcomes, type LastUse, type Rejection, type StatsBatch } from './usage-stats.js';

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

  protected async write(batch: StatsBatch): Promise<void> {
    const conn = this.sqlite;
    if (conn === null) {
      const queries = [
        ...chunks(batch.outcomes).map((rows) => outcomesUpsert(this.db, rows)),
        ...chunks(batch.lastUse).map((rows) => lastUseUpsert(this.db, rows)),
        ...rejectionStatements(this.db, batch),
      ];
      if (queries.length === 0) return;
      await this.db.transaction().execute(async (trx) => {
        for (const query of queries) await trx.executeQuery(query.compile());
      });
      return;
    }
    if (batch.outcomes.length === 0 && batch.lastUse.length === 0 && batch.rejections.length === 0) return;
    // An operator's transaction open on this connection (never in a serving process): do not join it.
    if (conn.inTransaction) throw new Error('the store connection is inside a transaction; written at the next flush');
    const { outcome, lastUse } = (this.#rowStatements ??= this.#prepareRowStatements(conn));
    const rejections = rejectionStatements(this.db, batch).map((q) => q.compile());
    withBusyTimeout(conn, 0, () =>
      conn
        .transaction(() => {
          for (const r of batch.outcomes) outcome.run(r.keyId, r.day, r.outcome, r.requests);
          for (const r of batch.lastUse) lastUse.run(r.keyId, new Date(r.at).toISOString(), r.address);
          for (const q of rejections) conn.prepare(q.sql).run(...(q.parameters as unknown[]));
        })
        .immediate(),
    );
  }

  /**
   * SQLite: the two upserts of every flush as one-row statements prepared once and run per row (a flush's
   * rows are hundreds: a multi-row statement built, compiled and prepared per flush cost 9 ms for 500
   * records). Their text is Kysely's for one row, checked to take its values in the order run() gives them.
   */
  #rowStatements: { outcome: SqliteDatabase.Statement; lastUse: SqliteDatabase.Statement } | null = null;

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

  protected async disconnect(): Promise<void> {
    // The connection belongs to the store, which closes it.
  }
}
