/**
 * Actions on API keys, for the settings screen (the owner) and the command line (an operator) alike: one
 * place for each rule of a change (the live-key limit, free names, what a roll and a revoke do), and every
 * change written to the account's security log in the same transaction. The rules for the fields asked are
 * in key-fields.ts and key-expiry.ts; a key is generated in new-key.ts, and read in key-lookup.ts.
 *
 * Owner calls pass `accountId`: a key of another account is then a NotFoundError, exactly as a missing one.
 */
import { sql, type Kysely } from 'kysely';
import { keyHint } from '../keys/api-key.js';
import { isLiveKey, keyStatus } from '../keys/key-status.js';
import type { Store } from '../store/database.js';
import { listKeys, revokeKey as markRevoked, updateKey, type KeyRecord } from '../store/repositories/api-key.repository.js';
import type { Database } from '../store/schema.js';
import { withWriteTransaction } from '../store/write-transaction.js';
import { accountById } from './accounts.service.js';
import { withAccessChange } from '../metering/access-change.js';
import type { Actor } from './actor.js';
import { InputError, NotFoundError, throwInputErrors } from '../errors/input-error.js';
import { DEFAULT_KEY_NAME, parseAllowedAddresses, requireScopes, validateKeyName } from './key-fields.js';
import { expiresAtFor, isStopOld, sameLifetime, STOP_OLD_CHOICES, STOP_OLD_MS, type ExpiryAsk } from './key-expiry.js';
import { findKey } from './key-lookup.js';
import { makeKey, type CreatedKey, type KeepNewKey } from './new-key.js';
import { recordSecurityEvent, type NewSecurityEvent } from './security-log.js';
import { utcMinute } from './time-text.js';

/** Keys that work and are not being rolled away; a rolled key on its way out does not count. */
export const MAX_LIVE_KEYS = 20;

/** Advisory locks are one namespace per database: key management keeps to its own class (the meter has another). */
const KEYS_LOCK_CLASS = 0x6b65;

/**
 * One account's key changes, one at a time across every server, so that the name and limit checks hold
 * when two changes race. SQLite: BEGIN IMMEDIATE (withWriteTransaction). The work only awaits queries on
 * the store, so on SQLite nothing else runs on the shared connection meanwhile. PostgreSQL: a transaction
 * holding an advisory lock on the account.
 */
