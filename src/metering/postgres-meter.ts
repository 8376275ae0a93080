/**
 * The database meter on PostgreSQL (DATABASE_URL=postgres://... without REDIS_URL). Admissions of one
 * account are decided in transactions that first take a transaction-scoped advisory lock on the account,
 * so they are serialized across every server while other accounts proceed in parallel; the counts are
 * durable once the transaction commits.
 *
 * One transaction per account at a time, per process. The admissions of an account asked for while its
 * transaction is in flight wait in memory, and go to PostgreSQL together in the next one
 * (postgres-admission-batch.ts: two round trips whatever their number). So an account with hundreds of
 * requests in flight holds one pooled connection and waits on its own lock once per batch; the other
 * accounts keep the rest of the pool. A request still waiting in memory at its deadline is refused there
 * (503), having held no connection and counted nothing.
 *
 * A late admission counts nothing. When PostgreSQL stalls (SIGSTOP, a saturated host) the server answers
 * 503 at the request's deadline, but cannot take back the statements already on the socket: PostgreSQL
 * runs them when it resumes. So the COMMIT travels in one message with a check of the deadline against
 * PostgreSQL's clock (the latest deadline of the batch); past it the check raises, the message's COMMIT
 * is skipped, and the transaction rolls back. An admission whose reply still reaches the server after it
 * gave up on it (its own deadline earlier than the batch's, a slow network, clocks apart by more than the
 * margin) is undone: its burst row removed, its quota and day counts given back.
 */
import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { DeadlineExceededError } from '../deadline.js';
import type { Admission, AdmitRequest, KeyDailyUsage, Meter } from './meter.js';
import { MeterUnavailableError, settleMeterBy } from './meter.js';
import { WINDOW_MS, dayOf, periodOf } from './periods.js';
import { admitBatch, undoMessage, type Undone } from './postgres-admission-batch.js';

/** How long an admission or a give-back without a deadline may wait for PostgreSQL. */
const ADMIT_TIMEOUT_MS = 1500;
/** A give-back's token is kept this long: far past its last retry (give-back.ts retries for 10 minutes). */
const REFUND_TOKEN_KEPT_MS = 86_400_000;
/** The commit's deadline is this much before the server gives up: the time its reply has to come back. */
const REPLY_MARGIN_MS = 200;

/**
 * COMMIT, unless PostgreSQL's clock is past `deadline` (epoch ms) when it gets to it. Both statements go in
 * one simple-protocol message, so the check runs right before the COMMIT whenever PostgreSQL runs them,
 * and an error in the first skips the second. 57014 (query_canceled) reads as "store unavailable".
 */
function commitBefore(deadline: number): string {
  if (!Number.isSafeInteger(deadline)) throw new Error(`commitBefore: not an epoch ms: ${deadline}`);
  return `do $$ begin
  if clock_timestamp() > to_timestamp(${deadline} / 1000.0) then
    raise exception 'admission past its deadline' using errcode = '57014';
  end if;
end $$; commit`;
}

/** An admission waiting for its account's next transaction. */
interface Waiting {
  request: AdmitRequest;
  deadline: number;
  resolve: (admission: Admission) => void;
  reject: (error: unknown) => void;
  /** Answers it 503 at its deadline, whether it still waits in memory or its transaction is in flight. */
  timer: NodeJS.Timeout;
  /** Answered 503: counts nothing (undone if its transaction commits after all). */
  refused: boolean;
}

/** One account's admissions in this process: those waiting, and whether its transaction is in flight. */
interface AccountLine {
  waiting: Waiting[];
  inFlight: boolean;
  scheduled: boolean;
}

/** A count a give-back takes one from: the account's month (quota_usage) or the key's day (key_usage_daily). */
type CountRow =
  | { table: 'quota_usage'; count: 'used'; owner: 'account_id'; when: 'period' }
  | { table: 'key_usage_daily'; count: 'requests'; owner: 'key_id'; when: 'day' };
const QUOTA_COUNT: CountRow = { table: 'quota_usage', count: 'used', owner: 'account_id', when: 'period' };
const KEY_DAY_COUNT: CountRow = { table: 'key_usage_daily', count: 'requests', owner: 'key_id', when: 'day' };

/**
 * One fewer in a count, never below zero: `update <table> set <count> = <count> - 1 where <owner> = $1 and
 * <when> = $2 and <count> > $3`. Columns by name (CountRow keeps them to the two tables' own).
 */
function takeOne(trx: Kysely<Database>, row: CountRow, owner: number, when: string) {
  const { ref } = trx.dynamic;
  return trx
    .updateTable(row.table)
    .set({ [row.count]: sql.raw(`${row.count} - 1`) })
    .where(ref(row.owner), '=', owner)
    .where(ref(row.when), '=', when)
    .where(ref(row.count), '>', 0);
}

