/**
 * Posting lists: for each key (a name token, a platform, a category), the ordinals of the items that have
 * it, ascending, stored as variable-length deltas in one byte array. Ordinals are dense, so a common key's
 * deltas take one byte each and a rare key's two or three: about 1.3 bytes per posting, against 4 for a
 * Uint32Array, and decoding costs less than the bitset writes it feeds.
 */
import type { Bitset } from './bitset.js';

export interface Postings {
  /** Byte offset of each key's list in `bytes`; key k's list is bytes[starts[k]..starts[k + 1]). */
  readonly starts: Uint32Array;
  readonly bytes: Uint8Array;
}

/** Postings as built, with each key's number of items (used while building, not kept). */
export interface BuiltPostings extends Postings {
  readonly counts: Uint32Array;
}

/** Sets the bits of every ordinal in key's list; returns how many postings it read. */
export function orPostings(postings: Postings, key: number, bits: Bitset): number {
  const { bytes } = postings;
  let pos = postings.starts[key]!;
  const end = postings.starts[key + 1]!;
  let ordinal = -1;
  let n = 0;
  while (pos < end) {
    let byte = bytes[pos++]!;
    let delta = byte & 0x7f;
    for (let shift = 7; byte & 0x80; shift += 7) {
      byte = bytes[pos++]!;
      delta |= (byte & 0x7f) << shift;
    }
    ordinal += delta;
    bits[ordinal >>> 5]! |= 1 << (ordinal & 31);
    n++;
  }
  return n;
}

export function postingsBytes(postings: Postings): number {
  return postings.starts.byteLength + postings.bytes.byteLength;
}

function varintLength(value: number): number {
  let n = 1;
  while (value >= 0x80) {
    value >>>= 7;
    n++;
  }
  return n;
}

/** A growable Uint32Array. */
class U32List {
  private data = new Uint32Array(1024);
  length = 0;

  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Uint32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = value;
  }

  at(i: number): number {
    return this.data[i]!;
  }
}

/**
 * Collects (key, ordinal) pairs with ordinals in ascending order (items arrive in masterItemId order), then
 * encodes them. Keeps a flat stream of keys and where each item's keys end, not one array per key: four
 * bytes per posting while building, whatever the number of keys.
 */
export class PostingsBuilder {
  private readonly keys = new U32List();
  private readonly itemEnds = new U32List();
  /** Last ordinal each key was added for, so a key repeated within one item is kept once. */
  private lastOrdinal = new Int32Array(1024).fill(-1);
  private keyCount = 0;

  /** Adds key to the item `ordinal`, the current one (ordinals only ever grow). */
  add(key: number, ordinal: number): void {
    while (key >= this.lastOrdinal.length) {
      const grown = new Int32Array(this.lastOrdinal.length * 2).fill(-1);
      grown.set(this.lastOrdinal);
      this.lastOrdinal = grown;
    }
    if (key >= this.keyCount) this.keyCount = key + 1;
    if (this.lastOrdinal[key] === ordinal) return;
    this.lastOrdinal[key] = ordinal;
    while (this.itemEnds.length < ordinal) this.itemEnds.push(this.keys.length);
    this.keys.push(key);
  }

  /**
   * Encodes the lists for `keyCount` keys (at least every key added) over `items` ordinals. `pause` is
   * awaited between slices of work, so that a large build yields to the event loop.
   */
  async build(keyCount: number, items: number, pause: () => Promise<void>): Promise<BuiltPostings> {
    while (this.itemEnds.length < items) this.itemEnds.push(this.keys.length);
    const keys = Math.max(keyCount, this.keyCount);
    const last = new Int32Array(keys).fill(-1);
    const sizes = new Uint32Array(keys + 1);
    const counts = new Uint32Array(keys);
    await this.eachPosting(pause, (key, ordinal) => {
      counts[key]!++;
      sizes[key]! += varintLength(ordinal - last[key]!);
      last[key] = ordinal;
    });
    const starts = new Uint32Array(keys + 1);
    for (let k = 0; k < keys; k++) starts[k + 1] = starts[k]! + sizes[k]!;
    const bytes = new Uint8Array(starts[keys]!);
    const cursor = starts.slice(0, keys);
    last.fill(-1);
    await this.eachPosting(pause, (key, ordinal) => {
      let delta = ordinal - last[key]!;
      last[key] = ordinal;
      let pos = cursor[key]!;
      while (delta >= 0x80) {
        bytes[pos++] = (delta & 0x7f) | 0x80;
        delta >>>= 7;
      }
      bytes[pos++] = delta;
      cursor[key] = pos;
    });
    return { starts, bytes, counts };
  }

  private async eachPosting(pause: () => Promise<void>, visit: (key: number, ordinal: number) => void): Promise<void> {
    let at = 0;
    for (let ordinal = 0; ordinal < this.itemEnds.length; ordinal++) {
      const end = this.itemEnds.at(ordinal);
      for (; at < end; at++) visit(this.keys.at(at), ordinal);
      if ((ordinal & 0x3fff) === 0) await pause();
    }
  }
}
