/**
 * The items of expensive terms, held as bitsets so that a search need not union their postings again:
 * the heavy short terms, computed once at build (heavyTermSets), and the terms whose union read many
 * postings, kept at first use (the KEPT_TERMS most recently used). See search-index.ts for the sizes.
 */
import { wordsFor, type Bitset } from './bitset.js';
import { orPostings, type Postings } from './postings.js';
import type { TokenTable } from './token-table.js';

/** Terms up to this length are precomputed when heavy. */
const PRECOMPUTED_TERM_LENGTH = 3;
/** Unions of other terms kept once computed (a bitset each: 119 KB at a million items). */
const KEPT_TERMS = 64;

export class TermSets {
  /**
   * The items of terms whose union read many postings, kept at first use, least recently used first (a
   * Map keeps insertion order): searches repeat a few dozen short terms in many combinations, and a term's
   * union costs a thousand times its lookup.
   */
  private readonly kept = new Map<string, Bitset>();

  constructor(
    /** The items of each heavy short term, computed at build. */
    private readonly heavy: ReadonlyMap<string, Bitset> = new Map(),
  ) {}

  /** How many short terms are held precomputed. */
  get heavyCount(): number {
    return this.heavy.size;
  }

  /** How many bitsets are held, heavy and kept. */
  get held(): number {
    return this.heavy.size + this.kept.size;
  }

  /** The items of a term precomputed at build or kept since its first use; undefined for any other. */
  get(term: string): Bitset | undefined {
    const heavy = this.heavy.get(term);
    if (heavy !== undefined) return heavy;
    const kept = this.kept.get(term);
    if (kept !== undefined) {
      // Most recently used goes last.
      this.kept.delete(term);
      this.kept.set(term, kept);
    }
    return kept;
  }

  /** Keeps a copy of a term's items; the least recently used of KEPT_TERMS goes. */
  keep(term: string, items: Bitset): void {
    if (this.kept.size >= KEPT_TERMS) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(term, items.slice());
  }
}

/**
 * Build step: the items of every term of 1..PRECOMPUTED_TERM_LENGTH characters whose union would read more
 * than size / 8 postings. `counts` holds each token's number of items.
 */
export async function heavyTermSets(
  tokens: TokenTable,
  postings: Postings,
  counts: Uint32Array,
  size: number,
  pause: () => Promise<void>,
): Promise<Map<string, Bitset>> {
  const cost = new Map<string, number>();
  for (let k = 0; k < tokens.count; k++) {
    const token = tokens.token(k);
    const seen = new Set<string>();
    for (let length = 1; length <= PRECOMPUTED_TERM_LENGTH; length++) {
      for (let i = 0; i + length <= token.length; i++) seen.add(token.slice(i, i + length));
    }
    for (const term of seen) cost.set(term, (cost.get(term) ?? 0) + counts[k]!);
    if ((k & 0xff) === 0) await pause();
  }
  const threshold = size / 8;
  const heavy = new Map<string, Bitset>();
  for (const [term, read] of cost) {
    if (read <= threshold) continue;
    const bits = new Uint32Array(wordsFor(size));
    for (const token of tokens.containing(term)) {
      orPostings(postings, token, bits);
      await pause();
    }
    heavy.set(term, bits);
  }
  return heavy;
}
