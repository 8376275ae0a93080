/**
 * What every section of a load shares: the transaction, the load's time, the accounts of the file so far,
 * the result being built, and the walk over a section's rows that checks each one and reports progress.
 */
import type { Kysely } from 'kysely';
import type { DatasetSection } from '../domain/dataset.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import type { BulkInserter, Row } from './bulk-insert.js';
import { DatasetError } from './dataset-error.js';
import { columnsOf, rowFault, type Obj } from './dataset-rows.js';
import { quoted, type BadRows } from '../errors/bad-rows.js';
import { sectionSize, type ProgressSink } from './progress.js';

/** A dataset whose big sections may be lazy iterables (the demo generator), or plain parsed JSON. */
export type DatasetInput = { [S in DatasetSection]?: unknown };

export interface LoadResult {
  accounts: Record<string, number>;
  keys: Record<string, string>;
  counts: Record<string, number>;
}

export interface LoadContext {
  store: Store;
  trx: Kysely<Database>;
  input: DatasetInput;
  keyPrefix: string;
  now: number;
  nowIso: string;
  progress: ProgressSink;
  bulk: BulkInserter;
  out: LoadResult;
  /** Account refs of this file, and the ids their accounts were given. */
  accountIds: Map<string, number>;
  /** The id of the account of this file `ref` names; refuses row `where` when there is none. */
  accountIdOf: (where: string, field: string, ref: unknown) => number;
  /** The rows refused so far: the load goes on checking, and is refused with all of them at the end. */
  bad: BadRows;
}

/** Small sections are checked row by row (a query each): told every this many rows, not every row. */
const PROGRESS_EVERY = 1000;

function rowsOf(section: string, value: unknown): Iterable<unknown> {
  if (value === undefined) return [];
  if (typeof value === 'object' && value !== null && Symbol.iterator in value && typeof value !== 'string') {
    return value as Iterable<unknown>;
  }
  throw new DatasetError(`${section}: must be a list`);
}

/**
 * The number of the row of `section` whose `key` is `value`, when the input has one: a reference to a row
 * that was refused then says so, rather than that no such row exists. Only asked for a reference found
 * missing, and only of a section given as a list (the small sections: a walk of the list each time).
 */
export function rowOfFile(input: DatasetInput, section: DatasetSection, key: string, value: unknown): number | null {
  const rows = input[section];
  if (!Array.isArray(rows)) return null;
  const index = rows.findIndex((row: unknown) => typeof row === 'object' && row !== null && (row as Obj)[key] === value);
  return index < 0 ? null : index + 1;
}

/** Refuses row `where` for its `field`, which names `value`, a row that does not exist: or one of the file that was refused. */
export function missingRow(input: DatasetInput, where: string, field: string, value: unknown, target: { section: DatasetSection; key: string }, missing: string): DatasetError {
  const n = rowOfFile(input, target.section, target.key, value);
  const why = n === null ? missing : `is ${target.section} row ${n} of this file, which is refused`;
  return new DatasetError(`${where}: ${field} ${typeof value === 'string' ? `'${value}'` : String(value)} ${why}`, { field, value });
}

/** The ctx.accountIdOf of a load: the ids of the accounts of this file so far, by ref. */
export function accountRefs(input: DatasetInput, accountIds: Map<string, number>): (where: string, field: string, ref: unknown) => number {
  return (where, field, ref) => {
    const found = accountIds.get(ref as string);
    if (found === undefined) throw missingRow(input, where, field, ref, { section: 'accounts', key: 'ref' }, 'is not an account of this file');
    return found;
  };
}

/** The columns row `where` of `section` is stored as (dataset-rows.ts), its account refs resolved. */
export function columnsFor(ctx: LoadContext, section: DatasetSection, row: Obj, where: string): Row {
  return columnsOf(section, row, where, ctx.nowIso, ctx.accountIdOf);
}

/**
 * Refuses row `n` of `section` (recorded in ctx.bad, the load goes on), for `error`, a DatasetError whose
 * message starts with the row's name. A fatal one (the store refused a write) ends the load at once.
 */
export function refuseRow(ctx: LoadContext, section: DatasetSection, n: number, error: DatasetError): void {
  const where = `${section} row ${n}: `;
  const message = error.message.startsWith(where) ? error.message.slice(where.length) : error.message;
  ctx.bad.add({ section, line: n, column: error.field, value: error.value === undefined ? null : error.value, message });
  if (error.fatal) throw ctx.bad.error() ?? error;
}

/**
 * Walks the rows of `section`: a row its schema refuses, or whose `visit` refuses it (a DatasetError), is
 * recorded in ctx.bad and skipped, and the walk goes on; each good row is handed to `visit` with its number
 * and its name for messages ("listings row 3"). `afterRows` writes what the visits gathered. Progress hears
 * of the section only when the input has it: an empty display line for every absent section would be
 * noise. `perRow`: told every PROGRESS_EVERY rows (sections written in batches tell progress themselves,
 * a batch at a time).
 */
export async function loadSection(
  ctx: LoadContext,
  section: DatasetSection,
  visit: (row: Obj, n: number, where: string) => Promise<void> | void,
  options: { perRow: boolean; afterRows?: (rows: number) => Promise<void> },
): Promise<number> {
  const value = ctx.input[section];
  if (value !== undefined) ctx.progress.start(section, sectionSize(value));
  let n = 0;
  for (const raw of rowsOf(section, value)) {
    n++;
    if (options.perRow && n % PROGRESS_EVERY === 0) ctx.progress.update(n);
    const fault = rowFault(section, raw);
    if (fault !== null) {
      const detail = fault.field === null ? {} : { field: fault.field, value: fault.value };
      const got = fault.field !== null && fault.value !== null && !fault.problem.startsWith('unknown field') ? `, got ${quoted(fault.value)}` : '';
      refuseRow(ctx, section, n, new DatasetError(`${fault.problem}${got}`, detail));
      continue;
    }
    try {
      await visit(raw as Obj, n, `${section} row ${n}`);
    } catch (error) {
      if (!(error instanceof DatasetError)) throw error;
      refuseRow(ctx, section, n, error);
    }
  }
  await options.afterRows?.(n);
  ctx.out.counts[section] = n;
  if (value !== undefined) ctx.progress.end(n);
  return n;
}

/** Sections checked row by row against the store (a query or two each), written at the end in one go. */
export async function rowByRow(
  ctx: LoadContext,
  section: DatasetSection,
  table: keyof Database,
  toRow: (row: Obj, n: number, where: string) => Promise<Row>,
): Promise<void> {
  const rows: Row[] = [];
  await loadSection(ctx, section, async (row, n, where) => void rows.push(await toRow(row, n, where)), {
    perRow: true,
    afterRows: async () => {
      await ctx.bulk.insert(table, rows);
      await ctx.bulk.flush();
    },
  });
}
