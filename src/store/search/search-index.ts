/**
 * An in-memory index of the published catalogue for `search`, exact without ever reading a name back.
 *
 * Why tokens: a search term holds no white space (terms are split on it), so wherever a term occurs in a
 * folded name, it lies inside one white-space-delimited token of that name. The index keeps each distinct
 * token once, in one string, with the list of items holding it (postings.ts). A term's items are then the
 * union of the lists of the tokens containing it, found by scanning the token string (a few MB); several
 * terms intersect; platform, category, "has a price" and UPC narrow as bitsets; the total is a popcount
 * and the page the next set bits. No candidate is verified afterwards because none is approximate.
 *
 * Short terms are the expensive ones: "e" is in most tokens, so its union reads nearly every posting
 * (3.5 million at a million items, ~15 ms). Every term of one to three characters whose union would read
 * more postings than there are items / 8 is therefore computed once, at build, and kept as a bitset
 * (N / 8 bytes each, so never bigger than what decoding it would read): 63 such terms on the demo
 * catalogue, 7.5 MB. Any other term reads at most as many postings as its cheapest three-character part,
 * and one whose union read more than items / 256 postings is kept after its first use (the 64 most
 * recently used, 119 KB each at a million items): searches repeat a few dozen short terms in many
 * combinations.
 *
 * Items are numbered by ordinal, their position in masterItemId order, so bit order is the API's order.
 * An index is immutable and belongs to one data version (read-cache.ts): whoever uses it checks that the
 * version is still current.
 */
import { andInto, count, countAndPage, fillAll, ordinals, popcount32, wordsFor, type Bitset } from './bitset.js';
import { orPostings, postingsBytes, PostingsBuilder, type Postings } from './postings.js';
import { WHITE_SPACE, WHITE_SPACE_RUNS } from '../search-text.js';

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

/**
 * The rows of a filtered export as runs of the unfiltered export's rows (the priced items, in order): what
 * lets the price guide file (src/export) serve a filtered export by copying byte ranges of itself.
 */
export interface PricedRuns {
  /** The unfiltered export's rows, and the masterItemIds of its first and last, to check a file against. */
  priced: { rows: number; firstId: number | null; lastId: number | null };
  /** Matching rows. */
  rows: number;
  /** Each run of consecutive matching rows as [first row, end row), ascending. */
  runs(): Generator<[number, number]>;
}

export interface IndexPage {
  total: number;
  /** masterItemIds of the page, ascending. */
  ids: number[];
}

const TOKEN_SEPARATOR = '\n';
/** Terms up to this length are precomputed when heavy. */
const PRECOMPUTED_TERM_LENGTH = 3;
/** Unions of other terms kept once computed (a bitset each: 119 KB at a million items). */
const KEPT_TERMS = 64;

export class SearchIndex {
  private scratch: [Bitset, Bitset] | null = null;
  /** The items of each heavy short term (see the top of this file), filled while building. */
  private readonly heavyTerms = new Map<string, Bitset>();
  /**
   * The items of terms whose union read many postings, kept at first use, least recently used first (a
   * Map keeps insertion order): searches repeat a few dozen short terms in many combinations, and a term's
   * union costs a thousand times its lookup.
   */
  private readonly keptTerms = new Map<string, Bitset>();

  constructor(
    /** The data version this index was read at. */
    readonly version: number,
    /** masterItemId of each ordinal, ascending. */
    private readonly ids: Uint32Array | Float64Array,
    /** Every distinct token, each followed by TOKEN_SEPARATOR. */
    private readonly tokens: string,
    /** Offset of each token in `tokens`, and its length at the end. */
    private readonly tokenStarts: Uint32Array,
    private readonly tokenPostings: Postings,
    private readonly platformCodes: ReadonlyMap<string, number>,
    private readonly platformPostings: Postings,
    private readonly categoryCodes: ReadonlyMap<string, number>,
    private readonly categoryPostings: Postings,
    private readonly priced: Bitset,
  ) {}

  /** Published items indexed. */
  get size(): number {
    return this.ids.length;
  }

  /** Bytes held by the index: its arrays and its token string (one byte per character when all are Latin-1). */
  get bytes(): number {
    const charBytes = /[\u0100-\u{10ffff}]/u.test(this.tokens) ? 2 : 1;
    return (
      this.ids.byteLength +
      this.tokens.length * charBytes +
      this.tokenStarts.byteLength +
      postingsBytes(this.tokenPostings) +
      postingsBytes(this.platformPostings) +
      postingsBytes(this.categoryPostings) +
      // The two scratch bitsets of a query, the heavy terms and the kept ones (at most KEPT_TERMS).
      this.priced.byteLength * (2 + this.heavyTerms.size + this.keptTerms.size)
    );
  }

