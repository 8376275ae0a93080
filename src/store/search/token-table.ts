/**
 * The index's name tokens: every distinct white-space-delimited token of the folded names, once, in one
 * string, each followed by a separator, with the offset of each. A term's tokens are found by scanning that
 * string (a few MB) for the term, never by reading a name back.
 */

/** Ends every token in the string: a character no token holds (tokens are split on white space). */
const TOKEN_SEPARATOR = '\n';

export class TokenTable {
  private constructor(
    /** Every distinct token, each followed by TOKEN_SEPARATOR. */
    private readonly text: string,
    /** Offset of each token in `text`, and its length at the end. */
    private readonly starts: Uint32Array,
  ) {}

  /** The table of these tokens, token k being list[k]. */
  static of(list: readonly string[]): TokenTable {
    const starts = new Uint32Array(list.length + 1);
    for (let k = 0; k < list.length; k++) starts[k + 1] = starts[k]! + list[k]!.length + TOKEN_SEPARATOR.length;
    const text = list.length === 0 ? '' : `${list.join(TOKEN_SEPARATOR)}${TOKEN_SEPARATOR}`;
    return new TokenTable(text, starts);
  }

  get count(): number {
    return this.starts.length - 1;
  }

  /** Bytes held: the offsets and the string (one byte per character when all are Latin-1). */
  get bytes(): number {
    const charBytes = /[\u0100-\u{10ffff}]/u.test(this.text) ? 2 : 1;
    return this.text.length * charBytes + this.starts.byteLength;
  }

  /** Token k's text. */
  token(k: number): string {
    return this.text.slice(this.starts[k], this.starts[k + 1]! - TOKEN_SEPARATOR.length);
  }

  /** The tokens containing `term` (never empty), by a scan of the token string. */
  containing(term: string): number[] {
    const { text, starts } = this;
    const found: number[] = [];
    let token = 0;
    for (let at = text.indexOf(term); at >= 0; at = text.indexOf(term, starts[token + 1])) {
      token = this.tokenAt(at, token);
      found.push(token);
    }
    return found;
  }

  /** The token holding position `at` of the token string, searching on from token `from` (which starts at or before it). */
  private tokenAt(at: number, from: number): number {
    const starts = this.starts;
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
}
