/** Gathers a key's details page: the key (the owner's only), its last use, 30 days by outcome (counted from the meter), its rejections. */
import { ownedKey } from '../../services/keys.service.js';
import { OUTCOMES, type Outcome } from '../../metering/usage-stats.js';
import { getKey } from '../../store/repositories/api-key.repository.js';
import type { AppDeps } from '../app-types.js';
import { CHART_DAYS, keyView, lastDays } from './overview-data.js';
import type { KeyDetailsData } from './views/key-details.js';

/** `clientAddress`: the owner's address as this request comes (TRUST_PROXY rule), shown beside the allowed addresses. */
export async function keyDetailsData(deps: AppDeps, accountId: number, keyId: number, now: number, clientAddress: string): Promise<KeyDetailsData> {
  const { store, meter, stats, config } = deps;
  const record = await ownedKey(store, accountId, keyId);
  const days = lastDays(now, CHART_DAYS);
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, days.map(() => 0)])) as Record<Outcome, number[]>;
  let lastUse: KeyDetailsData['lastUse'] = null;
  let rejections: KeyDetailsData['rejections'] = [];
  if (stats !== undefined) {
    const index = new Map(days.map((d, i) => [d, i]));
    for (const { day, counts } of await stats.keyOutcomes(accountId, keyId, days[0]!, days[days.length - 1]!)) {
      const i = index.get(day);
      if (i === undefined) continue;
      for (const outcome of OUTCOMES) outcomes[outcome][i] = counts[outcome];
    }
    rejections = await stats.recentRejections(accountId, keyId);
    lastUse = (await stats.lastUse(accountId, [keyId])).get(keyId) ?? null;
  }
  if (lastUse === null) {
    const at = (await meter.lastUsed(accountId, [keyId])).get(keyId);
    if (at !== undefined) lastUse = { at, address: null };
  }
  // Counted requests come from the meter, which loses none: the statistics hold their records a moment
  // before writing them, and a server killed meanwhile loses those (docs/contract.md, "Statistics").
  const counted = new Map((await meter.keyUsage(accountId, keyId, days[0]!, days[days.length - 1]!)).map((usage) => [usage.day, usage.requests]));
  outcomes.counted = days.map((day) => counted.get(day) ?? 0);
  const replacement = record.replacedBy === null ? undefined : await getKey(store.db, record.replacedBy);
  return {
    now,
    clientAddress,
    key: keyView({ ...record, lastUsedAt: lastUse?.at ?? record.lastUsedAt }, config.keyPrefix, now),
    lastUse,
    days,
    outcomes,
    rejections,
    replacedBy: replacement === undefined ? null : { id: replacement.id, name: replacement.name },
  };
}
