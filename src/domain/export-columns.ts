/**
 * The columns of the CSV price export, in their order (docs/contract.md, "Values and data rules"): every
 * field of a price row, as /prices serves it. The CSV header and the order of each row's values, the order
 * the store selects a price row's columns in, the columns `shelfapi import prices` reads and the list the
 * OpenAPI document gives all come from this one list.
 */
import type { PriceRow } from './resources.js';

export const EXPORT_COLUMNS = [
  'masterItemId', 'name', 'slug', 'platform', 'category', 'upc',
  'loose', 'cib', 'new', 'boxOnly', 'manualOnly', 'scrapeDate',
] as const satisfies ReadonlyArray<keyof PriceRow>;
export type ExportColumn = (typeof EXPORT_COLUMNS)[number];
