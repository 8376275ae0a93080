/**
 * Reminders for the platform to send (shelfapi sends no mail): keys expiring within 7 days and within a
 * day, keys that expired, accounts at 80% and at 100% of the month's quota, a key used from a new address
 * (read from its request log, when the statistics are given). `refreshNotices` records what
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
import { REQUEST_LOG_MS, type UsageStats } from '../usage-stats/usage-stats.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';

// key_leaked is recorded by leaked-keys.service.ts when a key found public is revoked, not by refreshNotices.
export const NOTICE_KINDS = ['key_expiring_7d', 'key_expiring_1d', 'key_expired', 'quota_80', 'quota_100', 'key_new_address', 'key_leaked'] as const;
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
  kind: NoticeKind | typeof KNOWN_ADDRESS;
  account_id: number;
  key_id: number | null;
  at: string;
  detail: string;
  /** Recorded as acknowledged: never listed (a key's first addresses). */
  acked?: boolean;
}

/**
 * Not a notice: an address a key was using when its addresses were first looked at (its first requests,
 * or those of the 7 days before this kind of notice existed). Recorded acknowledged, under the same subject
 * as a notice of that address would be, so that only the addresses after them are new.
 */
const KNOWN_ADDRESS = 'key_address_known';

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

/**
 * Keys used from an address they were not used from before: read from each live key's request log (its
 * last 100 requests of 7 days; src/usage-stats/usage-stats.ts), requests that got past the key check only (a
 * refused attempt, 401, is nobody's use). A key seen for the first time gets its addresses recorded as
 * known, without a notice: its first address is not news. Run often enough (docs/operations.md's cron line: every
 * 15 minutes) that a key's last 100 requests span the time between two runs. Keys with allowed addresses
 * are left out, as the contract says: where they may be used from is the owner's own choice.
 */
async function newAddressNotices(db: Kysely<Database>, stats: UsageStats, now: number): Promise<NewNotice[]> {
  const keys = await db
    .selectFrom('api_keys')
    .select(['id', 'account_id'])
    .where('revoked_at', 'is', null)
    .where('allowed_addresses', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date(now - REQUEST_LOG_MS).toISOString())]))
    .execute();
  const since = new Date(now - REQUEST_LOG_MS).toISOString();
  const subject = (keyId: number, address: string) => `key_new_address:${keyId}:${address}`;
  const out: NewNotice[] = [];
  for (let i = 0; i < keys.length; i += METER_BATCH) {
    const batch = keys.slice(i, i + METER_BATCH);
    const logs = await Promise.all(batch.map((k) => stats.requestLog(k.account_id, k.id, since)));
    const recorded = await db
      .selectFrom('notices')
      .select(['key_id', 'subject'])
      .where('key_id', 'in', batch.map((k) => k.id))
      .where('kind', 'in', ['key_new_address', KNOWN_ADDRESS])
      .execute();
    const known = new Set(recorded.map((r) => r.subject));
    const keysKnown = new Set(recorded.map((r) => Number(r.key_id)));
    batch.forEach((key, j) => {
      // Each address with the first time it was used (the log is newest first).
      const firstSeen = new Map<string, string>();
      for (const entry of logs[j] ?? []) {
        if (entry.address === null || entry.status === 401) continue;
        firstSeen.set(entry.address, entry.at);
      }
      const first = !keysKnown.has(key.id);
      for (const [address, at] of firstSeen) {
        if (known.has(subject(key.id, address))) continue;
        out.push({
          subject: subject(key.id, address),
          kind: first ? KNOWN_ADDRESS : 'key_new_address',
          account_id: key.account_id,
          key_id: key.id,
          at,
          detail: `used from ${address}, first at ${utcMinute(at)}`,
          ...(first ? { acked: true } : {}),
        });
      }
    });
  }
  return out;
}

/**
 * Records every notice that holds at `now` and was never recorded; returns how many were new. Keys used from
 * a new address are looked for when `stats` (the owners' statistics, holding the request log) is given.
 */
export async function refreshNotices(
  store: Store,
  meter: Meter,
  options: { now: number; planLimits: Readonly<Record<Plan, PlanLimits>>; stats?: UsageStats },
): Promise<number> {
  const found = [
    ...(await expiryNotices(store.db, options.now)),
    ...(await quotaNotices(store, meter, options.planLimits, options.now)),
    ...(options.stats === undefined ? [] : await newAddressNotices(store.db, options.stats, options.now)),
  ];
  if (found.length === 0) return 0;
  const createdAt = new Date(options.now).toISOString();
  let added = 0;
  await store.db.transaction().execute(async (trx) => {
    for (const { acked, ...notice } of found) {
      const result = await trx
        .insertInto('notices')
        .values({ ...notice, created_at: createdAt, acked_at: acked === true ? createdAt : null })
        .onConflict((oc) => oc.column('subject').doNothing())
        .executeTakeFirst();
      if (acked !== true) added += Number(result.numInsertedOrUpdatedRows ?? 0n);
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