async function accountTransaction<T>(store: Store, accountId: number, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  if (store.dialect === 'sqlite') return withWriteTransaction(store, work);
  return store.db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${KEYS_LOCK_CLASS}::int, ${accountId % 2_147_483_647}::int)`.execute(trx);
    return work(trx);
  });
}

async function activeAccount(db: Kysely<Database>, accountId: number, doing: string): Promise<void> {
  const account = await accountById(db, accountId);
  if (account.plan === 'none' || account.planStatus !== 'active') {
    throw new InputError(`Developer API access is not active on account ${accountId}: keys can be viewed and revoked, not ${doing}, until it is renewed.`);
  }
}

/** Live keys of the account (working and not being rolled away), other than `except`. */
async function liveKeys(db: Kysely<Database>, accountId: number, now: number, except?: number): Promise<KeyRecord[]> {
  return (await listKeys(db, accountId)).filter((k) => k.id !== except && isLiveKey(k, now));
}

function nameTaken(live: readonly KeyRecord[], name: string): boolean {
  return live.some((k) => k.name === name);
}

function requireFreeName(live: readonly KeyRecord[], name: string): void {
  if (nameTaken(live, name)) throw new InputError(`A live key is already named "${name}"; choose another name.`, 'name');
}

const describeScopes = (scopes: readonly string[]) => (scopes.length === 0 ? '(none)' : scopes.join(', '));
const describeAddresses = (list: readonly string[]) => (list.length === 0 ? 'any address' : list.join(', '));
const eventKey = (record: KeyRecord, keyPrefix: string) => ({ id: record.id, name: record.name, hint: keyHint(keyPrefix, record.lastFour) });

/** `check()`, or undefined with its refusal added to `problems`: so that every bad field is reported at once. */
function collect<T>(problems: InputError[], check: () => T): T | undefined {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    problems.push(error);
    return undefined;
  }
}

export async function createKey(
  store: Store,
  input: {
    accountId: number;
    /** null: the command line's default name, the first free one of "default", "default 2", ... */
    name: string | null;
    scopes: readonly string[];
    /** As expiresAtFor reads it (undefined: 90 days); null: never. */
    expiresAt: ExpiryAsk | null;
    /** As parseAllowedAddresses reads it; undefined or empty: any address. */
    allowedAddresses?: string | readonly string[];
    now: number;
    keyPrefix: string;
    actor: Actor;
    keep?: KeepNewKey;
  },
): Promise<CreatedKey> {
  // Every field is checked, and all their refusals come back together (the name's place among the live
  // keys too, below), so an owner mends the form in one go.
  const problems: InputError[] = [];
  const asked = input.name === null ? null : collect(problems, () => validateKeyName(input.name ?? ''));
  const scopes = collect(problems, () => requireScopes(input.scopes));
  const expiresAt = input.expiresAt === null ? null : collect(problems, () => expiresAtFor(input.expiresAt ?? undefined, input.now));
  const allowedAddresses = collect(problems, () => parseAllowedAddresses(input.allowedAddresses ?? []));
  return accountTransaction(store, input.accountId, async (db) => {
    await activeAccount(db, input.accountId, 'created');
    const live = await liveKeys(db, input.accountId, input.now);
    if (live.length >= MAX_LIVE_KEYS) {
      throw new InputError(`An account has at most ${MAX_LIVE_KEYS} live keys: revoke one you no longer use first.`);
    }
    if (asked !== undefined && asked !== null) collect(problems, () => requireFreeName(live, asked));
    throwInputErrors(problems);
    if (scopes === undefined || expiresAt === undefined || asked === undefined || allowedAddresses === undefined) {
      throw new Error('createKey: a refused field was not reported');
    }
    let name = asked;
    if (name === null) {
      name = DEFAULT_KEY_NAME;
      for (let n = 2; nameTaken(live, name); n++) name = `${DEFAULT_KEY_NAME} ${n}`;
    }
    const created = await makeKey(db, { accountId: input.accountId, name, scopes, expiresAt, now: input.now, keyPrefix: input.keyPrefix, allowedAddresses });
    await recordSecurityEvent(db, {
      accountId: input.accountId,
      kind: 'key_created',
      actor: input.actor,
      at: input.now,
      key: eventKey(created.record, input.keyPrefix),
      detail: `scopes ${describeScopes(scopes)}; expires ${expiresAt === null ? 'never' : utcMinute(expiresAt)}${
        allowedAddresses.length === 0 ? '' : `; allowed addresses ${describeAddresses(allowedAddresses)}`
      }`,
    });
    await input.keep?.(db, created);
    return created;
  });
}

/** The key of `keyId` for a change: it must still work (revoked and expired keys can only be looked at). */
function requireWorking(key: KeyRecord, now: number): void {
  const { status } = keyStatus(key, now);
  if (status === 'revoked') throw new InputError(`Key "${key.name}" is revoked; it cannot be changed.`, 'key');
  if (status === 'expired') throw new InputError(`Key "${key.name}" has expired; it cannot be changed.`, 'key');
}

/**
 * Runs a change of one key in its account's transaction, with the key as the caller may see it. The account
 * is found first, without the lock: a key never moves to another account. On PostgreSQL + Redis the change
 * is fenced in Redis (a refused fence changes nothing).
 */
async function changeKey<T>(
  store: Store,
  input: { keyId: number; accountId?: number },
  work: (db: Kysely<Database>, key: KeyRecord, accountId: number) => Promise<T>,
): Promise<T> {
  const { accountId } = await findKey(store.db, input.keyId, input.accountId);
  // Every server learns of the change before this returns (metering/access-change.ts).
  return withAccessChange(store, accountId, () =>
    accountTransaction(store, accountId, async (db) => work(db, await findKey(db, input.keyId, input.accountId), accountId)),
  );
}

export async function rollKey(
  store: Store,
  input: {
    keyId: number;
    accountId?: number;
    stopOld: string;
    /**
     * The new key's expiry, as createKey takes it (null: never). Not given: the old key's lifetime (created
     * to expires), counted from now, or never if it never expired.
     */
    expiresAt?: ExpiryAsk | null;
    now: number;
    keyPrefix: string;
    actor: Actor;
    keep?: KeepNewKey;
  },
): Promise<{ old: KeyRecord; created: CreatedKey }> {
  // Both choices are checked before anything else, and refused together.
  const problems: InputError[] = [];
  const stopOld = collect(problems, () => {
    if (!isStopOld(input.stopOld)) throw new InputError(`The old key stops ${STOP_OLD_CHOICES.join(', ')}: choose one.`, 'stopOld');
    return input.stopOld;
  });
  const ask = input.expiresAt;
  const keepLifetime = ask === undefined;
  const asked = ask === undefined || ask === null ? null : collect(problems, () => expiresAtFor(ask, input.now));
  throwInputErrors(problems);
  if (stopOld === undefined || asked === undefined) throw new Error('rollKey: a refused choice was not reported');
  const stopMs = STOP_OLD_MS[stopOld];
  return changeKey(store, input, async (db, old, accountId) => {
    requireWorking(old, input.now);
    if (keyStatus(old, input.now).status === 'retiring') {
      throw new InputError(`Key "${old.name}" was rolled already; roll its replacement instead.`, 'key');
    }
    await activeAccount(db, accountId, 'rolled');
    // Unless asked otherwise, the same expiry rule: the new key lives as long as the old one was made to
    // (created -> expires), or forever.
    const expiresAt = keepLifetime ? sameLifetime(old, input.now) : asked;
    // The allowed addresses go with the name and scopes: a roll must not open a limited key to any address.
    const created = await makeKey(db, {
      accountId,
      name: old.name,
      scopes: old.scopes,
      expiresAt,
      now: input.now,
      keyPrefix: input.keyPrefix,
      allowedAddresses: old.allowedAddresses,
    });
    const stopAt = new Date(input.now + stopMs).toISOString();
    if (stopMs === 0) await markRevoked(db, old.id, stopAt);
    await updateKey(db, old.id, { replacedBy: created.id, ...(stopMs === 0 ? {} : { retiresAt: stopAt }) });
    const updated = await findKey(db, old.id, undefined);
    await recordSecurityEvent(db, {
      accountId,
      kind: 'key_rolled',
      actor: input.actor,
      at: input.now,
      key: eventKey(old, input.keyPrefix),
      detail: `replaced by ${keyHint(input.keyPrefix, created.record.lastFour)} (key ${created.id}), which expires ${expiresAt === null ? 'never' : utcMinute(expiresAt)}; the old key stops ${stopMs === 0 ? 'now' : `at ${utcMinute(stopAt)}`}`,
    });
    await input.keep?.(db, created);
    return { old: updated, created };
  });
}

/** Writes a change of a key with its line in the security log, and returns the key as it now is. */
async function updateLogged(
  db: Kysely<Database>,
  key: KeyRecord,
  changes: Parameters<typeof updateKey>[2],
  event: NewSecurityEvent,
): Promise<KeyRecord> {
  await updateKey(db, key.id, changes);
  await recordSecurityEvent(db, event);
  return findKey(db, key.id, undefined);
}

export async function renameKey(
  store: Store,
  input: { keyId: number; accountId?: number; name: string; now: number; keyPrefix: string; actor: Actor },
): Promise<KeyRecord> {
  const name = validateKeyName(input.name);
  return changeKey(store, input, async (db, key, accountId) => {
    requireWorking(key, input.now);
    if (key.name === name) return key;
    if (isLiveKey(key, input.now)) requireFreeName(await liveKeys(db, accountId, input.now, key.id), name);
    return updateLogged(db, key, { name }, {
      accountId,
      kind: 'key_renamed',
      actor: input.actor,
      at: input.now,
      key: { id: key.id, name, hint: keyHint(input.keyPrefix, key.lastFour) },
      detail: `renamed from "${key.name}" to "${name}"`,
    });
  });
}

export async function setKeyScopes(
  store: Store,
  input: { keyId: number; accountId?: number; scopes: readonly string[]; now: number; keyPrefix: string; actor: Actor },
): Promise<KeyRecord> {
  const scopes = requireScopes(input.scopes);
  return changeKey(store, input, async (db, key, accountId) => {
    requireWorking(key, input.now);
    if (key.scopes.join(' ') === scopes.join(' ')) return key;
    return updateLogged(db, key, { scopes }, {
      accountId,
      kind: 'key_scopes_changed',
      actor: input.actor,
      at: input.now,
      key: eventKey(key, input.keyPrefix),
      detail: `scopes from ${describeScopes(key.scopes)} to ${describeScopes(scopes)}`,
    });
  });
}

/**
 * Replaces the addresses a key may be used from (empty: any address). From anywhere else the key answers
 * 401, from its next request on every server (the key lookup reads the list; migration 0011 bumps the
 * account's access version). Bad input changes nothing.
 */
export async function setAllowedAddresses(
  store: Store,
  input: { keyId: number; accountId?: number; addresses: string | readonly string[]; now: number; keyPrefix: string; actor: Actor },
): Promise<KeyRecord> {
  const addresses = parseAllowedAddresses(input.addresses);
  return changeKey(store, input, async (db, key, accountId) => {
    requireWorking(key, input.now);
    if (key.allowedAddresses.join(' ') === addresses.join(' ')) return key;
    return updateLogged(db, key, { allowedAddresses: addresses }, {
      accountId,
      kind: 'key_addresses_changed',
      actor: input.actor,
      at: input.now,
      key: eventKey(key, input.keyPrefix),
      detail: `allowed addresses from ${describeAddresses(key.allowedAddresses)} to ${describeAddresses(addresses)}`,
    });
  });
}

/**
 * Revokes a key: it answers 401 from its next request, on every server. A revoked key is refused again.
 * `detail` says why in the security log (a leak: where it was found); `also` writes in the same transaction
 * what must commit with the revoke (a leak's notice), so that neither is ever left without the other.
 */
export async function revokeKey(
  store: Store,
  input: {
    keyId: number;
    accountId?: number;
    now: number;
    keyPrefix: string;
    actor: Actor;
    detail?: string;
    also?: (db: Kysely<Database>, key: KeyRecord, accountId: number) => Promise<void>;
  },
): Promise<KeyRecord> {
  return changeKey(store, input, async (db, key, accountId) => {
    const status = keyStatus(key, input.now);
    if (status.status === 'revoked') {
      throw new InputError(`Key "${key.name}" was already revoked at ${status.at}; nothing changed.`, 'key');
    }
    const revoked = await markRevoked(db, key.id, new Date(input.now).toISOString());
    if (!revoked) throw new NotFoundError(`key ${input.keyId} does not exist`);
    await recordSecurityEvent(db, {
      accountId,
      kind: 'key_revoked',
      actor: input.actor,
      at: input.now,
      key: eventKey(key, input.keyPrefix),
      detail: input.detail ?? null,
    });
    await input.also?.(db, key, accountId);
    return revoked;
  });
}
