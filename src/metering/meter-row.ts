/**
 * An account's burst window as the SQLite meter keeps it in its burst_windows row: the admission times of
 * the window, oldest first, as one BLOB of little-endian float64 epoch ms (the same numbers burst_events
 * holds). One read and one write of the row replace the rows of burst_events and the count beside them.
 */

/** The most admission times a row holds; older ones spill into burst_events (a perMinute above this). */
export const ROW_TIMES_MAX = 256;

export function decodeTimes(blob: Buffer | null): number[] {
  if (blob === null) return [];
  const out = new Array<number>(blob.length >>> 3);
  for (let i = 0; i < out.length; i++) out[i] = blob.readDoubleLE(i * 8);
  return out;
}

export function encodeTimes(times: readonly number[]): Buffer {
  const blob = Buffer.allocUnsafe(times.length * 8);
  for (let i = 0; i < times.length; i++) blob.writeDoubleLE(times[i]!, i * 8);
  return blob;
}

/** Drops the times at or before `cutoff` (they left the window); returns how many. */
export function pruneTimes(times: number[], cutoff: number): number {
  let drop = 0;
  while (drop < times.length && times[drop]! <= cutoff) drop++;
  if (drop > 0) times.splice(0, drop);
  return drop;
}

/** How many of the times lie in (from, to]. */
export function countTimes(times: readonly number[], from: number, to: number): number {
  let n = 0;
  for (const t of times) if (t > from && t <= to) n++;
  return n;
}

/**
 * One key of the account in its row, for the row's day: when it was last used (epoch ms), and its count of
 * requests that day, null while key_usage_daily would have no row for it (no request counted yet).
 */
export interface KeyDay {
  keyId: number;
  lastUsedMs: number;
  count: number | null;
}

/** The row's keys: three float64 each (key id, last use, count or -1 for none). */
export function decodeKeys(blob: Buffer | null): KeyDay[] {
  if (blob === null) return [];
  const out: KeyDay[] = [];
  for (let at = 0; at + 24 <= blob.length; at += 24) {
    const count = blob.readDoubleLE(at + 16);
    out.push({ keyId: blob.readDoubleLE(at), lastUsedMs: blob.readDoubleLE(at + 8), count: count < 0 ? null : count });
  }
  return out;
}

export function encodeKeys(keys: readonly KeyDay[]): Buffer {
  const blob = Buffer.allocUnsafe(keys.length * 24);
  keys.forEach((k, i) => {
    blob.writeDoubleLE(k.keyId, i * 24);
    blob.writeDoubleLE(k.lastUsedMs, i * 24 + 8);
    blob.writeDoubleLE(k.count ?? -1, i * 24 + 16);
  });
  return blob;
}
