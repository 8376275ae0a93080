/**
 * Expiry banners an owner hid on the overview, per account and key, until a time (migration 0013). Times
 * are ISO 8601 UTC text like every other table, so they compare as text.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

/** The keys of the account whose reminder is hidden at `now`. */
export async function hiddenReminderKeyIds(db: Kysely<Database>, accountId: number, now: string): Promise<number[]> {
  const rows = await db
    .selectFrom('expiry_reminder_dismissals')
    .select('key_id')
    .where('account_id', '=', accountId)
    .where('until', '>', now)
    .execute();
  return rows.map((r) => Number(r.key_id));
}

/** Hides the key's reminder until `until` (again: the later time), after pruning the account's lapsed rows. */
export async function hideReminder(db: Kysely<Database>, row: { accountId: number; keyId: number; until: string; now: string }): Promise<void> {
  await db.deleteFrom('expiry_reminder_dismissals').where('account_id', '=', row.accountId).where('until', '<=', row.now).execute();
  await db
    .insertInto('expiry_reminder_dismissals')
    .values({ account_id: row.accountId, key_id: row.keyId, until: row.until })
    .onConflict((oc) => oc.columns(['account_id', 'key_id']).doUpdateSet({ until: row.until }))
    .execute();
}
