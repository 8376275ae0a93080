/**
 * Per-key statistics in the database (SQLite or PostgreSQL), written with the same Kysely statements on
 * both: per flush, one upsert of the day counts, one of the last uses, one insert of the rejections and one
 * delete keeping the newest 20 per key, in one transaction.
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
function statements(db: Kysely<Database>, batch: StatsBatch): Compilable[] {
  const out: Compilable[] = [];
  for (const rows of chunks(batch.outcomes)) {
    out.push(
      db
        .insertInto('key_outcomes_daily')
        .values(rows.map((r) => ({ key_id: r.keyId, day: r.day, outcome: r.outcome, requests: r.requests })))
        .onConflict((oc) =>
          oc.columns(['key_id', 'day', 'outcome']).doUpdateSet({ requests: sql`key_outcomes_daily.requests + excluded.requests` }),
        ),
    );
  }
  for (const rows of chunks(batch.lastUse)) {
    out.push(
      db
        .insertInto('key_last_use')
        .values(rows.map((r) => ({ key_id: r.keyId, at: new Date(r.at).toISOString(), address: r.address })))
        .onConflict((oc) =>
          oc
            .column('key_id')
            .doUpdateSet({ at: sql`excluded.at`, address: sql`excluded.address` })
            // Another server may write an older use after a newer one: the latest stays.
            .where(sql<boolean>`excluded.at >= key_last_use.at`),
        ),
    );
  }
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
    const queries = statements(this.db, batch);
    if (queries.length === 0) return;
    const conn = this.sqlite;
    if (conn === null) {
      await this.db.transaction().execute(async (trx) => {
        for (const query of queries) await trx.executeQuery(query.compile());
      });
      return;
    }
    // An operator's transaction open on this connection (never in a serving process): do not join it.
    if (conn.inTransaction) throw new Error('the store connection is inside a transaction; written at the next flush');
    const compiled = queries.map((q) => q.compile());
    withBusyTimeout(conn, 0, () =>
      conn
        .transaction(() => {
          for (const q of compiled) conn.prepare(q.sql).run(...(q.parameters as unknown[]));
        })
        .immediate(),
    );
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
