/**
 * The big sections of a load, the catalogue and its price records: written in batches of BATCH rows, each
 * batch checked against the store with a query or two before it is written.
 */
import { foldText } from '../store/search-text.js';
import { catalogueBulk, refreshCurrentPrices, type Row } from './bulk-insert.js';
import { DatasetError } from './dataset-error.js';
import { declaredIds, IdSpace } from './id-space.js';
import type { Obj } from './dataset-rows.js';
import { columnsFor, loadSection, type LoadContext } from './load-context.js';
import { sectionFraction } from './progress.js';

const BATCH = 5000;

/** Rows gathered for one write, and the number of the first, to name a row the write's checks refuse. */
class Batch {
  private rows: Row[] = [];
  private firstRow = 1;
  constructor(private readonly write: (rows: Row[], firstRow: number) => Promise<void>) {}

  async add(row: Row, n: number): Promise<void> {
    this.rows.push(row);
    if (this.rows.length >= BATCH) await this.flush(n);
  }

  /** Writes what is gathered; `n` is the number of the last row read. */
  async flush(n: number): Promise<void> {
    if (this.rows.length === 0) return;
    await this.write(this.rows, this.firstRow);
    this.rows = [];
    this.firstRow = n + 1;
  }
}

/**
 * A big section: each row's columns, completed by `complete` (which may refuse the row), gathered into
 * batches that `write` checks against the store and writes. Progress hears of each batch written.
 */
async function inBatches(
  ctx: LoadContext,
  section: 'catalogue' | 'prices',
  write: (rows: Row[], firstRow: number) => Promise<void>,
  complete: (columns: Row, row: Obj, where: string) => void,
): Promise<void> {
  const fraction = sectionFraction(ctx.input[section]);
  const batch = new Batch(async (rows, firstRow) => {
    await write(rows, firstRow);
    ctx.progress.update(firstRow + rows.length - 1, fraction?.());
  });
  const visit = async (row: Obj, n: number, where: string) => {
    const columns = columnsFor(ctx, section, row, where);
    complete(columns, row, where);
    await batch.add(columns, n);
  };
  await loadSection(ctx, section, visit, { perRow: false, afterRows: (n) => batch.flush(n) });
}

/** The catalogue as the later sections see it: items of the store and items of this file. */
export interface CatalogueIds {
  /** Which of `ids` are items of the catalogue. */
  existing(ids: number[]): Promise<Set<number>>;
  /** Refuses row `where` when `masterItemId` is not an item of the catalogue. */
  require(masterItemId: number, where: string): Promise<void>;
}

export async function loadCatalogue(ctx: LoadContext): Promise<CatalogueIds> {
  const { store, trx, bulk, progress, input } = ctx;
  const items = await IdSpace.open(trx, 'catalogue_items', 'master_item_id', declaredIds(input.catalogue, 'masterItemId'));
  const existing = async (ids: number[]): Promise<Set<number>> => {
    const fromStore = await items.conflictsWithStore(ids.filter((i) => !items.hasInFile(i)));
    return new Set(ids.filter((i) => items.hasInFile(i) || fromStore.has(i)));
  };
  const catalogue = catalogueBulk(store, bulk, trx);
  const write = async (rows: Row[], firstRow: number) => {
    const clash = await items.conflictsWithStore(rows.map((r) => r.master_item_id as number));
    if (clash.size > 0) {
      const index = rows.findIndex((r) => clash.has(r.master_item_id as number));
      throw new DatasetError(`catalogue row ${firstRow + index}: masterItemId ${String(rows[index]?.master_item_id)} already exists in the store`);
    }
    await catalogue.insert(rows);
  };
  await inBatches(ctx, 'catalogue', write, (columns, row, where) => {
    columns.master_item_id = items.take(row.masterItemId, where);
    columns.search_name = foldText(row.name as string);
    columns.platform_key = (row.platform as string).toLowerCase();
    columns.category_key = (row.category as string).toLowerCase();
  });
  await catalogue.finish(progress);
  return {
    existing,
    async require(masterItemId, where) {
      if (!(await existing([masterItemId])).has(masterItemId)) {
        throw new DatasetError(`${where}: masterItemId ${masterItemId} is not in the catalogue`);
      }
    },
  };
}

export async function loadPrices(ctx: LoadContext, items: CatalogueIds): Promise<void> {
  const { trx, bulk, progress, input } = ctx;
  const priced = new Set<number>();
  const seenRecords = new Set<string>();
  const write = async (rows: Row[], firstRow: number) => {
    const ids = [...new Set(rows.map((r) => r.master_item_id as number))];
    const known = await items.existing(ids);
    const missing = rows.findIndex((r) => !known.has(r.master_item_id as number));
    if (missing >= 0) {
      throw new DatasetError(`prices row ${firstRow + missing}: masterItemId ${String(rows[missing]?.master_item_id)} is not in the catalogue`);
    }
    const existing = await trx.selectFrom('price_records').select(['master_item_id', 'scrape_date']).where('master_item_id', 'in', ids).execute();
    const clash = new Set(existing.map((r) => `${r.master_item_id}@${r.scrape_date}`));
    const dup = rows.findIndex((r) => clash.has(`${String(r.master_item_id)}@${String(r.scrape_date)}`));
    if (dup >= 0) throw new DatasetError(`prices row ${firstRow + dup}: a price record for this masterItemId and scrapeDate already exists`);
    await bulk.insert('price_records', rows);
    for (const i of ids) priced.add(i);
  };
  await inBatches(ctx, 'prices', write, (columns, _row, where) => {
    const recordKey = `${String(columns.master_item_id)}@${String(columns.scrape_date)}`;
    if (seenRecords.has(recordKey)) {
      throw new DatasetError(`${where}: masterItemId ${String(columns.master_item_id)} has two records for ${String(columns.scrape_date)}`);
    }
    seenRecords.add(recordKey);
  });
  seenRecords.clear();
  if (input.prices !== undefined) {
    // Its own section: on a large load this takes seconds, and a bar left at 100% looks stuck.
    progress.start('current prices', priced.size);
    await refreshCurrentPrices(trx, [...priced], (done) => progress.update(done));
    progress.end(priced.size);
  }
}
