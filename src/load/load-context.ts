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
import { columnsOf, rowProblem, type Obj } from './dataset-rows.js';
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

/** The ctx.accountIdOf of a load: the ids of the accounts of this file so far, by ref. */
export function accountRefs(accountIds: Map<string, number>): (where: string, field: string, ref: unknown) => number {
  return (where, field, ref) => {
    const found = accountIds.get(ref as string);
    if (found === undefined) throw new DatasetError(`${where}: ${field} '${String(ref)}' is not an account of this file`);
    return found;
  };
}

/** The columns row `where` of `section` is stored as (dataset-rows.ts), its account refs resolved. */
export function columnsFor(ctx: LoadContext, section: DatasetSection, row: Obj, where: string): Row {
  return columnsOf(section, row, where, ctx.nowIso, ctx.accountIdOf);
}

/**
 * Walks the rows of `section`: refuses the first one its schema refuses, naming it, and hands each good
 * one to `visit` with its number and its name for messages ("listings row 3"). `afterRows` writes what the
 * visits gathered. Progress hears of the section only when the input has it: an empty display line for
 * every absent section would be noise. `perRow`: told every PROGRESS_EVERY rows (sections written in
 * batches tell progress themselves, a batch at a time).
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
    const problem = rowProblem(section, raw);
    if (problem !== null) throw new DatasetError(`${section} row ${n}: ${problem}`);
    if (options.perRow && n % PROGRESS_EVERY === 0) ctx.progress.update(n);
    await visit(raw as Obj, n, `${section} row ${n}`);
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
