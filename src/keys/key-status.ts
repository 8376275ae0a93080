/**
 * What state a key is in, and until when: the one rule the settings screen and `keys list` both show.
 * A rolled key past its stop time and a revoked key read the same (both answer 401 as revoked).
 */
export const EXPIRES_SOON_MS = 7 * 86_400_000;
/** Expired and revoked keys stay listed, apart, this long after they stopped working. */
export const ENDED_KEYS_SHOWN_MS = 90 * 86_400_000;

export type KeyStatusName = 'active' | 'expires_soon' | 'retiring' | 'expired' | 'revoked';

export interface KeyStatus {
  status: KeyStatusName;
  /**
   * When the status changes or changed: expiry for `active` (null: never) and `expires_soon`, the stop
   * time for `retiring`, when it stopped working for `expired` and `revoked`.
   */
  at: string | null;
}

export interface KeyTimes {
  expiresAt: string | null;
  revokedAt: string | null;
  retiresAt: string | null;
}

export function keyStatus(key: KeyTimes, now: number): KeyStatus {
  const expires = key.expiresAt === null ? null : Date.parse(key.expiresAt);
  const retires = key.retiresAt === null ? null : Date.parse(key.retiresAt);
  // Whichever ended it first is the reason shown.
  const ends: Array<{ status: 'revoked' | 'expired'; at: string; ms: number }> = [];
  if (key.revokedAt !== null) ends.push({ status: 'revoked', at: key.revokedAt, ms: Date.parse(key.revokedAt) });
  if (retires !== null && retires <= now && key.retiresAt !== null) ends.push({ status: 'revoked', at: key.retiresAt, ms: retires });
  if (expires !== null && expires <= now && key.expiresAt !== null) ends.push({ status: 'expired', at: key.expiresAt, ms: expires });
  ends.sort((a, b) => a.ms - b.ms);
  const ended = ends[0];
  if (ended !== undefined) return { status: ended.status, at: ended.at };
  if (retires !== null && key.retiresAt !== null) {
    // A rolled key stops at its stop time, or at its expiry if that comes first.
    return { status: 'retiring', at: expires !== null && expires < retires ? key.expiresAt : key.retiresAt };
  }
  if (expires !== null && expires - now <= EXPIRES_SOON_MS) return { status: 'expires_soon', at: key.expiresAt };
  return { status: 'active', at: key.expiresAt };
}

/** A key that works now and is not on its way out: counted toward the limit, its name unique. */
export function isLiveKey(key: KeyTimes, now: number): boolean {
  const { status } = keyStatus(key, now);
  return status === 'active' || status === 'expires_soon';
}

/** Shown in the account's key list: everything working, and what ended within the last 90 days. */
export function isListedKey(key: KeyTimes, now: number): boolean {
  const { status, at } = keyStatus(key, now);
  if (status !== 'expired' && status !== 'revoked') return true;
  return at !== null && now - Date.parse(at) <= ENDED_KEYS_SHOWN_MS;
}
