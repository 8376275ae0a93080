/** Builds a SearchIndex from published items in ascending masterItemId, then the ids having a current price. */
import { wordsFor } from './bitset.js';
import { PostingsBuilder, type Postings } from './postings.js';
import { SearchIndex } from './search-index.js';
import { heavyTermSets, TermSets } from './term-sets.js';
import { TokenTable } from './token-table.js';
import { WHITE_SPACE_RUNS } from '../search-text.js';

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
    const tokens = TokenTable.of([...this.tokenCodes.keys()]);
    await pause();
    const built = await this.tokenPostings.build(tokens.count, size, pause);
    const tokenPostings = kept(built);
    const platformPostings = kept(await this.platformPostings.build(this.platformCodes.size, size, pause));
    const categoryPostings = kept(await this.categoryPostings.build(this.categoryCodes.size, size, pause));
    const priced = new Uint32Array(wordsFor(size));
    for (const ordinal of this.pricedOrdinals) priced[ordinal >>> 5]! |= 1 << (ordinal & 31);
    const heavy = await heavyTermSets(tokens, tokenPostings, built.counts, size, pause);
    return new SearchIndex(version, ids, {
      tokens,
      tokenPostings,
      platformCodes: this.platformCodes,
      platformPostings,
      categoryCodes: this.categoryCodes,
      categoryPostings,
      priced,
      termSets: new TermSets(heavy),
    });
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