export class PostgresMeter implements Meter {
  private readonly lines = new Map<number, AccountLine>();
  private readonly db: Kysely<Database>;
  /** The batches send several statements in one message, which takes the pool's client itself. */
  private readonly pool: pg.Pool;

  constructor(store: Pick<Store, 'db' | 'pgPool'>) {
    if (store.pgPool === null) throw new Error('PostgresMeter: not a PostgreSQL store');
    this.db = store.db;
    this.pool = store.pgPool;
  }

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  /**
   * Runs `work` on one connection; it opens a transaction and ends it with `commit`, which commits only if
   * PostgreSQL gets to it before `giveUpAt` less the reply margin. Settles when the transaction ends,
   * however late: see transactionBefore.
   */
  private transaction<T>(giveUpAt: number, work: (conn: Kysely<Database>, commit: string) => Promise<T>): Promise<T> {
    const commit = commitBefore(Math.floor(giveUpAt - REPLY_MARGIN_MS));
    return this.db.connection().execute(async (conn) => {
      try {
        return await work(conn, commit);
      } catch (error) {
        // On a lost connection the rollback fails too; PostgreSQL rolls back by itself then.
        await sql`rollback`.execute(conn).catch(() => {});
        throw error;
      }
    });
  }

  /**
   * `work` in a transaction (see transaction), rejecting at `giveUpAt` (MeterUnavailableError). `onLate`
   * gets a result that committed in time but whose reply came after the server gave up.
   */
  private transactionBefore<T>(giveUpAt: number, work: (trx: Kysely<Database>) => Promise<T>, onLate?: (value: T) => void): Promise<T> {
    const transaction = this.transaction(giveUpAt, async (conn, commit) => {
      await sql`begin`.execute(conn);
      const result = await work(conn);
      await sql.raw(commit).execute(conn);
      return result;
    });
    return settleMeterBy(giveUpAt, transaction, 'metering', onLate);
  }

  admit(request: AdmitRequest): Promise<Admission> {
    const deadline = request.deadline ?? Date.now() + ADMIT_TIMEOUT_MS;
    let line = this.lines.get(request.accountId);
    if (line === undefined) this.lines.set(request.accountId, (line = { waiting: [], inFlight: false, scheduled: false }));
    const waitingLine = line;
    return new Promise<Admission>((resolve, reject) => {
      const waiting: Waiting = {
        request,
        deadline,
        resolve,
        reject,
        refused: false,
        timer: setTimeout(() => {
          waiting.refused = true;
          reject(new MeterUnavailableError(new DeadlineExceededError('metering')));
        }, Math.max(0, deadline - Date.now())),
      };
      waitingLine.waiting.push(waiting);
      // Those asked for in the same turn of the event loop go together.
      if (!waitingLine.inFlight && !waitingLine.scheduled) {
        waitingLine.scheduled = true;
        setImmediate(() => this.send(request.accountId, waitingLine));
      }
    });
  }

  /** Sends the account's waiting admissions to PostgreSQL in one transaction; the next wait for it to end. */
  private send(accountId: number, line: AccountLine): void {
    line.scheduled = false;
    const batch = line.waiting.filter((w) => !w.refused);
    line.waiting = [];
    if (batch.length === 0) {
      this.lines.delete(accountId);
      return;
    }
    line.inFlight = true;
    // Each admission keeps its own deadline (its timer answers it 503 then), so the batch does not fail as
    // a whole when its oldest admission, which waited longest in memory, runs out of time. The COMMIT is
    // checked against the latest deadline; one answered 503 before the batch came back is undone.
    const giveUpAt = batch.reduce((latest, w) => Math.max(latest, w.deadline), 0);
    const requests = batch.map((w) => w.request);
    const transaction = this.batchTransaction(giveUpAt, accountId, requests);
    transaction.then(
      (admissions) => {
        const late: number[] = [];
        batch.forEach((w, i) => {
          if (w.refused) return late.push(i);
          clearTimeout(w.timer);
          w.resolve(admissions[i]!);
        });
        if (late.length > 0) this.undo(late.map((i) => requests[i]!), late.map((i) => admissions[i]!));
      },
      (error: unknown) => {
        const unavailable = new MeterUnavailableError(error);
        for (const w of batch) {
          if (w.refused) continue;
          clearTimeout(w.timer);
          w.reject(unavailable);
        }
      },
    );
    const ended = () => {
      line.inFlight = false;
      if (line.waiting.length > 0) this.send(accountId, line);
      else if (!line.scheduled) this.lines.delete(accountId);
    };
    transaction.then(ended, ended);
  }

