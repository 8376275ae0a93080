/**
 * Gathers the overview's numbers through the services the command line uses: the account, its keys with
 * status and last use, this month's counted requests (the figure /me reports), the burst window, and the
 * account's counted requests per day (the sum of its keys' daily counts, as `keys usage` shows them), and
 * the keys whose expiry reminder the owner hid until tomorrow.
 */
import { hiddenExpiryReminders } from '../../services/expiry-reminders.js';
import { accountKeys, ownedKey } from '../../services/keys.service.js';
import { PLANS, type Plan } from '../../domain/scopes.js';
import { keyHint } from '../../keys/api-key.js';
import { isListedKey, keyStatus } from '../../keys/key-status.js';
import { dayOf, monthBounds, periodOf } from '../../metering/periods.js';
import { getAccount } from '../../store/repositories/account.repository.js';
import { listKeys, type KeyRecord } from '../../store/repositories/api-key.repository.js';
import type { AppDeps } from '../app-types.js';
import { PageError } from './page-errors.js';
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

/**
 * The account's key ids: those the overview lists (as overviewData's keys: working, or ended within the
 * last 90 days) and the others, which the account's day totals still count (UsageStats.accountDays takes
 * them away). Without the overview's other reads: the account's CSV needs nothing else.
 */
export async function accountKeyIds(deps: AppDeps, accountId: number, now: number): Promise<{ shown: number[]; hidden: number[] }> {
  const [account, keys] = await Promise.all([getAccount(deps.store.db, accountId), listKeys(deps.store.db, accountId)]);
  // As overviewData: an account gone since the session began signs the owner out.
  if (account === undefined) throw new PageError('signed_out');
  const shown: number[] = [];
  const hidden: number[] = [];
  for (const key of keys) (isListedKey(key, now) ? shown : hidden).push(key.id);
  return { shown, hidden };
}

export async function overviewData(deps: AppDeps, accountId: number, now: number): Promise<OverviewData> {
  const { store, meter, config } = deps;
  const account = await getAccount(store.db, accountId);
  if (account === undefined) throw new PageError('signed_out');
  const plan = (PLANS as readonly string[]).includes(account.plan) ? (account.plan as Plan) : null;
  const keys = await accountKeys(store, meter, accountId, now);
  const days = lastDays(now, CHART_DAYS);
  const perDay = new Map<string, number>();
  // Every key that could have counted requests in the window, listed or not (a key revoked long ago counted none).
  const [usages, used, burstUsed, hidden] = await Promise.all([
    Promise.all(keys.map((key) => meter.keyUsage(accountId, key.id, days[0]!, days[days.length - 1]!))),
    meter.used(accountId, periodOf(now)),
    meter.burstUsed(accountId, now),
    hiddenExpiryReminders(store, accountId, now),
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
    keys: keys.map((k) => keyView(k, config.keyPrefix, now)),
    hiddenReminders: [...hidden],
  };
}
