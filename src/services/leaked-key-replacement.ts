/**
 * What an owner sees of a key found public and revoked (leaked-keys.service.ts), and the one-click
 * replacement the screen offers: a new key with the same name, scopes and allowed addresses, living as long
 * as the leaked one was made to (a year at most, as any new key), made through createKey (the same rules,
 * the same security log line) and recorded as the leaked key's replacement in the same transaction, so a
 * second click makes no second key.
 */
import type { Kysely } from 'kysely';
import { InputError } from '../errors/input-error.js';
import { keyHint } from '../keys/api-key.js';
import type { Store } from '../store/database.js';
import { getKey, updateKey, type KeyRecord } from '../store/repositories/api-key.repository.js';
import type { Database } from '../store/schema.js';
import type { Actor } from './actor.js';
import { sameLifetime } from './key-expiry.js';
import { findKey } from './key-lookup.js';
import { leakSubject } from './leaked-keys.service.js';
import { createKey } from './keys.service.js';
import type { CreatedKey, KeepNewKey } from './new-key.js';

/** How long a leak is shown: as long as a revoked key stays listed. */
const LEAK_SHOWN_MS = 90 * 86_400_000;
const YEAR_MS = 365 * 86_400_000;

export interface KeyLeak {
  keyId: number;
  keyName: string;
  hint: string;
  /** When it was revoked for the leak. */
  at: string;
  /** "revoked: found public at <url>; reported by <source>". */
  detail: string;
  /** The key made to replace it, if one was. */
  replacedBy: { id: number; name: string } | null;
}

/**
 * The leaks of `keyIds` (keys of the account), found by their notices' subjects: the unique index, never a
 * scan of every account's notices, on each render of the overview.
 */
async function leaksOf(db: Kysely<Database>, accountId: number, now: number, keyIds: readonly number[]): Promise<KeyLeak[]> {
  if (keyIds.length === 0) return [];
  const rows = await db
    .selectFrom('notices as n')
    .innerJoin('api_keys as k', 'k.id', 'n.key_id')
    .leftJoin('api_keys as r', 'r.id', 'k.replaced_by')
    .select(['k.id as keyId', 'k.name as keyName', 'k.last_four as lastFour', 'n.at', 'n.detail', 'r.id as replacementId', 'r.name as replacementName'])
    .where('n.subject', 'in', keyIds.map(leakSubject))
    .where('n.kind', '=', 'key_leaked')
    .where('k.account_id', '=', accountId)
    .where('n.at', '>=', new Date(now - LEAK_SHOWN_MS).toISOString())
    .orderBy('n.at', 'desc')
    .orderBy('n.id', 'desc')
    .execute();
  return rows.map((r) => ({
    keyId: Number(r.keyId),
    keyName: r.keyName,
    hint: r.lastFour,
    at: r.at,
    detail: r.detail,
    replacedBy: r.replacementId === null ? null : { id: Number(r.replacementId), name: r.replacementName ?? '' },
  }));
}

/**
 * Which of the account's revoked keys `revokedKeyIds` (only a revoked key can have leaked) were revoked for
 * a leak within 90 days, newest first; `keyPrefix` names them by hint.
 */
export async function accountLeaks(store: Store, accountId: number, revokedKeyIds: readonly number[], now: number, keyPrefix: string): Promise<KeyLeak[]> {
  return (await leaksOf(store.db, accountId, now, revokedKeyIds)).map((l) => ({ ...l, hint: keyHint(keyPrefix, l.hint) }));
}

/** The leak of one of the account's keys, or null. */
export async function keyLeak(store: Store, accountId: number, keyId: number, now: number, keyPrefix: string): Promise<KeyLeak | null> {
  const [leak] = await leaksOf(store.db, accountId, now, [keyId]);
  return leak === undefined ? null : { ...leak, hint: keyHint(keyPrefix, leak.hint) };
}

/** The replacement's expiry: the leaked key's lifetime from now, within a year; never if it never expired. */
function replacementExpiry(old: KeyRecord, now: number): string | null {
  const same = sameLifetime(old, now);
  if (same === null) return null;
  return Date.parse(same) - now > YEAR_MS ? '1y' : same;
}

/**
 * Makes the replacement of the account's key revoked for a leak. Refused (InputError, nothing made) when
 * the key was not revoked for a leak, was replaced already, or createKey refuses (a lapsed plan, the live-key
 * limit, its name taken by a live key meanwhile).
 */
export async function replaceLeakedKey(
  store: Store,
  input: { keyId: number; accountId: number; now: number; keyPrefix: string; actor: Actor; keep?: KeepNewKey },
): Promise<CreatedKey> {
  const old = await findKey(store.db, input.keyId, input.accountId);
  const leak = await keyLeak(store, input.accountId, old.id, input.now, input.keyPrefix);
  if (leak === null) throw new InputError(`Key "${old.name}" was not revoked for a leak: make a new key instead.`, 'key');
  if (old.replacedBy !== null) throw new InputError(`Key "${old.name}" was replaced already.`, 'key');
  return createKey(store, {
    accountId: input.accountId,
    name: old.name,
    scopes: old.scopes,
    expiresAt: replacementExpiry(old, input.now),
    allowedAddresses: old.allowedAddresses,
    now: input.now,
    keyPrefix: input.keyPrefix,
    actor: input.actor,
    keep: async (db, created) => {
      // In createKey's transaction, under the account's lock: of two clicks at once, the second makes nothing.
      const current = await getKey(db, old.id);
      if (current?.replacedBy !== null) throw new InputError(`Key "${old.name}" was replaced already.`, 'key');
      await updateKey(db, old.id, { replacedBy: created.id });
      await input.keep?.(db, created);
    },
  });
}
