/**
 * An in-memory index of the published catalogue for `search`, exact without ever reading a name back.
 *
 * Why tokens: a search term holds no white space (terms are split on it), so wherever a term occurs in a
 * folded name, it lies inside one white-space-delimited token of that name. The index keeps each distinct
 * token once, in one string (token-table.ts), with the list of items holding it (postings.ts). A term's
 * items are then the union of the lists of the tokens containing it, found by scanning the token string (a
 * few MB); several terms intersect; platform, category, "has a price" and UPC narrow as bitsets; the total
 * is a popcount and the page the next set bits. No candidate is verified afterwards because none is
 * approximate.
 *
 * Short terms are the expensive ones: "e" is in most tokens, so its union reads nearly every posting
 * (3.5 million at a million items, ~15 ms). Every term of one to three characters whose union would read
 * more postings than there are items / 8 is therefore computed once, at build, and kept as a bitset
 * (N / 8 bytes each, so never bigger than what decoding it would read): 63 such terms on the demo
 * catalogue, 7.5 MB. Any other term reads at most as many postings as its cheapest three-character part,
 * and one whose union read more than items / 256 postings is kept after its first use (the 64 most
 * recently used, 119 KB each at a million items): searches repeat a few dozen short terms in many
 * combinations (term-sets.ts).
 *
 * Items are numbered by ordinal, their position in masterItemId order, so bit order is the API's order.
 * An index is immutable and belongs to one data version (read-cache.ts): whoever uses it checks that the
 * version is still current. search-index-builder.ts builds one.
 */
import { andInto, countAndPage, fillAll, ordinals, wordsFor, type Bitset } from './bitset.js';
import { orPostings, postingsBytes, type Postings } from './postings.js';
import { pricedRuns, pricedSummary, type PricedRuns, type PricedSummary } from './priced-runs.js';
import type { TermSets } from './term-sets.js';
import type { TokenTable } from './token-table.js';
import { WHITE_SPACE } from '../search-text.js';

/** What a search asks, with every value already in the store's folded or lower-cased form. */
export interface IndexQuery {
  /** Folded terms (search-text.ts searchTerms); an item must contain every one. */
  terms: readonly string[];
  /** platform_key / category_key to equal (lower-cased). */
  platform?: string | undefined;
  category?: string | undefined;
  /** Only items with a current price (/prices). */
  pricedOnly?: boolean;
  /** Only these masterItemIds (the items whose current price carries the asked UPC). */
  within?: readonly number[] | undefined;
}

export interface IndexPage {
  total: number;
  /** masterItemIds of the page, ascending. */
  ids: number[];
}

/** What an index is made of, by ordinal (search-index-builder.ts). */
export interface IndexParts {
  tokens: TokenTable;
  tokenPostings: Postings;
  platformCodes: ReadonlyMap<string, number>;
  platformPostings: Postings;
  categoryCodes: ReadonlyMap<string, number>;
  categoryPostings: Postings;
  priced: Bitset;
  /** The heavy short terms, computed at build; terms kept at first use are added to it. */
  termSets: TermSets;
}


export class SearchIndex {
  private scratch: [Bitset, Bitset] | null = null;
  private pricedSummaryCache: PricedSummary | null = null;

  constructor(
    /** The data version this index was read at. */
    readonly version: number,
    /** masterItemId of each ordinal, ascending. */
    private readonly ids: Uint32Array | Float64Array,
    private readonly parts: IndexParts,
  ) {}

  /** Published items indexed. */
  get size(): number {
    return this.ids.length;
  }

  /** Bytes held by the index: its arrays and its token string. */
  get bytes(): number {
    const { tokens, tokenPostings, platformPostings, categoryPostings, priced, termSets } = this.parts;
    return (
      this.ids.byteLength +
      tokens.bytes +
      postingsBytes(tokenPostings) +
      postingsBytes(platformPostings) +
      postingsBytes(categoryPostings) +
      // The two scratch bitsets of a query, the heavy terms and the kept ones (at most KEPT_TERMS).
      priced.byteLength * (2 + termSets.held)
    );
  }

  /** How many short terms are held precomputed. */
  get precomputedTerms(): number {
    return this.parts.termSets.heavyCount;
  }

  /**
   * Whether the index can answer these terms: not when folding left white space inside a term, nor for an
   * empty term (searchTerms never makes one; the token scan would never end on it), which the store answers.
   */
  static answers(terms: readonly string[]): boolean {
    return terms.every((term) => term.length > 0 && !WHITE_SPACE.test(term));
  }

