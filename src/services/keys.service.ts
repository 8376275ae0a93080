/**
 * Actions on API keys, for the settings screen (the owner) and the command line (an operator) alike: one
 * place for each rule (name, scopes, expiry, limits, what a roll and a revoke do), and every change written
 * to the account's security log in the same transaction. A key is shown once, when made; only its hash is
 * stored.
 *
 * Owner calls pass `accountId`: a key of another account is then a NotFoundError, exactly as a missing one.
 */
import { sql, type Kysely } from 'kysely';
import { AddressMatcher, MAX_ALLOWED_ADDRESSES, parseAddressList } from '../domain/address-list.js';
import { isScope, SCOPES, type Scope } from '../domain/scopes.js';
import { generateKey, hashKey, keyHint, lastFour } from '../keys/api-key.js';
import { isListedKey, isLiveKey, keyStatus } from '../keys/key-status.js';
import type { Meter, KeyDailyUsage } from '../metering/meter.js';
import { dayOf } from '../metering/periods.js';
import type { Store } from '../store/database.js';
import { getKey, insertKey, listKeys, revokeKey as markRevoked, updateKey, type KeyRecord } from '../store/repositories/api-key.repository.js';
import { canonicalTimestamp } from '../domain/timestamps.js';
import type { Database } from '../store/schema.js';
import { withWriteTransaction } from '../store/write-transaction.js';
import { accountById } from './accounts.service.js';
import { withAccessChange } from '../metering/access-change.js';
import type { Actor } from './actor.js';
import { InputError, NotFoundError, throwInputErrors } from '../errors/input-error.js';
import { recordSecurityEvent, type NewSecurityEvent } from './security-log.js';
import { utcMinute } from './time-text.js';

export const KEY_NAME_MAX = 64;
/** Keys that work and are not being rolled away; a rolled key on its way out does not count. */
export const MAX_LIVE_KEYS = 20;
/** The name the command line gives a key when none is asked for (then "default 2", "default 3", ...). */
export const DEFAULT_KEY_NAME = 'default';

const CONTROL = /[\p{Cc}\p{Cs}]/u;

/**
 * A key's name as stored: trimmed, 1 to 64 characters, no control characters (names are shown in terminal
 * tables and on the settings screen). The one rule for every way a key is named (CLI, `load`, settings).
 */
export function validateKeyName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === '') throw new InputError('Give the key a name.', 'name');
  const length = [...trimmed].length;
  if (length > KEY_NAME_MAX) throw new InputError(`A key name has at most ${KEY_NAME_MAX} characters (got ${length}).`, 'name');
  if (CONTROL.test(trimmed)) throw new InputError('A key name must not contain control characters.', 'name');
  return trimmed;
}

/** Scopes from a comma-separated list (the command line) or a list of values (the screen's checkboxes). */
export function parseScopes(input: string | readonly string[]): Scope[] {
  const list = typeof input === 'string' ? input.split(',') : input;
  const scopes = list.map((s) => s.trim()).filter((s) => s !== '');
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) throw new InputError(`unknown scope ${unknown.join(', ')} (scopes: ${SCOPES.join(', ')})`, 'scopes');
  // In the contract's order, whatever order they were given in.
  return SCOPES.filter((s) => scopes.includes(s));
}

/** At least one scope: a key with none could only call /me. */
function requireScopes(scopes: readonly string[]): Scope[] {
  const parsed = parseScopes(scopes);
  if (parsed.length === 0) throw new InputError('Choose at least one scope.', 'scopes');
  return parsed;
}

/**
 * A key's allowed addresses from the form's text or the command line's list: IPv4 or IPv6 addresses and
 * CIDR ranges, separated by commas, spaces or lines, in canonical form (a range by its network address,
 * ::ffff:127.0.0.1 as 127.0.0.1), each once, at most MAX_ALLOWED_ADDRESSES. Empty: any address.
 */
export function parseAllowedAddresses(input: string | readonly string[]): string[] {
  const { ranges, invalid } = parseAddressList(input);
  if (invalid.length > 0) {
    const shown = invalid.slice(0, 5).map((e) => JSON.stringify(e.length > 60 ? `${e.slice(0, 60)}…` : e));
    throw new InputError(
      `${shown.join(', ')}${invalid.length > 5 ? ` and ${invalid.length - 5} more` : ''} ${invalid.length === 1 ? 'is not an IP address or a CIDR range' : 'are not IP addresses or CIDR ranges'} (such as 203.0.113.7, 2001:db8::1 or 10.0.0.0/8).`,
      'addresses',
    );
  }
  if (ranges.length > MAX_ALLOWED_ADDRESSES) {
    throw new InputError(`A key allows at most ${MAX_ALLOWED_ADDRESSES} addresses or ranges (got ${ranges.length}); use CIDR ranges to cover more.`, 'addresses');
  }
  return ranges.map((r) => r.text);
}

