/**
 * The one place a key is generated and its hash stored (the key itself is shown once, when made), and the
 * way a dataset file's keys are made (`load`, `seed`).
 */
import type { Kysely } from 'kysely';
import { generateKey, hashKey, lastFour } from '../keys/api-key.js';
import { getKey, insertKey, type KeyRecord } from '../store/repositories/api-key.repository.js';
import type { Database } from '../store/schema.js';
import { validateKeyName } from './key-fields.js';

export interface CreatedKey {
  id: number;
  /** The full key: shown once, never stored. */
  key: string;
  record: KeyRecord;
}

/**
 * What must hold with a new key, run on the transaction that makes it (the settings screen puts the key in
 * the session's one-time slot): when it throws, no key is made, so no key exists that nobody is shown.
 */
export type KeepNewKey = (db: Kysely<Database>, created: CreatedKey) => Promise<void>;

/**
 * Makes the key row, with no checks and no log line: createKey, rollKey and loadKey decide and record. The
 * one place a key is generated and its hash stored.
 */
export async function makeKey(
  db: Kysely<Database>,
  input: {
    accountId: number;
    name: string;
    scopes: readonly string[];
    expiresAt: string | null;
    now: number;
    keyPrefix: string;
    revoked?: boolean;
    allowedAddresses?: readonly string[];
  },
): Promise<CreatedKey> {
  const key = generateKey(input.keyPrefix);
  const createdAt = new Date(input.now).toISOString();
  const id = await insertKey(db, {
    accountId: input.accountId,
    name: input.name,
    keyHash: hashKey(key),
    lastFour: lastFour(key),
    scopes: input.scopes,
    createdAt,
    expiresAt: input.expiresAt,
    revokedAt: input.revoked === true ? createdAt : null,
    allowedAddresses: input.allowedAddresses ?? [],
  });
  const record = await getKey(db, id);
  if (!record) throw new Error(`key ${id} vanished after insert`);
  return { id, key, record };
}

/**
 * A key as a dataset file describes it (`load`, `seed`), written on the caller's transaction `db`. The name
 * rule holds; the rules for a key made today do not (an active plan, the live-key limit, at least one scope,
 * an expiry in the future), as a file may describe an account's past, and it goes to no security log.
 * Scopes are stored once each, in the file's order.
 */
export async function loadKey(
  db: Kysely<Database>,
  input: { accountId: number; name: string; scopes: readonly string[]; expiresAt: string | null; revoked: boolean; now: number; keyPrefix: string },
): Promise<CreatedKey> {
  return makeKey(db, { ...input, name: validateKeyName(input.name), scopes: [...new Set(input.scopes)] });
}
