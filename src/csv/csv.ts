/**
 * CSV for the price export and `shelfapi import prices` (docs/contract.md, "Values and data rules", "Operator command line"): an RFC 4180
 * writer, and a streaming parser strict enough that an all-or-nothing import can refuse a file and name
 * the line at fault. No dependencies, so both the HTTP export and the CLI can use it.
 */
import { isUtf8 } from 'node:buffer';

// Only these four characters force quoting (docs/contract.md, "Values and data rules"); anything else is written as is.
const NEEDS_QUOTING = /[",\r\n]/;

/** One field, RFC 4180 quoted when needed; `null` is an empty field. */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  const text = typeof value === 'number' ? String(value) : value;
  return NEEDS_QUOTING.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * One record with its CRLF terminator. An empty string and `null` are both written as an empty field:
 * the spec quotes only for `,` `"` CR LF, so a reader cannot tell them apart.
 */
export function csvLine(values: ReadonlyArray<string | number | null>): string {
  // A plain loop: the export writes a million of these, and map + join allocate twice per row.
  let line = '';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) line += ',';
    const value = values[i] as string | number | null;
    line += typeof value === 'number' ? String(value) : value === null ? '' : csvField(value);
  }
  return line + '\r\n';
}

export interface CsvRecord {
  fields: string[];
  /** `quoted[i]` is true when field i was written in quotes, so `""` can be told from an empty field. */
  quoted: boolean[];
  /** 1-based physical line where the record starts (a quoted field may span lines). */
  line: number;
  /** 1-based record number; the header is record 1. */
  record: number;
}

export class CsvSyntaxError extends Error {
  override readonly name = 'CsvSyntaxError';
  readonly line: number;
  /** The message without its `line N: ` prefix, for callers that format the location themselves. */
  readonly reason: string;

