/**
 * A streaming reader for the export's CSV (RFC 4180: CRLF line ends, fields quoted when they hold `,`
 * `"` CR or LF, quotes doubled). Names can hold commas, quotes and line breaks, so splitting lines on
 * `\n` and fields on `,` would be wrong; this keeps memory to one record whatever the file's size.
 */
import type { PriceRow } from './types.js';

/** The export's columns, in order. */
export const PRICE_CSV_COLUMNS = [
  'masterItemId', 'name', 'slug', 'platform', 'category', 'upc',
  'loose', 'cib', 'new', 'boxOnly', 'manualOnly', 'scrapeDate',
] as const satisfies ReadonlyArray<keyof PriceRow>;

/** Malformed CSV: `line` is the 1-based line of the input (counting line feeds) where the fault is. */
export class CsvSyntaxError extends Error {
  override readonly name = 'CsvSyntaxError';
  readonly line: number;

  constructor(line: number, reason: string) {
    super(`line ${line}: ${reason}`);
    this.line = line;
  }
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;

const FIELD_START = 0;
const UNQUOTED = 1;
const QUOTED = 2;
/** Just read a `"` inside a quoted field: either the first half of `""` or the closing quote. */
const AFTER_QUOTE = 3;
/** Read a CR after a closing quote: the field is over, so only `,` or a line end may follow. */
const CLOSED = 4;
type State = typeof FIELD_START | typeof UNQUOTED | typeof QUOTED | typeof AFTER_QUOTE | typeof CLOSED;

/** Index of `char` in `s` from `from`, or `s.length` when there is none. */
function indexOrEnd(s: string, char: string, from: number): number {
  const at = s.indexOf(char, from);
  return at === -1 ? s.length : at;
}

/**
 * A resumable state machine, since text arrives in arbitrary pieces. Fields are cut out of each piece
 * with `slice`; only a field split across pieces is concatenated, which keeps it as fast as the server
 * writes. A CR outside quotes is dropped (CRLF and LF both end a record); a blank line is a record of one
 * empty field, so a caller checking the column count notices it.
 */
class Reader {
  private state: State = FIELD_START;
  private line = 1;
  /** Where the open quote of the current quoted field is: an unterminated field is reported there. */
  private quoteLine = 1;
  private record: string[] = [];
  /** The current field's text from earlier pieces (and before a dropped CR). */
  private partial = '';

  push(s: string, out: string[][]): void {
    const n = s.length;
    let state = this.state;
    let line = this.line;
    let i = 0;
    let start = 0;
    // Where the next `"` and CR of this piece are (n: none), found with indexOf as the scan passes them.
    let nextQuote = -1;
    let nextCr = -1;
    while (i < n) {
      if (state === FIELD_START && this.record.length === 0) {
        // Fast path for a whole record without quotes or stray CRs, which is nearly every export line:
        // split cuts its fields in native code.
        const lf = s.indexOf('\n', i);
        if (lf !== -1) {
          if (nextQuote < i) nextQuote = indexOrEnd(s, '"', i);
          if (nextCr < i) nextCr = indexOrEnd(s, '\r', i);
          const end = nextCr === lf - 1 ? lf - 1 : lf;
          if (nextQuote > lf && nextCr >= end) {
            out.push(s.slice(i, end).split(','));
            i = lf + 1;
            line++;
            continue;
          }
        }
      }
      if (state === FIELD_START) {
        const c = s.charCodeAt(i++);
        if (c === QUOTE) {
          state = QUOTED;
          this.quoteLine = line;
          start = i;
        } else if (c === COMMA || c === LF) {
          this.endField('', c, out);
          if (c === LF) line++;
        } else if (c !== CR) {
          state = UNQUOTED;
          start = i - 1;
        }
      } else if (state === UNQUOTED) {
        let j = i;
        let c = 0;
        while (j < n) {
          c = s.charCodeAt(j);
          if (c === COMMA || c === LF || c === CR || c === QUOTE) break;
          j++;
        }
        i = j + 1;
        if (j === n) break;
        if (c === QUOTE) throw new CsvSyntaxError(line, 'quote inside an unquoted field (a field with a quote must be quoted, the quote doubled)');
        const text = this.partial + s.slice(start, j);
        this.partial = '';
        if (c === CR) {
          this.partial = text;
          start = i;
          continue;
        }
        this.endField(text, c, out);
        state = FIELD_START;
        if (c === LF) line++;
      } else if (state === QUOTED) {
        let j = i;
        while (j < n) {
          const c = s.charCodeAt(j);
          if (c === QUOTE) break;
          if (c === LF) line++;
          j++;
        }
        if (j === n) break;
        this.partial += s.slice(start, j);
        state = AFTER_QUOTE;
        i = j + 1;
      } else {
        const c = s.charCodeAt(i++);
        if (c === QUOTE && state === AFTER_QUOTE) {
          // A doubled quote: the next slice starts at the second one, so it yields one.
          state = QUOTED;
          start = i - 1;
        } else if (c === COMMA || c === LF) {
          this.endField(this.partial, c, out);
          this.partial = '';
          state = FIELD_START;
          if (c === LF) line++;
        } else if (c === CR) {
          state = CLOSED;
        } else {
          throw new CsvSyntaxError(line, 'text after a closing quote (expected "," or a line end)');
        }
      }
    }
    // The piece ended inside a field: keep its text so far for the next piece.
    if (state === UNQUOTED || state === QUOTED) this.partial += s.slice(start, n);
    this.state = state;
    this.line = line;
  }

