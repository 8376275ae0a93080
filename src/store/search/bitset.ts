/**
 * Sets of item ordinals (positions in masterItemId order) as plain bitsets: one bit per published item,
 * 125 KB at a million items. Intersections, counts and pages are word loops over that, a few tens of
 * microseconds whatever the number of matches.
 */
export type Bitset = Uint32Array;

export function wordsFor(bits: number): number {
  return Math.ceil(bits / 32);
}

/** Every ordinal below `size`. */
export function fillAll(bits: Bitset, size: number): void {
  bits.fill(0xffffffff);
  const tail = size & 31;
  if (tail !== 0) bits[bits.length - 1] = (1 << tail) - 1;
}

export function andInto(target: Bitset, other: Bitset): void {
  for (let i = 0; i < target.length; i++) target[i]! &= other[i]!;
}

export function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/** The number of set bits. */
export function count(bits: Bitset): number {
  let n = 0;
  for (let i = 0; i < bits.length; i++) {
    const word = bits[i]!;
    if (word !== 0) n += popcount32(word);
  }
  return n;
}

/** Ordinals of the set bits from the `skip`-th one on, at most `take` of them, ascending. */
export function ordinals(bits: Bitset, skip: number, take: number): number[] {
  const out: number[] = [];
  let i = 0;
  // Whole words are skipped by their counts, so a deep offset costs one pass over the words at most.
  for (; i < bits.length; i++) {
    const word = bits[i]!;
    if (word === 0) continue;
    const n = popcount32(word);
    if (skip < n) break;
    skip -= n;
  }
  for (; i < bits.length && out.length < take; i++) {
    let word = bits[i]!;
    while (word !== 0 && out.length < take) {
      const low = word & -word;
      if (skip > 0) skip--;
      else out.push(i * 32 + (31 - Math.clz32(low)));
      word ^= low;
    }
  }
  return out;
}

/**
 * The number of set bits and the ordinals of the page from the `skip`-th one on (at most `take`), in one
 * pass over the words: a search's total and its page together.
 */
export function countAndPage(bits: Bitset, skip: number, take: number): { total: number; ordinals: number[] } {
  const out: number[] = [];
  let total = 0;
  for (let i = 0; i < bits.length; i++) {
    let word = bits[i]!;
    if (word === 0) continue;
    const n = popcount32(word);
    if (out.length < take && total + n > skip) {
      for (let seen = total; word !== 0 && out.length < take; seen++) {
        const low = word & -word;
        if (seen >= skip) out.push(i * 32 + (31 - Math.clz32(low)));
        word ^= low;
      }
    }
    total += n;
  }
  return { total, ordinals: out };
}
