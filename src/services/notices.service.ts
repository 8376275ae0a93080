/**
 * Reminders for the platform to send (shelfapi sends no mail): keys expiring within 7 days and within a
 * day, keys that expired, accounts at 80% and at 100% of the month's quota. `refreshNotices` records what
 * holds now, each thing once (a notice's subject is unique, so the same expiry or the same month's 80% is
 * never recorded twice, acknowledged or not); `pendingNotices` lists what no mailer has acknowledged yet;
 * `ackNotices` marks notices sent, all or none.
 */
import type { Kysely } from 'kysely';
import type { Plan, PlanLimits } from '../domain/scopes.js';
import { InputError } from '../errors/input-error.js';
import { keyHint } from '../keys/api-key.js';
import type { Meter } from '../metering/meter.js';
import { periodOf } from '../metering/periods.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';

export const NOTICE_KINDS = ['key_expiring_7d', 'key_expiring_1d', 'key_expired', 'quota_80', 'quota_100'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

const DAY_MS = 86_400_000;
/** A key that expired longer ago than this is not noticed any more (a first run does not dig up old keys). */
const EXPIRED_NOTICED_MS = 7 * DAY_MS;
/** Accounts asked of the meter at once: one round trip each on Redis, so a few at a time, not 100,000. */
const METER_BATCH = 100;

export interface Notice {
  id: number;
  kind: NoticeKind;
  account: { id: number; email: string };
  key: { id: number; name: string; hint: string } | null;
  /** The expiry, or when the share of the quota was first seen. */
  at: string;
  /** One line for a person: "expires 2027-01-31 23:59 UTC", "41,000 of 50,000 requests (82%) in 2027-01". */
  detail: string;
  /** When shelfapi first recorded it. */
  createdAt: string;
}

interface NewNotice {
  subject: string;
  kind: NoticeKind;
  account_id: number;
  key_id: number | null;
  at: string;
  detail: string;
}

const utcMinute = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

/** The expiry notice a key deserves now, if any: only the most pressing of the three. */
function expiryNotice(key: { id: number; account_id: number; expires_at: string }, now: number): NewNotice | null {
  const expiresAt = Date.parse(key.expires_at);
  let kind: NoticeKind;
  if (expiresAt <= now) {
    if (expiresAt < now - EXPIRED_NOTICED_MS) return null;
    kind = 'key_expired';
  } else if (expiresAt <= now + DAY_MS) kind = 'key_expiring_1d';
  else if (expiresAt <= now + 7 * DAY_MS) kind = 'key_expiring_7d';
  else return null;
  const detail = `${kind === 'key_expired' ? 'expired' : 'expires'} ${utcMinute(key.expires_at)}`;
  return { subject: `${kind}:${key.id}:${key.expires_at}`, kind, account_id: key.account_id, key_id: key.id, at: key.expires_at, detail };
}

async function expiryNotices(db: Kysely<Database>, now: number): Promise<NewNotice[]> {
  const keys = await db
    .selectFrom('api_keys')
    .select(['id', 'account_id', 'expires_at'])
    .where('revoked_at', 'is', null)
    // A key rolled away is replaced already: its owner chose when it stops.
    .where('replaced_by', 'is', null)
    .where('expires_at', 'is not', null)
    .where('expires_at', '>=', new Date(now - EXPIRED_NOTICED_MS).toISOString())
    .where('expires_at', '<=', new Date(now + 7 * DAY_MS).toISOString())
    .execute();
  return keys.flatMap((k) => (k.expires_at === null ? [] : [expiryNotice({ ...k, expires_at: k.expires_at }, now)].filter((n) => n !== null)));
}

async function quotaNotices(store: Store, meter: Meter, planLimits: Readonly<Record<Plan, PlanLimits>>, now: number): Promise<NewNotice[]> {
  const period = periodOf(now);
  const accounts = await store.db.selectFrom('accounts').select(['id', 'plan']).where('plan_status', '=', 'active').where('plan', '!=', 'none').execute();
  const notices: NewNotice[] = [];
  for (let i = 0; i < accounts.length; i += METER_BATCH) {
    const batch = accounts.slice(i, i + METER_BATCH);
    const used = await Promise.all(batch.map((a) => meter.used(a.id, period)));
    batch.forEach((account, j) => {
      const monthly = planLimits[account.plan as Plan]?.monthly;
      const count = used[j]!;
      if (monthly === undefined || monthly <= 0 || count < monthly * 0.8) return;
      const kind: NoticeKind = count >= monthly ? 'quota_100' : 'quota_80';
      const share = Math.floor((count / monthly) * 100);
      notices.push({
        subject: `${kind}:${account.id}:${period}`,
        kind,
        account_id: account.id,
        key_id: null,
        at: new Date(now).toISOString(),
        detail: `${count.toLocaleString('en-US')} of ${monthly.toLocaleString('en-US')} requests (${share}%) in ${period}`,
      });
    });
  }
  return notices;
}

/** Records every notice that holds at `now` and was never recorded; returns how many were new. */
export async function refreshNotices(
  store: Store,
  meter: Meter,
  options: { now: number; planLimits: Readonly<Record<Plan, PlanLimits>> },
): Promise<number> {
  const found = [...(await expiryNotices(store.db, options.now)), ...(await quotaNotices(store, meter, options.planLimits, options.now))];
  if (found.length === 0) return 0;
  const createdAt = new Date(options.now).toISOString();
  let added = 0;
  await store.db.transaction().execute(async (trx) => {
    for (const notice of found) {
      const result = await trx
        .insertInto('notices')
        .values({ ...notice, created_at: createdAt, acked_at: null })
        .onConflict((oc) => oc.column('subject').doNothing())
        .executeTakeFirst();
      added += Number(result.numInsertedOrUpdatedRows ?? 0n);
    }
  });
  return added;
}

/** Every notice not yet acknowledged, oldest first. */
export async function pendingNotices(store: Store, keyPrefix: string): Promise<Notice[]> {
  const rows = await store.db
    .selectFrom('notices as n')
    .innerJoin('accounts as a', 'a.id', 'n.account_id')
    .leftJoin('api_keys as k', 'k.id', 'n.key_id')
    .select(['n.id', 'n.kind', 'n.account_id', 'a.email', 'n.key_id', 'k.name', 'k.last_four', 'n.at', 'n.detail', 'n.created_at'])
    .where('n.acked_at', 'is', null)
    .orderBy('n.id')
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    kind: r.kind as NoticeKind,
    account: { id: Number(r.account_id), email: r.email },
    key: r.key_id === null ? null : { id: Number(r.key_id), name: r.name ?? '', hint: keyHint(keyPrefix, r.last_four ?? '') },
    at: r.at,
    detail: r.detail,
    createdAt: r.created_at,
  }));
}

/**
 * Marks notices sent. Every id must name a notice, or none is marked (an unknown id is a mistake in the
 * caller's list, not something to half-apply); one acknowledged already stays as it was.
 */
export async function ackNotices(store: Store, ids: readonly number[], now: number): Promise<{ acked: number[]; already: number[] }> {
  if (ids.length === 0) throw new InputError('name at least one notice id to acknowledge');
  const unique = [...new Set(ids)];
  return store.db.transaction().execute(async (trx) => {
    const rows = await trx.selectFrom('notices').select(['id', 'acked_at']).where('id', 'in', unique).execute();
    const known = new Map(rows.map((r) => [Number(r.id), r.acked_at]));
    const unknown = unique.filter((id) => !known.has(id));
    if (unknown.length > 0) throw new InputError(`no notice ${unknown.join(', ')}: nothing was acknowledged`);
    const acked = unique.filter((id) => known.get(id) === null);
    const already = unique.filter((id) => known.get(id) !== null);
    if (acked.length > 0) {
      await trx.updateTable('notices').set({ acked_at: new Date(now).toISOString() }).where('id', 'in', acked).where('acked_at', 'is', null).execute();
    }
    return { acked, already };
  });
}
