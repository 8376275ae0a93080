/** Gathers a key's details page: the key (the owner's only), its last use and where from, what replaced it, a leak. */
import { ownedKey } from '../../services/key-lookup.js';
import { keyLeak } from '../../services/leaked-key-replacement.js';
import { getKey, type KeyRecord } from '../../store/repositories/api-key.repository.js';
import type { AppDeps } from '../app-types.js';
import { keyView } from './overview-data.js';
import type { KeyDetailsData } from './views/key-details.js';

/** `clientAddress`: the owner's address as this request comes (TRUST_PROXY rule), shown beside the allowed addresses. */
export async function keyDetailsData(deps: AppDeps, accountId: number, keyId: number, now: number, clientAddress: string): Promise<KeyDetailsData> {
  return keyDetailsOf(deps, accountId, await ownedKey(deps.store, accountId, keyId), now, clientAddress);
}

/** The details of `record`, a key already found to be the owner's (ownedKey): every read goes out at once. */
export async function keyDetailsOf(deps: AppDeps, accountId: number, record: KeyRecord, now: number, clientAddress: string): Promise<KeyDetailsData> {
  const { store, meter, stats, config } = deps;
  const keyId = record.id;
  const [statsLastUse, meterLastUse, replacement, leak] = await Promise.all([
    stats === undefined ? undefined : stats.lastUse(accountId, [keyId]).then((uses) => uses.get(keyId)),
    // The meter's last use, for a key the statistics have none of: read beside the rest rather than after.
    meter.lastUsed(accountId, [keyId]).then((uses) => uses.get(keyId)),
    record.replacedBy === null ? undefined : getKey(store.db, record.replacedBy),
    // Only a revoked key can have been revoked for a leak.
    record.revokedAt === null ? null : keyLeak(store, accountId, keyId, now, config.keyPrefix),
  ]);
  const lastUse: KeyDetailsData['lastUse'] = statsLastUse ?? (meterLastUse === undefined ? null : { at: meterLastUse, address: null });
  return {
    now,
    clientAddress,
    key: keyView({ ...record, lastUsedAt: lastUse?.at ?? record.lastUsedAt }, config.keyPrefix, now),
    lastUse,
    replacedBy: replacement === undefined ? null : { id: replacement.id, name: replacement.name },
    leak,
  };
}
