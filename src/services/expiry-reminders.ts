/**
 * The overview's expiry banner names every live key that expires within 7 days; the owner may hide it for
 * one key until the next UTC day (00:00 UTC), when it shows again if the key still expires soon.
 *
 * Kept in the store per account and key, not in a cookie: it follows the owner to every browser and every
 * server (as sessions do), needs no signing secret of its own, and the key is checked to be the owner's
 * when it is hidden. At most one row per key; lapsed rows go when the account hides another.
 */
import type { Store } from '../store/database.js';
import { hiddenReminderKeyIds, hideReminder } from '../store/repositories/expiry-reminder.repository.js';
import { ownedKey } from './key-lookup.js';

const DAY_MS = 86_400_000;

/** The start of the UTC day after `now`: when a reminder hidden at `now` shows again. */
export function nextUtcDay(now: number): string {
  return new Date((Math.floor(now / DAY_MS) + 1) * DAY_MS).toISOString();
}

/** Hides the reminder of the owner's key `keyId` until the next UTC day. Another account's key: NotFoundError. */
export async function hideExpiryReminder(store: Store, input: { accountId: number; keyId: number; now: number }): Promise<{ until: string }> {
  await ownedKey(store, input.accountId, input.keyId);
  const until = nextUtcDay(input.now);
  await hideReminder(store.db, { accountId: input.accountId, keyId: input.keyId, until, now: new Date(input.now).toISOString() });
  return { until };
}

/** The account's keys whose reminder is hidden at `now`. */
export async function hiddenExpiryReminders(store: Store, accountId: number, now: number): Promise<Set<number>> {
  return new Set(await hiddenReminderKeyIds(store.db, accountId, new Date(now).toISOString()));
}
