/**
 * Randomness for the demo. One mutable generator is re-seeded per row (no allocation per row); row seeds
 * come from a hash of (seed, id, salt), so any row can be regenerated on its own, and the same seed gives
 * the same rows on every machine and every run.
 */

export const DEFAULT_DEMO_SEED = 20_240_601;

/** One salt per stream, so an item's fields, its prices and the account rows draw independent numbers. */
export const SALT_ITEM = 0x1f3a;
export const SALT_PRICE = 0x2b7c;
export const SALT_ACCOUNTS = 0x3d91;
export const SALT_LARGE = 0x4e05;

export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  reset(seed: number): this {
    this.s = seed >>> 0;
    return this;
  }
  /** mulberry32 */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) | 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  intBetween(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }
  between(lo: number, hi: number): number {
    return lo + this.next() * (hi - lo);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(arr: readonly T[]): T {
    return arr[this.int(arr.length)] as T;
  }
  /** Roughly standard normal; three uniforms are plenty for price spread and far cheaper than Box-Muller. */
  normal(): number {
    return (this.next() + this.next() + this.next() - 1.5) * 2;
  }
}

/** A seeded stream of numbers in [0, 1) (the same mulberry32 as Rng), for tests and benches that must replay. */
export function seededRandom(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.next();
}

/** `null` with probability p, else v. */
export function orNull<T>(r: Rng, p: number, v: T): T | null {
  return r.chance(p) ? null : v;
}

/** murmur3's finaliser: spreads every input bit over the output. */
export function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function rowSeed(seed: number, id: number, salt: number): number {
  // ids can exceed 2^32 in theory; fold the high part in so such ids still get distinct streams.
  const hi = Math.floor(id / 4294967296);
  return fmix((fmix((seed ^ salt) >>> 0) + Math.imul(id >>> 0, 0x9e3779b1) + Math.imul(hi, 0x85ebca77)) >>> 0);
}

/** FNV-1a: a seed from a name (an account ref). */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** A value drawn with probability proportional to its weight. */
export class Weighted<T> {
  private readonly cum: number[] = [];
  private readonly total: number;
  constructor(
    private readonly values: readonly T[],
    weights: readonly number[],
  ) {
    let t = 0;
    for (const w of weights) this.cum.push((t += w));
    this.total = t;
  }
  pick(rng: Rng): T {
    const x = rng.next() * this.total;
    for (let i = 0; i < this.cum.length; i++) if (x < (this.cum[i] as number)) return this.values[i] as T;
    return this.values[this.values.length - 1] as T;
  }
}

/** A Weighted from [value, weight] pairs, the shape the reference files write them in. */
export function weighted<T>(pairs: readonly (readonly [T, number])[]): Weighted<T> {
  return new Weighted(
    pairs.map((p) => p[0]),
    pairs.map((p) => p[1]),
  );
}