  /**
   * `work` on a pool client of its own (the batches send several statements in one message, with their
   * BEGIN and COMMIT); rolled back when it fails, and the client dropped when even that fails.
   */
  private async withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      return await work(client);
    } catch (error) {
      // On a lost connection the rollback fails too (PostgreSQL rolls back by itself): the pool drops it.
      await client.query('rollback').catch((e: unknown) => {
        broken = e instanceof Error ? e : new Error(String(e));
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** The batch's transaction (see admitBatch), committed only before `giveUpAt` less the reply margin. */
  private batchTransaction(giveUpAt: number, accountId: number, requests: readonly AdmitRequest[]): Promise<Admission[]> {
    const commit = commitBefore(Math.floor(giveUpAt - REPLY_MARGIN_MS));
    return this.withClient((client) => admitBatch(client, accountId, requests, commit));
  }

  /** Takes back admissions committed after the server gave up on them (see the file comment). */
  private undo(requests: readonly AdmitRequest[], admissions: readonly Admission[]): void {
    // A request answered 503 counts nothing: its window row goes, and its quota and day counts if it was counted.
    const undone: Undone[] = requests.flatMap((r, i) =>
      admissions[i]!.burst.allowed
        ? [{ at: r.now, counted: r.quota && admissions[i]!.quota?.allowed === true ? { keyId: r.keyId, period: periodOf(r.now), day: dayOf(r.now) } : null }]
        : [],
    );
    if (undone.length === 0) return;
    // One message, so the account's lock is held only while PostgreSQL runs it.
    const work = this.withClient((client) => client.query(undoMessage(requests[0]!.accountId, undone)));
    // A failure leaves the requests counted: over-counted at worst, as for a refund that fails.
    work.catch(() => {});
  }

  refund(accountId: number, keyId: number, period: string, day: string, deadline?: number, token?: string): Promise<void> {
    const giveUpAt = deadline ?? Date.now() + ADMIT_TIMEOUT_MS;
    return this.transactionBefore(giveUpAt, async (trx) => {
      if (token !== undefined) {
        // A retry of a give-back that committed but whose reply was lost finds its token: nothing more to do.
        const now = Date.now();
        await trx.deleteFrom('refund_tokens').where('at_ms', '<', now - REFUND_TOKEN_KEPT_MS).execute();
        const taken = await trx
          .insertInto('refund_tokens')
          .values({ token, at_ms: now })
          .onConflict((oc) => oc.column('token').doNothing())
          .returning('token')
          .executeTakeFirst();
        if (taken === undefined) return;
      }
      await this.giveBack(trx, accountId, keyId, period, day);
    });
  }

  private async giveBack(trx: Kysely<Database>, accountId: number, keyId: number, period: string, day: string): Promise<void> {
    await takeOne(trx, QUOTA_COUNT, accountId, period).execute();
    await takeOne(trx, KEY_DAY_COUNT, keyId, day).execute();
  }

  used(accountId: number, period: string): Promise<number> {
    return this.guard(async () => {
      const row = await this.db
        .selectFrom('quota_usage')
        .select('used')
        .where('account_id', '=', accountId)
        .where('period', '=', period)
        .executeTakeFirst();
      return row?.used ?? 0;
    });
  }

  // The account is not needed here: key ids are unique in the database (the Redis meter needs it).
  keyUsage(_accountId: number, keyId: number, sinceDay: string, untilDay = '9999-12-31'): Promise<KeyDailyUsage[]> {
    return this.guard(() =>
      this.db
        .selectFrom('key_usage_daily')
        .select(['day', 'requests'])
        .where('key_id', '=', keyId)
        .where('day', '>=', sinceDay)
        .where('day', '<=', untilDay)
        .orderBy('day', 'desc')
        .execute(),
    );
  }

  lastUsed(_accountId: number, keyIds: number[]): Promise<Map<number, string>> {
    return this.guard(async () => {
      if (keyIds.length === 0) return new Map();
      const rows = await this.db.selectFrom('api_keys').select(['id', 'last_used_at']).where('id', 'in', keyIds).execute();
      return new Map(rows.filter((r) => r.last_used_at !== null).map((r) => [r.id, r.last_used_at as string]));
    });
  }

  burstUsed(accountId: number, now: number): Promise<number> {
    return this.guard(async () => {
      const row = await this.db
        .selectFrom('burst_events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('account_id', '=', accountId)
        .where('at_ms', '>', now - WINDOW_MS)
        .where('at_ms', '<=', now)
        .executeTakeFirst();
      return Number(row?.n ?? 0);
    });
  }

  async ping(): Promise<boolean> {
    try {
      await sql`select 1`.execute(this.db);
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    // The pool belongs to the store, which closes it.
  }
}