  constructor(line: number, reason: string) {
    super(`line ${line}: ${reason}`);
    this.line = line;
    this.reason = reason;
  }
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;
/**
 * A cell of a CSV meant for a person's spreadsheet (the settings screen's downloads), not for the API's
 * export: text an owner or a client chose (a key's name, a path) that starts like a formula is prefixed
 * with `'`, so that a spreadsheet shows it instead of evaluating it (OWASP, "CSV Injection").
 */
export function spreadsheetText(value: string | null): string | null {
  if (value === null) return null;
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

const BOM = 0xfeff;

const FIELD_START = 0;
const UNQUOTED = 1;
const QUOTED = 2;
/** Just read a `"` inside a quoted field: either the first half of `""` or the closing quote. */
const QUOTE_IN_QUOTED = 3;
/** Just ended a record at a CR outside quotes: only LF may follow. */
const AFTER_CR = 4;
type State = typeof FIELD_START | typeof UNQUOTED | typeof QUOTED | typeof QUOTE_IN_QUOTED | typeof AFTER_CR;

/**
 * Resumable state machine: text arrives in arbitrary pieces, so every piece of state that would
 * otherwise live on the stack (current field, open quote, pending CR) is kept between calls.
 *
 * Choices beyond RFC 4180:
 * - Bare LF ends a record as CRLF does (aggregators are sloppy). A CR outside quotes must be followed by
 *   LF: a lone CR is an error rather than a guess at old Mac line ends, since the import is
 *   all-or-nothing and a misread file is worse than a refused one. A CR at the very end of input is
 *   accepted as a truncated CRLF.
 * - A blank line in the middle is a record of one empty unquoted field, not skipped: the caller sees a
 *   wrong column count and can name the line, instead of silently accepting a mangled file. Blank lines
 *   at the end of input are dropped, because a trailing newline or two is harmless.
 * - Line numbers count LF characters only (CRLF is one line end; a CR inside a quoted field is data).
 */
class Parser {
  private state: State = FIELD_START;
  /** Line of the next character to be read. */
  line = 1;
  private recordLine = 1;
  /** Where the open quote of the current quoted field is: an unterminated quote is reported there. */
  private quoteLine = 1;
  private records = 0;
  private fields: string[] = [];
  private quoted: boolean[] = [];
  /** The current field's text from earlier pieces of input. */
  private partial = '';
  /** Blank lines not yet known to be followed by a record (see the class comment). */
  private blankLines: number[] = [];
  private atStart = true;

  push(s: string, out: CsvRecord[]): void {
    let i = 0;
    if (this.atStart) {
      if (s.length === 0) return;
      this.atStart = false;
      if (s.charCodeAt(0) === BOM) i = 1;
    }
    const n = s.length;
    // Fields are cut out with slice from `start`; only a field cut by a piece boundary is concatenated.
    let start = i;
    let state = this.state;
    let line = this.line;

    while (i < n) {
      if (state === FIELD_START) {
        const c = s.charCodeAt(i);
        if (this.fields.length === 0) {
          if (c === LF || c === CR) {
            this.blankLines.push(line);
            i++;
            if (c === LF) line++;
            else state = AFTER_CR;
            continue;
          }
          this.flushBlankLines(out);
          this.recordLine = line;
        }
        if (c === QUOTE) {
          state = QUOTED;
          this.quoteLine = line;
          start = ++i;
        } else if (c === COMMA || c === LF || c === CR) {
          this.addField('', false);
          i++;
          state = this.afterField(c, out);
          if (c === LF) line++;
        } else {
          state = UNQUOTED;
          start = i++;
        }
      } else if (state === UNQUOTED) {
        let j = i;
        let c = 0;
        while (j < n) {
          c = s.charCodeAt(j);
          if (c === COMMA || c === LF || c === CR || c === QUOTE) break;
          j++;
        }
        if (j === n) {
          i = n;
          continue;
        }
        if (c === QUOTE) throw new CsvSyntaxError(line, 'quote inside an unquoted field');
        this.addField(this.partial + s.slice(start, j), false);
        this.partial = '';
        i = j + 1;
        state = this.afterField(c, out);
        if (c === LF) line++;
      } else if (state === QUOTED) {
        let j = i;
        while (j < n) {
          const c = s.charCodeAt(j);
          if (c === QUOTE) break;
          if (c === LF) line++;
          j++;
        }
        if (j === n) {
          i = n;
          continue;
        }
        this.partial += s.slice(start, j);
        state = QUOTE_IN_QUOTED;
        i = j + 1;
      } else if (state === QUOTE_IN_QUOTED) {
        const c = s.charCodeAt(i);
        if (c === QUOTE) {
          // Start the next slice at this second quote, so a doubled quote yields one.
          state = QUOTED;
          start = i++;
        } else if (c === COMMA || c === LF || c === CR) {
          this.addField(this.partial, true);
          this.partial = '';
          i++;
          state = this.afterField(c, out);
          if (c === LF) line++;
        } else {
          throw new CsvSyntaxError(line, 'character after a closing quote (expected "," or a line end)');
        }
      } else {
        if (s.charCodeAt(i) !== LF) {
          throw new CsvSyntaxError(line, 'carriage return not followed by a line feed');
        }
        i++;
        line++;
        state = FIELD_START;
      }
    }

    // The piece ended inside a field: keep its text so far for the next piece.
    if (state === UNQUOTED || state === QUOTED) this.partial += s.slice(start, n);
    this.state = state;
    this.line = line;
  }

  end(out: CsvRecord[]): void {
    switch (this.state) {
      case QUOTED:
        throw new CsvSyntaxError(this.quoteLine, 'unterminated quoted field');
      case UNQUOTED:
      case QUOTE_IN_QUOTED:
        this.addField(this.partial, this.state === QUOTE_IN_QUOTED);
        this.partial = '';
        this.emit(out);
        break;
      case FIELD_START:
        // Input ended right after a comma: the record's last field is empty.
        if (this.fields.length > 0) {
          this.addField('', false);
          this.emit(out);
        }
        break;
      case AFTER_CR:
        break;
    }
    this.blankLines = [];
    this.state = FIELD_START;
  }

  /** A field has just ended at `c`, a comma or a line end: the state to go on in. A line end also ends the record. */
  private afterField(c: number, out: CsvRecord[]): State {
    if (c === COMMA) return FIELD_START;
    this.emit(out);
    return c === LF ? FIELD_START : AFTER_CR;
  }

  private addField(value: string, quoted: boolean): void {
    this.fields.push(value);
    this.quoted.push(quoted);
  }

  private emit(out: CsvRecord[]): void {
    out.push({ fields: this.fields, quoted: this.quoted, line: this.recordLine, record: ++this.records });
    this.fields = [];
    this.quoted = [];
  }

  private flushBlankLines(out: CsvRecord[]): void {
    if (this.blankLines.length === 0) return;
    for (const line of this.blankLines) {
      out.push({ fields: [''], quoted: [false], line, record: ++this.records });
    }
    this.blankLines = [];
  }
}

/**
 * Length of the prefix of `bytes` that holds only whole UTF-8 sequences; the rest waits for the next
 * chunk. A malformed tail is left in the prefix for validation to reject.
 */
function completeLength(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let back = 1; back <= 4 && back <= n; back++) {
    const b = bytes[n - back] ?? 0;
    if ((b & 0xc0) === 0x80) continue;
    const size = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return size > back ? n - back : n;
  }
  return n;
}

/**
 * Invalid UTF-8 is refused rather than replaced with U+FFFD, which would write mangled names into the
 * store. `firstLine` is the line the bytes start on; LF never occurs inside a multi-byte sequence, so
 * each line can be checked alone to name the one at fault.
 */
function decodeUtf8(bytes: Buffer, firstLine: number): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let line = firstLine;
  let from = 0;
  for (;;) {
    const nl = bytes.indexOf(LF, from);
    const to = nl === -1 ? bytes.length : nl;
    if (!isUtf8(bytes.subarray(from, to)) || nl === -1) break;
    from = nl + 1;
    line++;
  }
  throw new CsvSyntaxError(line, 'invalid UTF-8');
}

/**
 * Parses CSV from strings or UTF-8 Buffers (a file read stream, for example), yielding records as they
 * complete. A syntax error is thrown after the records before it have been yielded.
 */
export async function* parseCsv(
  input: AsyncIterable<string | Buffer> | Iterable<string>,
): AsyncGenerator<CsvRecord> {
  // A string is itself an Iterable<string>, one character at a time; take it as one piece instead.
  const source = typeof input === 'string' ? [input] : input;
  const parser = new Parser();
  const out: CsvRecord[] = [];
  let carry: Buffer | undefined;

  for await (const chunk of source) {
    let failure: CsvSyntaxError | undefined;
    try {
      if (typeof chunk === 'string') {
        if (carry) throw new CsvSyntaxError(parser.line, 'invalid UTF-8');
        parser.push(chunk, out);
      } else {
        const bytes = carry ? Buffer.concat([carry, chunk]) : chunk;
        const whole = completeLength(bytes);
        // Copied because a stream may reuse the chunk's memory.
        carry = whole < bytes.length ? Buffer.from(bytes.subarray(whole)) : undefined;
        parser.push(decodeUtf8(bytes.subarray(0, whole), parser.line), out);
      }
    } catch (err) {
      if (!(err instanceof CsvSyntaxError)) throw err;
      failure = err;
    }
    for (const record of out) yield record;
    out.length = 0;
    if (failure) throw failure;
  }

  if (carry) throw new CsvSyntaxError(parser.line, 'invalid UTF-8');
  parser.end(out);
  for (const record of out) yield record;
}
