/** Offset pagination shared by every list query. */
import type { SelectQueryBuilder } from 'kysely';
export interface PageRequest {
  limit: number;
  offset: number;
}

export interface Page<T> {
  data: T[];
  pagination: { total: number; limit: number; offset: number; hasMore: boolean };
}

export function toPage<T>(data: T[], total: number, page: PageRequest): Page<T> {
  return {
    data,
    pagination: { total, limit: page.limit, offset: page.offset, hasMore: page.offset + data.length < total },
  };
}

export function toBool(flag: number): boolean {
  return flag !== 0;
}

/** The number of rows `query` matches: a list's total. */
export async function countRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): Promise<number> {
  // $castTo: Kysely cannot resolve the selection's type through a generic table set; it is this one column.
  const row = await query
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .$castTo<{ total: number | string | bigint }>()
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/** The rows of one page of `query`, which gives their order. */
export function pageRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, page: PageRequest) {
  return query.limit(page.limit).offset(page.offset).execute();
}

/** One page of `rows`, which gives their order, and the total of `counted`: the same rows, or the same count cheaper. */
export async function pageWithTotal<DB, TB extends keyof DB, O, CDB, CTB extends keyof CDB, CO>(
  rows: SelectQueryBuilder<DB, TB, O>,
  counted: SelectQueryBuilder<CDB, CTB, CO>,
  page: PageRequest,
) {
  const [data, total] = await Promise.all([pageRows(rows, page), countRows(counted)]);
  return toPage(data, total, page);
}