  /** How many short terms are held precomputed. */
  get precomputedTerms(): number {
    return this.heavyTerms.size;
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
    const priced = this.priced;
    return {
      priced: this.pricedSummary(),
      rows: count(matches),
      *runs() {
        let row = 0;
        let start = -1;
        for (let w = 0; w < priced.length; w++) {
          const p = priced[w]!;
          if (p === 0) continue;
          // Matches are priced items, so each word of them is a subset of the priced word.
          const m = matches[w]!;
          if (m === p || m === 0) {
            if (m !== 0 && start < 0) start = row;
            else if (m === 0 && start >= 0) {
              yield [start, row];
              start = -1;
            }
            row += popcount32(p);
            continue;
          }
          for (let rest = p; rest !== 0; rest ^= rest & -rest, row++) {
            if ((m & rest & -rest) !== 0) {
              if (start < 0) start = row;
            } else if (start >= 0) {
              yield [start, row];
              start = -1;
            }
          }
        }
        if (start >= 0) yield [start, row];
      },
    };
  }

  private pricedSummaryCache: PricedRuns['priced'] | null = null;

  private pricedSummary(): PricedRuns['priced'] {
    if (this.pricedSummaryCache !== null) return this.pricedSummaryCache;
    const rows = count(this.priced);
    const [first] = ordinals(this.priced, 0, 1);
    const [last] = ordinals(this.priced, Math.max(rows - 1, 0), 1);
    this.pricedSummaryCache = {
      rows,
      firstId: first === undefined ? null : this.ids[first]!,
      lastId: last === undefined ? null : this.ids[last]!,
    };
    return this.pricedSummaryCache;
  }

  /**
   * The matching ordinals as a bitset, to be read only: one of the two scratch sets (valid until the next
   * call), or a precomputed set when it is the only condition. Queries are synchronous from start to end,
   * so one pair of scratch sets serves them all without allocation.
   */
  private match(query: IndexQuery): Bitset | null {
    if (!SearchIndex.answers(query.terms)) return null;
    const known = query.terms.map((term) => this.knownTerm(term));
    const conditions = query.terms.length + (query.platform === undefined ? 0 : 1) + (query.category === undefined ? 0 : 1) + (query.pricedOnly ? 1 : 0) + (query.within === undefined ? 0 : 1);
    if (conditions === 1 && known[0] !== undefined) return known[0];
    if (conditions === 1 && query.pricedOnly) return this.priced;
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
    if (query.platform !== undefined) narrow((into) => this.keyItems(this.platformCodes, this.platformPostings, query.platform!, into));
    if (query.category !== undefined) narrow((into) => this.keyItems(this.categoryCodes, this.categoryPostings, query.category!, into));
    if (query.pricedOnly) narrowBy(this.priced);
    if (query.within !== undefined) narrow((into) => this.idItems(query.within!, into));
    // No condition at all (every term folded away): every published item.
    if (empty) fillAll(acc, this.size);
    return acc;
  }

  /** The items of a term precomputed at build or kept since its first use; undefined for any other. */
  private knownTerm(term: string): Bitset | undefined {
    const heavy = this.heavyTerms.get(term);
    if (heavy !== undefined) return heavy;
    const kept = this.keptTerms.get(term);
    if (kept !== undefined) {
      // Most recently used goes last.
      this.keptTerms.delete(term);
      this.keptTerms.set(term, kept);
    }
    return kept;
  }

  /**
   * Sets the items whose name contains `term`: the union of the lists of the tokens containing it. A union
   * that read more than size / 256 postings is kept (the least recently used of KEPT_TERMS goes).
   */
  private termItems(term: string, into: Bitset): void {
    let read = 0;
    for (const token of this.tokensContaining(term)) read += orPostings(this.tokenPostings, token, into);
    if (read * 256 <= this.size) return;
    if (this.keptTerms.size >= KEPT_TERMS) this.keptTerms.delete(this.keptTerms.keys().next().value!);
    this.keptTerms.set(term, into.slice());
  }

  /** The tokens containing `term`, by a scan of the token string. */
  private tokensContaining(term: string): number[] {
    const { tokens, tokenStarts } = this;
    const found: number[] = [];
    let token = 0;
    for (let at = tokens.indexOf(term); at >= 0; at = tokens.indexOf(term, tokenStarts[token + 1])) {
      token = this.tokenAt(at, token);
      found.push(token);
    }
    return found;
  }

  /**
   * Build step: computes the items of every term of 1..PRECOMPUTED_TERM_LENGTH characters whose union would
   * read more than size / 8 postings. `counts` holds each token's number of items.
   */
  async precomputeHeavyTerms(counts: Uint32Array, pause: () => Promise<void>): Promise<void> {
    const cost = new Map<string, number>();
    const { tokens, tokenStarts } = this;
    for (let k = 0; k + 1 < tokenStarts.length; k++) {
      const token = tokens.slice(tokenStarts[k], tokenStarts[k + 1]! - TOKEN_SEPARATOR.length);
      const seen = new Set<string>();
      for (let length = 1; length <= PRECOMPUTED_TERM_LENGTH; length++) {
        for (let i = 0; i + length <= token.length; i++) seen.add(token.slice(i, i + length));
      }
      for (const term of seen) cost.set(term, (cost.get(term) ?? 0) + counts[k]!);
      if ((k & 0xff) === 0) await pause();
    }
    const threshold = this.size / 8;
    for (const [term, postings] of cost) {
      if (postings <= threshold) continue;
      const bits = new Uint32Array(wordsFor(this.size));
      for (const token of this.tokensContaining(term)) {
        orPostings(this.tokenPostings, token, bits);
        await pause();
      }
      this.heavyTerms.set(term, bits);
    }
  }