/**
 * Whether a list (as parseAllowedAddresses gives it) leaves `address` out: the owner, at that address now,
 * would be refused there. The screen asks before saving such a list.
 */
export function locksOut(addresses: readonly string[], address: string): boolean {
  return addresses.length > 0 && !new AddressMatcher(parseAddressList(addresses).ranges).matches(address);
}

/** What the screen says before saving a list that leaves the owner's own address out. */
export function lockOutWarning(address: string): string {
  return `Your current address, ${address}, is not in this list: requests with this key from here (this network) will be refused with 401. Save anyway if the key is used only from the addresses listed, or add ${address}.`;
}

const describeAddresses = (list: readonly string[]) => (list.length === 0 ? 'any address' : list.join(', '));

/** The lifetimes the create form offers, and "never". Anything else is a date or a date-time (expiresAtFor). */
export const EXPIRY_CHOICES = ['7d', '30d', '90d', '1y', 'never'] as const;
export type ExpiryChoice = (typeof EXPIRY_CHOICES)[number];
/** A new key's lifetime when none is asked for, on the screen and the command line alike. */
export const DEFAULT_EXPIRY: ExpiryChoice = '90d';
const EXPIRY_DAYS: Record<Exclude<ExpiryChoice, 'never'>, number> = { '7d': 7, '30d': 30, '90d': 90, '1y': 365 };
/** Said wherever a key that never expires is offered or made (the create form, `keys create`). */
export const NEVER_EXPIRES_WARNING = '"Never" is convenient but risky: a key that leaks keeps working until someone revokes it.';

export function isExpiryChoice(value: string): value is ExpiryChoice {
  return (EXPIRY_CHOICES as readonly string[]).includes(value);
}

/**
 * What an expiry may be asked as: a string as `--expires-at` takes it (undefined: DEFAULT_EXPIRY), or
 * `{ date }`, the settings screen's date field, which holds a plain date only.
 */
export type ExpiryAsk = string | undefined | { date: string };

const PLAIN_DATE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/;
const DAY_MS = 86_400_000;

/** The last millisecond of a calendar date `YYYY-MM-DD`, in UTC; null for a date that does not exist (2027-02-30). */
function endOfDayUtc(date: string): string | null {
  const match = PLAIN_DATE.exec(date);
  if (match === null) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const start = new Date(Date.UTC(year, month - 1, day));
  if (start.getUTCFullYear() !== year || start.getUTCMonth() !== month - 1 || start.getUTCDate() !== day) return null;
  return new Date(start.getTime() + DAY_MS - 1).toISOString();
}

/**
 * The dates an expiry may fall on, as `YYYY-MM-DD` (UTC): from today to the same date a year on (29 February
 * goes to 28 February). A date means the end of that day, so the latest expiry is the end of `last`; "1y"
 * (365 days from now) always falls within it.
 */
export function expiryDateRange(now: number): { first: string; last: string } {
  const today = new Date(now);
  const year = today.getUTCFullYear() + 1;
  const month = today.getUTCMonth();
  // Date.UTC rolls 29 February of a year without one over to 1 March: step back to the month's last day.
  const sameDay = new Date(Date.UTC(year, month, today.getUTCDate()));
  const last = sameDay.getUTCMonth() === month ? sameDay : new Date(Date.UTC(year, month + 1, 0));
  return { first: today.toISOString().slice(0, 10), last: last.toISOString().slice(0, 10) };
}

/** An expiry `at` must lie in the future and at most a year away (the end of expiryDateRange's last day). */
function requireExpiryWindow(at: string, now: number): string {
  if (Date.parse(at) <= now) throw new InputError('The expiry must be in the future.', 'expiry');
  const { last } = expiryDateRange(now);
  if (Date.parse(at) > Date.parse(endOfDayUtc(last) ?? '')) {
    throw new InputError(`The expiry must be at most a year away: ${last} at the latest (or a key that never expires).`, 'expiry');
  }
  return at;
}

/**
 * The one expiry rule of a new key, for the create and roll forms and `keys create`: nothing (undefined or
 * '') is DEFAULT_EXPIRY (90 days); 7d, 30d, 90d, 1y count from `now`; "never" is null; a plain date
 * (2027-01-31) is the end of that day, UTC (23:59:59.999Z); an ISO 8601 date-time is taken as given. A date
 * or date-time must be in the future and at most a year away (expiryDateRange). `{ date }` (the screen's
 * date field) must be a plain date.
 */