  end(out: string[][]): void {
    if (this.state === QUOTED) {
      throw new CsvSyntaxError(this.quoteLine, 'unterminated quoted field: the input ended inside it (cut short?)');
    }
    // A record without its final line end; after a comma, its last field is empty.
    if (this.state !== FIELD_START || this.record.length > 0) this.endField(this.partial, LF, out);
    this.partial = '';
    this.state = FIELD_START;
  }

  /** Ends the current field with `text`, and the record too when `c` is a line feed. */
  private endField(text: string, c: number, out: string[][]): void {
    this.record.push(text);
    if (c === LF) {
      out.push(this.record);
      this.record = [];
    }
  }
}

/**
 * The records of each chunk of the source, as one array a chunk: a consumer then pays for one `await` a
 * chunk rather than one a record (an export has a million records). A syntax error is thrown after the
 * records before it.
 */
async function* recordBatches(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<string[][]> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const reader = new Reader();
  for await (const chunk of source) {
    const out: string[][] = [];
    let failure: unknown;
    try {
      reader.push(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }), out);
    } catch (error) {
      failure = error;
    }
    if (out.length > 0) yield out;
    if (failure !== undefined) throw failure;
  }
  const out: string[][] = [];
  reader.push(decoder.decode(), out);
  reader.end(out);
  if (out.length > 0) yield out;
}

/**
 * Every record of a CSV byte or text stream as an array of fields, the header included. Accepts a web
 * `ReadableStream` (what `exportPricesCsv()` returns) or any async iterable of chunks (a Node file stream).
 * Malformed quoting (a quote inside an unquoted field, text after a closing quote, a quoted field still
 * open at the end) throws a `CsvSyntaxError` naming the line, after the records before it.
 */
export async function* csvRecords(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<string[]> {
  // A loop rather than `yield* batch`, which costs an extra await a record.
  for await (const batch of recordBatches(source)) for (const record of batch) yield record;
}

function priceOrNull(text: string): number | null {
  return text === '' ? null : Number(text);
}

/**
 * The export's rows as the same objects `/prices` returns: numbers for ids and prices, `null` for an
 * empty price (the export writes `null` as an empty field).
 */
export async function* priceRows(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<PriceRow> {
  let header = true;
  for await (const batch of recordBatches(source)) {
    for (const fields of batch) {
      if (header) {
        header = false;
        if (fields.join(',') !== PRICE_CSV_COLUMNS.join(',')) {
          // Guessing which column is which would silently mislabel prices: refuse instead.
          throw new Error(`the export's header is not the one this client knows: ${fields.join(',')}`);
        }
        continue;
      }
      const [masterItemId, name, slug, platform, category, upc, loose, cib, fresh, boxOnly, manualOnly, scrapeDate] = fields;
      yield {
        masterItemId: Number(masterItemId),
        name: name ?? '',
        slug: slug ?? '',
        platform: platform ?? '',
        category: category ?? '',
        upc: upc ?? '',
        loose: priceOrNull(loose ?? ''),
        cib: priceOrNull(cib ?? ''),
        new: priceOrNull(fresh ?? ''),
        boxOnly: priceOrNull(boxOnly ?? ''),
        manualOnly: priceOrNull(manualOnly ?? ''),
        scrapeDate: scrapeDate ?? '',
      };
    }
  }
}
