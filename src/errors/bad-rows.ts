/**
 * The bad lines of a file a command reads whole (`import prices`, `load`): every one is found, the first
 * REPORTED_BAD_ROWS by position are reported (line number, column, the value refused, why), the rest
 * counted. The file is refused as a whole with all of them, and nothing of it is written.
 */
import { InputError } from './input-error.js';

/** How many bad lines a refusal lists; it counts the rest ("and 50 more bad lines"). */
export const REPORTED_BAD_ROWS = 100;

/** A refused value longer than this is cut in the report: a 100 kB field must not fill a terminal. */
const VALUE_CHARS = 80;

export interface BadRow {
  /** The CSV's physical line (1-based), or the row's number (1-based) within its dataset section. */
  line: number;
  /** A dataset's section; absent for a CSV. */
  section?: string;
  /** The column (CSV) or field (dataset) holding the refused value; null when the whole line is at fault. */
  column: string | null;
  /** The value refused, as read (a CSV field is text); null when there is none (a missing field, a short line). */
  value: unknown;
  /** Why, without the location. */
  message: string;
}

/** A value as a report shows it: JSON, cut to VALUE_CHARS characters. */
export function quoted(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > VALUE_CHARS ? `${text.slice(0, VALUE_CHARS)}…` : text;
}

/** Where a bad row is, as a message starts: "line 4" or "prices row 3". */
export function whereOf(row: BadRow): string {
  return row.section === undefined ? `line ${row.line}` : `${row.section} row ${row.line}`;
}

/** The one line a bad row is reported as. */
export function badRowText(row: BadRow): string {
  return `${whereOf(row)}: ${row.message}`;
}

/**
 * Bad rows as they are found, which is not always in file order (the catalogue check of a batch runs after
 * the checks of its lines): the REPORTED_BAD_ROWS first in file order are kept, every one is counted.
 */
export class BadRows {
  private kept: BadRow[] = [];
  private total = 0;
  /** Orders rows of a dataset by section (in `sections` order), then row; a CSV by line. */
  constructor(private readonly sections: readonly string[] = []) {}

  add(row: BadRow): void {
    this.total++;
    this.kept.push(row);
    // Cut back now and then, not at every row: a file of a million bad lines keeps at most twice the report.
    if (this.kept.length >= 2 * REPORTED_BAD_ROWS) this.cut();
  }

  get count(): number {
    return this.total;
  }

  /** The error refusing the file, or null when no row was bad. */
  error(): BadRowsError | null {
    if (this.total === 0) return null;
    this.cut();
    return new BadRowsError(this.kept, this.total - this.kept.length);
  }

  private cut(): void {
    const order = (row: BadRow) => (row.section === undefined ? 0 : this.sections.indexOf(row.section));
    this.kept.sort((a, b) => order(a) - order(b) || a.line - b.line);
    this.kept = this.kept.slice(0, REPORTED_BAD_ROWS);
  }
}

/**
 * A file refused for its bad rows: `rows` (at most REPORTED_BAD_ROWS, in file order) and `more` beyond them.
 * The message is one line per bad row, then "and N more bad lines" when there are more.
 */
export class BadRowsError extends InputError {
  constructor(
    readonly rows: readonly BadRow[],
    readonly more: number,
  ) {
    super([...rows.map(badRowText), ...(more > 0 ? [`and ${more} more bad ${more === 1 ? 'line' : 'lines'}`] : [])].join('\n'));
    this.name = 'BadRowsError';
  }

  /** How many rows were bad in all. */
  get total(): number {
    return this.rows.length + this.more;
  }
}

/** A refusal in one line, for a caller that lists the rows elsewhere (the command line's --json). */
export function badRowsSummary(error: BadRowsError): string {
  return `${error.total} bad ${error.total === 1 ? 'line' : 'lines'}; nothing written`;
}

/** The refusal as `--json` prints it: `{ "errors": [{line, column, value, message}], "more": N }`. */
export function badRowsJson(error: BadRowsError): { errors: readonly BadRow[]; more: number } {
  return { errors: error.rows, more: error.more };
}
