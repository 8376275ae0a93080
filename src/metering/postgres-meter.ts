/**
 * The database meter on PostgreSQL (DATABASE_URL=postgres://... without REDIS_URL). Each admission is one
 * transaction that first takes a transaction-scoped advisory lock on the account, so admissions of one
 * account are serialized across every server while other accounts proceed in parallel; the counts are
 * durable once the transaction commits.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Admission, AdmitRequest, KeyDailyUsage, Meter } from './meter.js';
import { MeterUnavailableError } from './meter.js';
import { WINDOW_MS, dayOf, periodOf } from './periods.js';

/** Advisory locks are one namespace per database: this class keeps to its own (two-int form). */
const LOCK_CLASS = 0x5e1f;

export class PostgresMeter implements Meter {
  constructor(private readonly db: Kysely<Database>) {}

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw new MeterUnavailableError(error);
    }
  }

  admit(r: AdmitRequest): Promise<Admission> {
    return this.guard(() =>
      this.db.transaction().execute(async (trx) => {
        // Ids past 2^31 share a lock with another account: that only serializes the two, never miscounts.
        await sql`select pg_advisory_xact_lock(${LOCK_CLASS}::int, ${r.accountId % 2_147_483_647}::int)`.execute(trx);
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
      }),
    );
  }

  refund(accountId: number, keyId: number, period: string, day: string): Promise<void> {
    return this.guard(() =>
      this.db.transaction().execute(async (trx) => {
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
      }),
    );
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

  keyUsage(keyId: number, sinceDay: string, untilDay = '9999-12-31'): Promise<KeyDailyUsage[]> {
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

  lastUsed(keyIds: number[]): Promise<Map<number, string>> {
    return this.guard(async () => {
      if (keyIds.length === 0) return new Map();
      const rows = await this.db.selectFrom('api_keys').select(['id', 'last_used_at']).where('id', 'in', keyIds).execute();
      return new Map(rows.filter((r) => r.last_used_at !== null).map((r) => [r.id, r.last_used_at as string]));
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
