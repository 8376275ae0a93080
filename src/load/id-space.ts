/** Ids of the tables a dataset writes: those a file declares, those it is given, and clashes with the store. */
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { DatasetError } from './dataset-error.js';

type Obj = Record<string, unknown>;
export type IdTable = 'catalogue_items' | 'collection_items' | 'listings' | 'offers' | 'transactions';

/** Ids of one table: those in the store, those taken by the file so far, and the next free one. */
export class IdSpace {
  private readonly taken = new Set<number>();
  private constructor(
    /** The field of a row that gives the id, named in refusals. */
    private readonly field: string,
    private next: number,
    private readonly existsInStore: (ids: number[]) => Promise<Set<number>>,
  ) {}

  /** `declared`: every id the file gives for this table, so that rows without one are numbered after them. */
  static async open(db: Kysely<Database>, table: IdTable, column: string, declared: number[], field = 'id'): Promise<IdSpace> {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- table and column are fixed strings of this module
    const anyDb = db as Kysely<any>;
    const row = (await anyDb.selectFrom(table).select((eb) => eb.fn.max(column).as('max')).executeTakeFirst()) as { max: number | null } | undefined;
    // A loop, not Math.max(...declared): spreading more than ~125,000 ids overflows the call stack
    // ("Maximum call stack size exceeded"), which refused any large catalogue that gives its ids.
    let largest = Number(row?.max ?? 0);
    for (const value of declared) if (value > largest) largest = value;
    const next = largest + 1;
    // Ids above the store's largest when the load began are not in the store: no query for them (a load of
    // new rows, and every seed, then asks nothing). Rows this load wrote are the file's own (hasInFile).
    const storeLargest = Number(row?.max ?? 0);
    return new IdSpace(field, next, async (all) => {
      const found = new Set<number>();
      const ids = all.filter((id) => id <= storeLargest);
      for (let i = 0; i < ids.length; i += 500) {
        const rows = (await anyDb.selectFrom(table).select(column).where(column, 'in', ids.slice(i, i + 500)).execute()) as Obj[];
        for (const r of rows) found.add(Number(r[column]));
      }
      return found;
    });
  }

  /** Takes a declared id or assigns the next free one; throws the reason when the id is in use. */
  take(declared: unknown, where: string): number {
    if (declared === undefined) {
      while (this.taken.has(this.next)) this.next++;
      const assigned = this.next++;
      this.taken.add(assigned);
      return assigned;
    }
    const value = declared as number;
    const field = this.field;
    if (this.taken.has(value)) throw new DatasetError(`${where}: id ${value} appears twice in the file`, { field, value });
    this.taken.add(value);
    return value;
  }

  /** take(), refusing an id that a row of the store already has. */
  async takeNew(declared: unknown, where: string): Promise<number> {
    const id = this.take(declared, where);
    const field = this.field;
    if ((await this.existsInStore([id])).size > 0) throw new DatasetError(`${where}: id ${id} already exists in the store`, { field, value: id });
    return id;
  }

  hasInFile(value: number): boolean {
    return this.taken.has(value);
  }

  async conflictsWithStore(ids: number[]): Promise<Set<number>> {
    return this.existsInStore(ids);
  }
}

/** The ids a section of the file declares in `field` (well-formed ones; the rows are checked later). */
export function declaredIds(value: unknown, field: string): number[] {
  if (!Array.isArray(value)) return [];
  const out: number[] = [];
  for (const row of value) {
    const v = (row as Obj | null)?.[field];
    if (typeof v === 'number' && Number.isSafeInteger(v)) out.push(v);
  }
  return out;
}
