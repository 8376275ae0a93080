/** Gathers a key's details page: the key (the owner's only), its last use, 30 days by outcome (counted from the meter), its rejections. */
import { ownedKey } from '../../services/key-lookup.js';
import { keyLeak } from '../../services/leaked-key-replacement.js';
import { OUTCOMES, type Outcome } from '../../usage-stats/usage-stats.js';
import { getKey, type KeyRecord } from '../../store/repositories/api-key.repository.js';
import type { AppDeps } from '../app-types.js';
import { CHART_DAYS, keyView, lastDays } from './overview-data.js';
import type { KeyDetailsData } from './views/key-details.js';

/** `clientAddress`: the owner's address as this request comes (TRUST_PROXY rule), shown beside the allowed addresses. */
export async function keyDetailsData(deps: AppDeps, accountId: number, keyId: number, now: number, clientAddress: string): Promise<KeyDetailsData> {
  return keyDetailsOf(deps, accountId, await ownedKey(deps.store, accountId, keyId), now, clientAddress);
}

/** The details of `record`, a key already found to be the owner's (ownedKey): every read goes out at once. */
export async function keyDetailsOf(deps: AppDeps, accountId: number, record: KeyRecord, now: number, clientAddress: string): Promise<KeyDetailsData> {
  const { store, meter, stats, config } = deps;
  const keyId = record.id;
  const days = lastDays(now, CHART_DAYS);
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, days.map(() => 0)])) as Record<Outcome, number[]>;
  const [dayOutcomes, rejections, statsLastUse, meterLastUse, usage, replacement, leak] = await Promise.all([
    stats === undefined ? [] : stats.keyOutcomes(accountId, keyId, days[0]!, days[days.length - 1]!),
    stats === undefined ? [] : stats.recentRejections(accountId, keyId),
    stats === undefined ? undefined : stats.lastUse(accountId, [keyId]).then((uses) => uses.get(keyId)),
    // The meter's last use, for a key the statistics have none of: read beside the rest rather than after.
    meter.lastUsed(accountId, [keyId]).then((uses) => uses.get(keyId)),
    // Counted requests come from the meter, which loses none: the statistics hold their records a moment
    // before writing them, and a server killed meanwhile loses those (docs/contract.md, "Statistics").
    meter.keyUsage(accountId, keyId, days[0]!, days[days.length - 1]!),
    record.replacedBy === null ? undefined : getKey(store.db, record.replacedBy),
    // Only a revoked key can have been revoked for a leak.
    record.revokedAt === null ? null : keyLeak(store, accountId, keyId, now, config.keyPrefix),
  ]);
  const index = new Map(days.map((d, i) => [d, i]));
  for (const { day, counts } of dayOutcomes) {
    const i = index.get(day);
    if (i === undefined) continue;
    for (const outcome of OUTCOMES) outcomes[outcome][i] = counts[outcome];
  }
  const lastUse: KeyDetailsData['lastUse'] = statsLastUse ?? (meterLastUse === undefined ? null : { at: meterLastUse, address: null });
  const counted = new Map(usage.map((u) => [u.day, u.requests]));
  outcomes.counted = days.map((day) => counted.get(day) ?? 0);
  return {
    now,
    clientAddress,
    key: keyView({ ...record, lastUsedAt: lastUse?.at ?? record.lastUsedAt }, config.keyPrefix, now),
    lastUse,
    days,
    outcomes,
    rejections,
    replacedBy: replacement === undefined ? null : { id: replacement.id, name: replacement.name },
    leak,
  };
}
