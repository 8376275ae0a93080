/**
 * The database meter on PostgreSQL (DATABASE_URL=postgres://... without REDIS_URL). Each admission is one
 * transaction that first takes a transaction-scoped advisory lock on the account, so admissions of one
 * account are serialized across every server while other accounts proceed in parallel; the counts are
 * durable once the transaction commits.
 *
 * A late admission counts nothing. When PostgreSQL stalls (SIGSTOP, a saturated host) the server answers
 * 503 at the request's deadline, but cannot take back the statements already on the socket: PostgreSQL
 * runs them when it resumes. So the COMMIT travels in one message with a check of the deadline against
 * PostgreSQL's clock; past it the check raises, the message's COMMIT is skipped, and the transaction rolls
 * back. A commit whose reply still reaches the server after it gave up (a slow network, clocks apart by
 * more than the margin) is undone: its burst row removed, its quota and day counts given back.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Admission, AdmitRequest, KeyDailyUsage, Meter } from './meter.js';
import { MeterUnavailableError, settleMeterBy } from './meter.js';
import { WINDOW_MS, dayOf, periodOf } from './periods.js';

/** Advisory locks are one namespace per database: this class keeps to its own (two-int form). */
const LOCK_CLASS = 0x5e1f;
/** How long an admission or a give-back without a deadline may wait for PostgreSQL. */
const ADMIT_TIMEOUT_MS = 1500;
/** A give-back's token is kept this long: far past its last retry (give-back.ts retries for 10 minutes). */
const REFUND_TOKEN_KEPT_MS = 86_400_000;
/** The commit's deadline is this much before the server gives up: the time its reply has to come back. */
const REPLY_MARGIN_MS = 200;

/** Serializes the meter's transactions of one account until the transaction ends. */
async function lockAccount(trx: Kysely<Database>, accountId: number): Promise<void> {
  // Ids past 2^31 share a lock with another account: that only serializes the two, never miscounts.
  await sql`select pg_advisory_xact_lock(${LOCK_CLASS}::int, ${accountId % 2_147_483_647}::int)`.execute(trx);
}

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