export function expiresAtFor(input: ExpiryAsk, now: number): string | null {
  if (typeof input === 'object') {
    const date = input.date.trim();
    if (date === '') throw new InputError('Choose the date the key expires on.', 'expiry');
    const at = endOfDayUtc(date);
    if (at === null) {
      const shown = JSON.stringify(date.length > 40 ? `${date.slice(0, 40)}…` : date);
      throw new InputError(`Give the date as year-month-day, such as 2027-01-31 (a date that exists); got ${shown}.`, 'expiry');
    }
    return requireExpiryWindow(at, now);
  }
  const asked = input === undefined || input.trim() === '' ? DEFAULT_EXPIRY : input.trim();
  if (asked === 'never') return null;
  const days = Object.hasOwn(EXPIRY_DAYS, asked) ? EXPIRY_DAYS[asked as keyof typeof EXPIRY_DAYS] : undefined;
  const at = days !== undefined
    ? new Date(now + days * DAY_MS).toISOString()
    : PLAIN_DATE.test(asked)
      ? endOfDayUtc(asked)
      : canonicalTimestamp(asked);
  if (at === null) {
    throw new InputError(
      `Expiry must be one of ${EXPIRY_CHOICES.join(', ')}, a date (2027-01-31: the end of that day, UTC) or an ISO 8601 date-time such as 2027-01-01T00:00:00Z, at most a year away; got ${JSON.stringify(asked)}.`,
      'expiry',
    );
  }
  return requireExpiryWindow(at, now);
}

export const STOP_OLD_CHOICES = ['now', '1h', '24h', '7d'] as const;
export type StopOld = (typeof STOP_OLD_CHOICES)[number];
const STOP_OLD_MS: Record<StopOld, number> = { now: 0, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };

export function isStopOld(value: string): value is StopOld {
  return (STOP_OLD_CHOICES as readonly string[]).includes(value);
}

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

/** The key as `accountId` may see it: another account's key reads as missing. No accountId: any key (operator). */
async function findKey(db: Kysely<Database>, keyId: number, accountId: number | undefined): Promise<KeyRecord> {
  const key = await getKey(db, keyId);
  if (!key || (accountId !== undefined && key.accountId !== accountId)) throw new NotFoundError(`key ${keyId} does not exist`);
  return key;
}

export async function ownedKey(store: Store, accountId: number, keyId: number): Promise<KeyRecord> {
  return findKey(store.db, keyId, accountId);
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
async function makeKey(
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

/** The expiry of a key rolled from `old` at `now` that lives as long as `old` was made to; null: never. */
export function sameLifetime(old: Pick<KeyRecord, 'createdAt' | 'expiresAt'>, now: number): string | null {
  return old.expiresAt === null ? null : new Date(now + (Date.parse(old.expiresAt) - Date.parse(old.createdAt))).toISOString();
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

/** Revokes a key: it answers 401 from its next request, on every server. A revoked key is refused again. */
export async function revokeKey(
  store: Store,
  input: { keyId: number; accountId?: number; now: number; keyPrefix: string; actor: Actor },
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
      detail: null,
    });
    return revoked;
  });
}

/**
 * The account's keys with their last use as the meter knows it (in Redis, or in the database). With `now`,
 * only the keys the owner is shown: every working key, and expired or revoked ones for 90 days.
 */
export async function accountKeys(store: Store, meter: Meter, accountId: number, now?: number): Promise<KeyRecord[]> {
  await accountById(store.db, accountId);
  const all = await listKeys(store.db, accountId);
  const keys = now === undefined ? all : all.filter((k) => isListedKey(k, now));
  const lastUsed = await meter.lastUsed(accountId, keys.map((k) => k.id));
  return keys.map((k) => ({ ...k, lastUsedAt: lastUsed.get(k.id) ?? null }));
}

export interface KeyUsageReport {
  key: KeyRecord;
  days: KeyDailyUsage[];
  total: number;
}

/** Requests per UTC day over the last `days` days (today included), every day listed, newest first. */
export async function keyUsage(store: Store, meter: Meter, keyId: number, now: number, days: number): Promise<KeyUsageReport> {
  const stored = await findKey(store.db, keyId, undefined);
  const key = { ...stored, lastUsedAt: (await meter.lastUsed(stored.accountId, [keyId])).get(keyId) ?? null };
  const since = dayOf(now - (days - 1) * 86_400_000);
  const counted = new Map((await meter.keyUsage(stored.accountId, keyId, since, dayOf(now))).map((d) => [d.day, d.requests]));
  const out: KeyDailyUsage[] = [];
  for (let i = 0; i < days; i++) {
    const day = dayOf(now - i * 86_400_000);
    out.push({ day, requests: counted.get(day) ?? 0 });
  }
  return { key, days: out, total: out.reduce((sum, d) => sum + d.requests, 0) };
}