  /** The token holding position `at` of the token string, searching on from token `from` (which starts at or before it). */
  private tokenAt(at: number, from: number): number {
    const starts = this.tokenStarts;
    // Gallop, then bisect: hits are ascending, often close together, sometimes far apart.
    let low = from;
    let step = 1;
    let high = from + 1;
    while (high < starts.length - 1 && starts[high]! <= at) {
      low = high;
      step *= 2;
      high = low + step;
    }
    high = Math.min(high, starts.length - 1);
    while (high - low > 1) {
      const mid = (low + high) >>> 1;
      if (starts[mid]! <= at) low = mid;
      else high = mid;
    }
    return low;
  }

  private keyItems(codes: ReadonlyMap<string, number>, postings: Postings, key: string, into: Bitset): void {
    const code = codes.get(key);
    if (code !== undefined) orPostings(postings, code, into);
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

/** A growable Float64Array: masterItemIds reach 2^53. */
class IdList {
  data = new Float64Array(4096);
  length = 0;

  push(id: number): void {
    if (this.length === this.data.length) {
      const grown = new Float64Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = id;
  }
}

/** Builds an index from published items in ascending masterItemId, then the ids having a current price. */
export class SearchIndexBuilder {
  private readonly ids = new IdList();
  private readonly tokenCodes = new Map<string, number>();
  private readonly tokenPostings = new PostingsBuilder();
  private readonly platformCodes = new Map<string, number>();
  private readonly platformPostings = new PostingsBuilder();
  private readonly categoryCodes = new Map<string, number>();
  private readonly categoryPostings = new PostingsBuilder();
  private readonly pricedOrdinals: number[] = [];
  private pricedCursor = 0;

  addItem(id: number, searchName: string, platformKey: string, categoryKey: string): void {
    const ordinal = this.ids.length;
    if (ordinal > 0 && id <= this.ids.data[ordinal - 1]!) throw new Error('search index: items must come in ascending masterItemId');
    this.ids.push(id);
    for (const token of searchName.split(WHITE_SPACE_RUNS)) {
      if (token !== '') this.tokenPostings.add(code(this.tokenCodes, token), ordinal);
    }
    this.platformPostings.add(code(this.platformCodes, platformKey), ordinal);
    this.categoryPostings.add(code(this.categoryCodes, categoryKey), ordinal);
  }

  /** A masterItemId with a current price; in ascending order, after every item. Unpublished ones are skipped. */
  addPriced(id: number): void {
    const ids = this.ids.data;
    while (this.pricedCursor < this.ids.length && ids[this.pricedCursor]! < id) this.pricedCursor++;
    if (this.pricedCursor < this.ids.length && ids[this.pricedCursor] === id) this.pricedOrdinals.push(this.pricedCursor);
  }

  async build(version: number, pause: () => Promise<void>): Promise<SearchIndex> {
    const size = this.ids.length;
    const last = size > 0 ? this.ids.data[size - 1]! : 0;
    const ids = last <= 0xffffffff ? Uint32Array.from(this.ids.data.subarray(0, size)) : this.ids.data.slice(0, size);
    const tokenList = [...this.tokenCodes.keys()];
    const tokenStarts = new Uint32Array(tokenList.length + 1);
    for (let k = 0; k < tokenList.length; k++) tokenStarts[k + 1] = tokenStarts[k]! + tokenList[k]!.length + TOKEN_SEPARATOR.length;
    const tokens = tokenList.length === 0 ? '' : `${tokenList.join(TOKEN_SEPARATOR)}${TOKEN_SEPARATOR}`;
    await pause();
    const built = await this.tokenPostings.build(tokenList.length, size, pause);
    const tokenPostings = kept(built);
    const platformPostings = kept(await this.platformPostings.build(this.platformCodes.size, size, pause));
    const categoryPostings = kept(await this.categoryPostings.build(this.categoryCodes.size, size, pause));
    const priced = new Uint32Array(wordsFor(size));
    for (const ordinal of this.pricedOrdinals) priced[ordinal >>> 5]! |= 1 << (ordinal & 31);
    const index = new SearchIndex(
      version,
      ids,
      tokens,
      tokenStarts,
      tokenPostings,
      this.platformCodes,
      platformPostings,
      this.categoryCodes,
      categoryPostings,
      priced,
    );
    await index.precomputeHeavyTerms(built.counts, pause);
    return index;
  }
}

/** What the index keeps of built postings (not the counts). */
function kept({ starts, bytes }: Postings): Postings {
  return { starts, bytes };
}

function code(codes: Map<string, number>, key: string): number {
  let known = codes.get(key);
  if (known === undefined) {
    known = codes.size;
    codes.set(key, known);
  }
  return known;
}
