/**
 * Gathers the overview's numbers with the rules the command line uses (isListedKey, the meter's counts):
 * the account, its keys with status and last use, this month's counted requests (the figure /me reports),
 * the burst window, the account's counted requests per day (the sum of its keys' daily counts, as
 * `keys usage` shows them), and the keys whose expiry reminder the owner hid until tomorrow.
 */
import { hiddenExpiryReminders } from '../../services/expiry-reminders.js';
import { ownedKey } from '../../services/key-lookup.js';
import { PLANS, type Plan } from '../../domain/scopes.js';
import { keyHint } from '../../keys/api-key.js';
import { isListedKey, keyStatus } from '../../keys/key-status.js';
import { dayOf, monthBounds, periodOf } from '../../metering/periods.js';
import { getAccount, type AccountRecord } from '../../store/repositories/account.repository.js';
import { listKeys, type KeyRecord } from '../../store/repositories/api-key.repository.js';
import type { AppDeps } from '../app-types.js';
import { PageError } from './page-errors.js';
import { accountLeaks } from '../../services/leaked-key-replacement.js';
import type { KeyView } from './views/key-summary.js';
import type { OverviewData } from './views/overview.js';

export const CHART_DAYS = 30;

/** The last `count` UTC days, oldest first, today last. */
export function lastDays(now: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => dayOf(now - (count - 1 - i) * 86_400_000));
}

export function keyView(record: KeyRecord, keyPrefix: string, now: number): KeyView {
  return {
    id: record.id,
    name: record.name,
    hint: keyHint(keyPrefix, record.lastFour),
    scopes: record.scopes,
    allowedAddresses: record.allowedAddresses,
    createdAt: record.createdAt,
    expiresAt: record.expiresAt,
    lastUsedAt: record.lastUsedAt,
    status: keyStatus(record, now),
  };
}

/**
 * The owner's key `keyId` as a page shows it, with its last use as the meter knows it (as the overview and
 * `keys list` show it): the key's row alone does not say when it was last used.
 */
export async function ownedKeyView(deps: AppDeps, accountId: number, keyId: number, now: number): Promise<KeyView> {
  const record = await ownedKey(deps.store, accountId, keyId);
  const lastUsedAt = (await deps.meter.lastUsed(accountId, [keyId])).get(keyId) ?? null;
  return keyView({ ...record, lastUsedAt }, deps.config.keyPrefix, now);
}

/** The account and its keys as the overview splits them: those it lists (working, or ended within the last 90 days) and the others. */
export interface AccountAndKeys {
  account: AccountRecord;
  listed: KeyRecord[];
  /** The keys not listed, which the account's day totals still count (UsageStats.accountDays takes them away). */
  hiddenIds: number[];
}

/** The account and its keys, read together (one round trip's wait, not two in turn). */
export async function accountAndKeys(deps: AppDeps, accountId: number, now: number): Promise<AccountAndKeys> {
  const [account, keys] = await Promise.all([getAccount(deps.store.db, accountId), listKeys(deps.store.db, accountId)]);
  // An account gone since the session began signs the owner out.
  if (account === undefined) throw new PageError('signed_out');
  const listed: KeyRecord[] = [];
  const hiddenIds: number[] = [];
  for (const key of keys) {
    if (isListedKey(key, now)) listed.push(key);
    else hiddenIds.push(key.id);
  }
  return { account, listed, hiddenIds };
}

/** The account's key ids, listed and not (see accountAndKeys): all the account's CSV needs. */
export async function accountKeyIds(deps: AppDeps, accountId: number, now: number): Promise<{ shown: number[]; hidden: number[] }> {
  const { listed, hiddenIds } = await accountAndKeys(deps, accountId, now);
  return { shown: listed.map((key) => key.id), hidden: hiddenIds };
}

/**
 * The overview's numbers for the account and keys `read` holds: every read here goes out at once. Without
 * `chart`, the 30 days' counted requests are left at 0 for the caller to fill from a read it makes anyway
 * (usage in depth over 30 or 90 days holds them): the same per-key day counts are not read twice.
 */
export async function overviewData(deps: AppDeps, read: AccountAndKeys, now: number, chart = true): Promise<OverviewData> {
  const { store, meter, config } = deps;
  const { account, listed } = read;
  const accountId = account.id;
  const plan = (PLANS as readonly string[]).includes(account.plan) ? (account.plan as Plan) : null;
  const days = lastDays(now, CHART_DAYS);
  const perDay = new Map<string, number>();
  const [lastUsed, usages, used, burstUsed, hidden, leaks] = await Promise.all([
    meter.lastUsed(accountId, listed.map((key) => key.id)),
    chart ? Promise.all(listed.map((key) => meter.keyUsage(accountId, key.id, days[0]!, days[days.length - 1]!))) : [],
    meter.used(accountId, periodOf(now)),
    meter.burstUsed(accountId, now),
    hiddenExpiryReminders(store, accountId, now),
    accountLeaks(store, accountId, listed.filter((k) => k.revokedAt !== null).map((k) => k.id), now, config.keyPrefix),
  ]);
  for (const usage of usages.flat()) perDay.set(usage.day, (perDay.get(usage.day) ?? 0) + usage.requests);
  return {
    now,
    plan: account.plan,
    planStatus: account.planStatus,
    limits: plan === null ? null : config.planLimits[plan],
    month: { used, resetAt: new Date(monthBounds(now).reset).toISOString() },
    burstUsed,
    days,
    counted: days.map((d) => perDay.get(d) ?? 0),
    keys: listed.map((k) => keyView({ ...k, lastUsedAt: lastUsed.get(k.id) ?? null }, config.keyPrefix, now)),
    hiddenReminders: [...hidden],
    leaks,
  };
}
