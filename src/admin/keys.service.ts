/** Operator actions on API keys. A key is shown once, when made; only its hash is stored. */
import { isScope, SCOPES } from '../domain/scopes.js';
import { generateKey, hashKey, lastFour } from '../keys/api-key.js';
import type { Meter, KeyDailyUsage } from '../metering/meter.js';
import { dayOf } from '../metering/periods.js';
import type { Store } from '../store/database.js';
import { getAccount } from '../store/repositories/account.repository.js';
import { getKey, insertKey, listKeys, revokeKey, type KeyRecord } from '../store/repositories/api-key.repository.js';
import { canonicalTimestamp } from '../store/load/field-checks.js';
import { InputError } from './input-error.js';

export function parseScopes(list: string): string[] {
  const scopes = list.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) throw new InputError(`unknown scope ${unknown.join(', ')} (scopes: ${SCOPES.join(', ')})`);
  return [...new Set(scopes)];
}

export async function createKey(
  store: Store,
  input: { accountId: number; scopes: string[]; name: string; expiresAt?: string; now: number; keyPrefix: string },
): Promise<{ id: number; key: string; record: KeyRecord }> {
  if (!(await getAccount(store.db, input.accountId))) throw new InputError(`account ${input.accountId} does not exist`);
  let expiresAt: string | null = null;
  if (input.expiresAt !== undefined) {
    expiresAt = canonicalTimestamp(input.expiresAt);
    if (expiresAt === null) throw new InputError('--expires-at must be an ISO 8601 date-time such as 2027-01-01T00:00:00Z');
    if (Date.parse(expiresAt) <= input.now) throw new InputError('--expires-at must be in the future');
  }
  const key = generateKey(input.keyPrefix);
  const id = await insertKey(store.db, {
    accountId: input.accountId,
    name: input.name,
    keyHash: hashKey(key),
    lastFour: lastFour(key),
    scopes: input.scopes,
    createdAt: new Date(input.now).toISOString(),
    expiresAt,
    revokedAt: null,
  });
  return { id, key, record: (await getKey(store.db, id))! };
}

/** The account's keys, with their last use as the meter knows it (in Redis, or in the database). */
export async function accountKeys(store: Store, meter: Meter, accountId: number): Promise<KeyRecord[]> {
  if (!(await getAccount(store.db, accountId))) throw new InputError(`account ${accountId} does not exist`);
  const keys = await listKeys(store.db, accountId);
  const lastUsed = await meter.lastUsed(keys.map((k) => k.id));
  return keys.map((k) => ({ ...k, lastUsedAt: lastUsed.get(k.id) ?? null }));
}

export async function revoke(store: Store, keyId: number, now: number): Promise<KeyRecord> {
  const record = await revokeKey(store.db, keyId, new Date(now).toISOString());
  if (!record) throw new InputError(`key ${keyId} does not exist`);
  return record;
}

export interface KeyUsageReport {
  key: KeyRecord;
  days: KeyDailyUsage[];
  total: number;
}

/** Requests per UTC day over the last `days` days (today included), every day listed, newest first. */
export async function keyUsage(store: Store, meter: Meter, keyId: number, now: number, days: number): Promise<KeyUsageReport> {
  const stored = await getKey(store.db, keyId);
  if (!stored) throw new InputError(`key ${keyId} does not exist`);
  const key = { ...stored, lastUsedAt: (await meter.lastUsed([keyId])).get(keyId) ?? null };
  const since = dayOf(now - (days - 1) * 86_400_000);
  const counted = new Map((await meter.keyUsage(keyId, since, dayOf(now))).map((d) => [d.day, d.requests]));
  const out: KeyDailyUsage[] = [];
  for (let i = 0; i < days; i++) {
    const day = dayOf(now - i * 86_400_000);
    out.push({ day, requests: counted.get(day) ?? 0 });
  }
  return { key, days: out, total: out.reduce((sum, d) => sum + d.requests, 0) };
}
