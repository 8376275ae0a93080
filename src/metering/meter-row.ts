/**
 * An account's burst window as the SQLite meter keeps it in its burst_windows row: the admission times of
 * the window, oldest first, in one BLOB. Times within 65.5 s of a base (all of them, unless a clock ran
 * ahead) are 2-byte offsets from it, so a window of 1,900 fits in one page of the file; otherwise each is
 * a float64. Little-endian, whatever the host.
 */

/**
 * The most admission times a row holds, about what one 4 KiB page of the file takes (2 bytes each); older
 * ones spill into burst_events (one insert a transaction, sqlite-meter-rows.ts), so an account admitting more
 * than this in a minute (a perMinute above it) pays for those rows too.
 */
export const ROW_TIMES_MAX = 1900;

const OFFSETS = 1;
const FLOATS = 2;
/** Format byte, a pad byte, the oldest time as a float64. */
const HEADER = 10;
const OFFSET_MAX = 0xffff;

export function decodeTimes(blob: Buffer | null): number[] {
  if (blob === null || blob.length < HEADER) return [];
  const base = blob.readDoubleLE(2);
  if (blob[0] === OFFSETS) {
    const out = new Array<number>((blob.length - HEADER) >>> 1);
    for (let i = 0; i < out.length; i++) out[i] = base + blob.readUInt16LE(HEADER + i * 2);
    return out;
  }
  const out = new Array<number>((blob.length - HEADER) >>> 3);
  for (let i = 0; i < out.length; i++) out[i] = blob.readDoubleLE(HEADER + i * 8);
  return out;
}

/** `times` in ascending order. */
export function encodeTimes(times: readonly number[]): Buffer | null {
  if (times.length === 0) return null;
  const base = times[0]!;
  const span = times[times.length - 1]! - base;
  const offsets = Number.isInteger(base) && times.every(Number.isInteger) && span <= OFFSET_MAX;
  const blob = Buffer.allocUnsafe(HEADER + times.length * (offsets ? 2 : 8));
  blob[0] = offsets ? OFFSETS : FLOATS;
  blob[1] = 0;
  blob.writeDoubleLE(base, 2);
  if (offsets) for (let i = 0; i < times.length; i++) blob.writeUInt16LE(times[i]! - base, HEADER + i * 2);
  else for (let i = 0; i < times.length; i++) blob.writeDoubleLE(times[i]!, HEADER + i * 8);
  return blob;
}

/**
 * The window's times while an admission works on them. Kept as read (the stored offsets, from the first
 * still in the window) plus the times added since, so that pruning the oldest and adding the newest, the
 * usual work, cost the same whatever the size of the window; a time out of order (another process's
 * clock) or too far from the base turns it into a plain sorted list.
 */
export class WindowTimes {
  /** All times, ascending, once the fast form no longer fits; null while it does. */
  private list: number[] | null = null;
  private base = 0;
  /** Stored offsets (OFFSETS format) and the part of them still held. */
  private stored: Buffer | null = null;
  private first = 0;
  private kept = 0;
  /** Times added after the stored ones, ascending, each within OFFSET_MAX of the base. */
  private added: number[] = [];

  static decode(blob: Buffer | null): WindowTimes {
    const times = new WindowTimes();
    if (blob === null || blob.length < HEADER) return times;
    if (blob[0] === OFFSETS) {
      times.base = blob.readDoubleLE(2);
      times.stored = blob;
      times.kept = (blob.length - HEADER) >>> 1;
    } else {
      times.list = decodeTimes(blob);
    }
    return times;
  }

  get length(): number {
    return this.list !== null ? this.list.length : this.kept + this.added.length;
  }

  at(i: number): number {
    if (this.list !== null) return this.list[i]!;
    return i < this.kept ? this.base + this.stored!.readUInt16LE(HEADER + (this.first + i) * 2) : this.added[i - this.kept]!;
  }

  /** Drops the times at or before `cutoff` (they left the window); returns how many. */
  prune(cutoff: number): number {
    let drop = 0;
    while (drop < this.length && this.at(drop) <= cutoff) drop++;
    if (drop > 0) this.dropOldest(drop);
    return drop;
  }

  /** Removes and returns the oldest time. */
  shift(): number {
    const oldest = this.at(0);
    this.dropOldest(1);
    return oldest;
  }

  private dropOldest(n: number): void {
    if (this.list !== null) {
      this.list.splice(0, n);
      return;
    }
    const fromStored = Math.min(n, this.kept);
    this.first += fromStored;
    this.kept -= fromStored;
    if (n > fromStored) this.added.splice(0, n - fromStored);
  }

  add(at: number): void {
    if (this.list === null) {
      if (this.length === 0 && Number.isInteger(at)) {
        this.base = at;
        this.stored = null;
        this.first = this.kept = 0;
        this.added = [at];
        return;
      }
      if (Number.isInteger(at) && at >= this.at(this.length - 1) && at - this.base <= OFFSET_MAX) {
        this.added.push(at);
        return;
      }
      this.list = Array.from({ length: this.length }, (_, i) => this.at(i));
    }
    let i = this.list.length;
    while (i > 0 && this.list[i - 1]! > at) i--;
    this.list.splice(i, 0, at);
  }

  /** How many lie in (from, to]. */
  countIn(from: number, to: number): number {
    let n = 0;
    for (let i = 0; i < this.length; i++) {
      const t = this.at(i);
      if (t > from && t <= to) n++;
    }
    return n;
  }

  encode(): Buffer | null {
    const n = this.length;
    if (n === 0) return null;
    // Rebased (every offset rewritten) once the oldest has moved half the offsets' range on.
    if (this.list !== null || this.at(0) - this.base > OFFSET_MAX / 2) {
      return encodeTimes(this.list ?? Array.from({ length: n }, (_, i) => this.at(i)));
    }
    const blob = Buffer.allocUnsafe(HEADER + n * 2);
    blob[0] = OFFSETS;
    blob[1] = 0;
    blob.writeDoubleLE(this.base, 2);
    if (this.kept > 0) this.stored!.copy(blob, HEADER, HEADER + this.first * 2, HEADER + (this.first + this.kept) * 2);
    for (let i = 0; i < this.added.length; i++) blob.writeUInt16LE(this.added[i]! - this.base, HEADER + (this.kept + i) * 2);
    return blob;
  }
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
