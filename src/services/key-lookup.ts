/**
 * Reading keys: one key as its owner (or an operator) may see it, an account's keys with their last use, and
 * a key's requests per day, as the meter counts them (in Redis, or in the database).
 */
import type { Kysely } from 'kysely';
import type { Meter, KeyDailyUsage } from '../metering/meter.js';
import { dayOf } from '../metering/periods.js';
import { isListedKey } from '../keys/key-status.js';
import type { Store } from '../store/database.js';
import { getKey, listKeys, type KeyRecord } from '../store/repositories/api-key.repository.js';
import type { Database } from '../store/schema.js';
import { NotFoundError } from '../errors/input-error.js';
import { accountById } from './accounts.service.js';

/** The key as `accountId` may see it: another account's key reads as missing. No accountId: any key (operator). */
export async function findKey(db: Kysely<Database>, keyId: number, accountId: number | undefined): Promise<KeyRecord> {
  const key = await getKey(db, keyId);
  if (!key || (accountId !== undefined && key.accountId !== accountId)) throw new NotFoundError(`key ${keyId} does not exist`);
  return key;
}

export async function ownedKey(store: Store, accountId: number, keyId: number): Promise<KeyRecord> {
  return findKey(store.db, keyId, accountId);
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