  /** The total and the page's masterItemIds; null when the index cannot answer (see answers). */
  page(query: IndexQuery, offset: number, limit: number): IndexPage | null {
    const bits = this.match(query);
    if (bits === null) return null;
    const found = countAndPage(bits, offset, limit);
    return { total: found.total, ids: found.ordinals.map((o) => this.ids[o]!) };
  }

  /** Every matching masterItemId, ascending; null when the index cannot answer. */
  allIds(query: IndexQuery): number[] | null {
    const bits = this.match(query);
    if (bits === null) return null;
    return ordinals(bits, 0, Number.MAX_SAFE_INTEGER).map((o) => this.ids[o]!);
  }

  /**
   * A priced-only query's matches as runs of rows of the unfiltered export (whose row r is the r-th priced
   * item); null when the index cannot answer. Holds a copy of the matches (size / 8 bytes), so the runs can
   * be read across awaits.
   */
  pricedRuns(query: IndexQuery): PricedRuns | null {
    const bits = this.match({ ...query, pricedOnly: true });
    if (bits === null) return null;
    const matches = bits.slice();
    this.pricedSummaryCache ??= pricedSummary(this.parts.priced, this.ids);
    return pricedRuns(this.parts.priced, matches, this.pricedSummaryCache);
  }

  /**
   * The matching ordinals as a bitset, to be read only: one of the two scratch sets (valid until the next
   * call), or a precomputed set when it is the only condition. Queries are synchronous from start to end,
   * so one pair of scratch sets serves them all without allocation.
   */
  private match(query: IndexQuery): Bitset | null {
    if (!SearchIndex.answers(query.terms)) return null;
    const { platformCodes, platformPostings, categoryCodes, categoryPostings, priced, termSets } = this.parts;
    const known = query.terms.map((term) => termSets.get(term));
    const conditions = query.terms.length + (query.platform === undefined ? 0 : 1) + (query.category === undefined ? 0 : 1) + (query.pricedOnly ? 1 : 0) + (query.within === undefined ? 0 : 1);
    if (conditions === 1 && known[0] !== undefined) return known[0];
    if (conditions === 1 && query.pricedOnly) return priced;
    const [acc, other] = (this.scratch ??= [new Uint32Array(wordsFor(this.size)), new Uint32Array(wordsFor(this.size))]);
    // The first condition fills the accumulator directly; each next one is intersected with it.
    let empty = true;
    const narrow = (fill: (into: Bitset) => void) => {
      const into = empty ? acc : other;
      into.fill(0);
      fill(into);
      if (!empty) andInto(acc, other);
      empty = false;
    };
    const narrowBy = (bits: Bitset) => {
      if (empty) acc.set(bits);
      else andInto(acc, bits);
      empty = false;
    };
    for (const [i, term] of query.terms.entries()) {
      const bits = known[i];
      if (bits !== undefined) narrowBy(bits);
      else narrow((into) => this.termItems(term, into));
    }
    if (query.platform !== undefined) narrow((into) => keyItems(platformCodes, platformPostings, query.platform!, into));
    if (query.category !== undefined) narrow((into) => keyItems(categoryCodes, categoryPostings, query.category!, into));
    if (query.pricedOnly) narrowBy(priced);
    if (query.within !== undefined) narrow((into) => this.idItems(query.within!, into));
    // No condition at all (every term folded away): every published item.
    if (empty) fillAll(acc, this.size);
    return acc;
  }

  /**
   * Sets the items whose name contains `term`: the union of the lists of the tokens containing it. A union
   * that read more than size / 256 postings is kept (term-sets.ts).
   */
  private termItems(term: string, into: Bitset): void {
    const { tokens, tokenPostings, termSets } = this.parts;
    let read = 0;
    for (const token of tokens.containing(term)) read += orPostings(tokenPostings, token, into);
    if (read * 256 > this.size) termSets.keep(term, into);
  }

  private idItems(ids: readonly number[], into: Bitset): void {
    for (const id of ids) {
      const ordinal = this.ordinalOf(id);
      if (ordinal >= 0) into[ordinal >>> 5]! |= 1 << (ordinal & 31);
    }
  }

  private ordinalOf(id: number): number {
    let low = 0;
    let high = this.ids.length - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const at = this.ids[mid]!;
      if (at === id) return mid;
      if (at < id) low = mid + 1;
      else high = mid - 1;
    }
    return -1;
  }
}

function keyItems(codes: ReadonlyMap<string, number>, postings: Postings, key: string, into: Bitset): void {
  const code = codes.get(key);
  if (code !== undefined) orPostings(postings, code, into);
}