export class PostgresMeter implements Meter {
  constructor(private readonly db: Kysely<Database>) {}

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  /**
   * Runs `work` in a transaction that commits only if PostgreSQL gets to the COMMIT before `giveUpAt` less
   * the reply margin; rejects at `giveUpAt` (MeterUnavailableError). `onLate` gets a result that committed
   * in time but whose reply came after the server gave up.
   */
  private async transactionBefore<T>(giveUpAt: number, work: (trx: Kysely<Database>) => Promise<T>, onLate?: (value: T) => void): Promise<T> {
    const commit = commitBefore(Math.floor(giveUpAt - REPLY_MARGIN_MS));
    const transaction = this.db.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      try {
        const result = await work(conn);
        await sql.raw(commit).execute(conn);
        return result;
      } catch (error) {
        // On a lost connection the rollback fails too; PostgreSQL rolls back by itself then.
        await sql`rollback`.execute(conn).catch(() => {});
        throw error;
      }
    });
    return settleMeterBy(giveUpAt, transaction, 'metering', onLate);
  }

  admit(r: AdmitRequest): Promise<Admission> {
    const giveUpAt = r.deadline ?? Date.now() + ADMIT_TIMEOUT_MS;
    return this.transactionBefore(giveUpAt, (trx) => this.decide(trx, r), (late) => this.undo(r, late));
  }

  /** Takes back an admission committed after the server gave up on it (see the file comment). */
  private undo(r: AdmitRequest, admission: Admission): void {
    if (!admission.burst.allowed) return;
    const counted = r.quota && admission.quota?.allowed === true;
    const work = this.db.transaction().execute(async (trx) => {
      await lockAccount(trx, r.accountId);
      const removed = await sql`
        delete from burst_events where ctid = (
          select ctid from burst_events where account_id = ${r.accountId} and at_ms = ${r.now} limit 1
        )`.execute(trx);
      // The row is gone already (a window pruned a minute later): so is its count.
      if (removed.numAffectedRows !== 1n) return;
      await trx.updateTable('burst_windows').set({ n: sql`n - 1` }).where('account_id', '=', r.accountId).where('n', '>', 0).execute();
      if (counted) await this.giveBack(trx, r.accountId, r.keyId, periodOf(r.now), dayOf(r.now));
    });
    // A failure leaves the request counted: over-counted at worst, as for a refund that fails.
    work.catch(() => {});
  }

  /** The admission's statements, inside the transaction admit() opened on `trx`. */
  private async decide(trx: Kysely<Database>, r: AdmitRequest): Promise<Admission> {
    await lockAccount(trx, r.accountId);
    const pruned = await trx
      .deleteFrom('burst_events')
      .where('account_id', '=', r.accountId)
      .where('at_ms', '<=', r.now - WINDOW_MS)
      .executeTakeFirst();
    const left = Number(pruned.numDeletedRows);
    if (left > 0) {
      await trx.updateTable('burst_windows').set({ n: sql`n - ${left}` }).where('account_id', '=', r.accountId).execute();
    }
    const window = await trx.selectFrom('burst_windows').select('n').where('account_id', '=', r.accountId).executeTakeFirst();
    const n = window?.n ?? 0;
    const oldestRow =
      n === 0
        ? undefined
        : await trx.selectFrom('burst_events').select((eb) => eb.fn.min('at_ms').as('oldest')).where('account_id', '=', r.accountId).executeTakeFirst();
    const oldest = oldestRow?.oldest == null ? null : Number(oldestRow.oldest);
    if (n >= r.limits.perMinute) {
      return { burst: { allowed: false, remaining: 0, resetInMs: oldest === null ? WINDOW_MS : oldest + WINDOW_MS - r.now }, quota: null };
    }
    await trx.insertInto('burst_events').values({ account_id: r.accountId, at_ms: r.now }).execute();
    await trx
      .insertInto('burst_windows')
      .values({ account_id: r.accountId, n: 1 })
      .onConflict((oc) => oc.column('account_id').doUpdateSet({ n: sql`burst_windows.n + 1` }))
      .execute();
    await trx.updateTable('api_keys').set({ last_used_at: new Date(r.now).toISOString() }).where('id', '=', r.keyId).execute();
    const burst = { allowed: true, remaining: r.limits.perMinute - n - 1, resetInMs: (oldest ?? r.now) + WINDOW_MS - r.now };
    const period = periodOf(r.now);
    const row = await trx
      .selectFrom('quota_usage')
      .select('used')
      .where('account_id', '=', r.accountId)
      .where('period', '=', period)
      .executeTakeFirst();
    const used = row?.used ?? 0;
    if (!r.quota) return { burst, quota: { allowed: true, used, period } };
    if (used >= r.limits.monthly) return { burst, quota: { allowed: false, used, period } };
    await trx
      .insertInto('quota_usage')
      .values({ account_id: r.accountId, period, used: 1 })
      .onConflict((oc) => oc.columns(['account_id', 'period']).doUpdateSet({ used: sql`quota_usage.used + 1` }))
      .execute();
    await trx
      .insertInto('key_usage_daily')
      .values({ key_id: r.keyId, day: dayOf(r.now), requests: 1 })
      .onConflict((oc) => oc.columns(['key_id', 'day']).doUpdateSet({ requests: sql`key_usage_daily.requests + 1` }))
      .execute();
    return { burst, quota: { allowed: true, used: used + 1, period } };
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
    await trx
      .updateTable('quota_usage')
      .set({ used: sql`used - 1` })
      .where('account_id', '=', accountId)
      .where('period', '=', period)
      .where('used', '>', 0)
      .execute();
    await trx
      .updateTable('key_usage_daily')
      .set({ requests: sql`requests - 1` })
      .where('key_id', '=', keyId)
      .where('day', '=', day)
      .where('requests', '>', 0)
      .execute();
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
