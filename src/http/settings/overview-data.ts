/**
 * Gathers the overview's numbers with the rules the command line uses (isListedKey, the meter's counts):
 * the account, its keys with status and last use, this month's counted requests (the figure /me reports),
 * the burst window, and the keys whose expiry reminder the owner hid until tomorrow (the account's requests
 * per day or hour are usage-depth-data.ts's).
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

/** The overview's numbers for the account and keys `read` holds: every read here goes out at once. */
export async function overviewData(deps: AppDeps, read: AccountAndKeys, now: number): Promise<OverviewData> {
  const { store, meter, config } = deps;
  const { account, listed } = read;
  const accountId = account.id;
  const plan = (PLANS as readonly string[]).includes(account.plan) ? (account.plan as Plan) : null;
  const [lastUsed, used, burstUsed, hidden, leaks] = await Promise.all([
    meter.lastUsed(accountId, listed.map((key) => key.id)),
    meter.used(accountId, periodOf(now)),
    meter.burstUsed(accountId, now),
    hiddenExpiryReminders(store, accountId, now),
    accountLeaks(store, accountId, listed.filter((k) => k.revokedAt !== null).map((k) => k.id), now, config.keyPrefix),
  ]);
  return {
    now,
    plan: account.plan,
    planStatus: account.planStatus,
    limits: plan === null ? null : config.planLimits[plan],
    month: { used, resetAt: new Date(monthBounds(now).reset).toISOString() },
    burstUsed,
    keys: listed.map((k) => keyView({ ...k, lastUsedAt: lastUsed.get(k.id) ?? null }, config.keyPrefix, now)),
    hiddenReminders: [...hidden],
    leaks,
  };
}
