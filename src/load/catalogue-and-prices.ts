/**
 * The big sections of a load, the catalogue and its price records: written in batches of BATCH rows, each
 * batch checked against the store with a query or two before it is written.
 */
import { setImmediate } from 'node:timers/promises';
import { foldText } from '../store/search-text.js';
import { catalogueBulk, refreshCurrentPrices, setAsideCatalogueKeys, type Row } from './bulk-insert.js';
import { DatasetError } from './dataset-error.js';
import { declaredIds, IdSpace } from './id-space.js';
import type { Obj } from './dataset-rows.js';
import { columnsFor, loadSection, type LoadContext } from './load-context.js';
import { sectionFraction } from './progress.js';

const BATCH = 5000;
const YIELD_EVERY = 500;

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
    // A turn of the event loop now and then: the socket sends the batch being copied while this one is made.
    if (n % YIELD_EVERY === 0) await setImmediate();
  };
  await loadSection(ctx, section, visit, {
    perRow: false,
    afterRows: async (n) => {
      await batch.flush(n);
      await ctx.bulk.flush();
    },
  });
}

/** The catalogue as the later sections see it: items of the store and items of this file. */
export interface CatalogueIds {
  /** Which of `ids` are items of the catalogue. */
  existing(ids: number[]): Promise<Set<number>>;
  /** Refuses row `where` when `masterItemId` is not an item of the catalogue. */
  require(masterItemId: number, where: string): Promise<void>;
  /** Whether this file added item `masterItemId` (it was not in the store, so it has no prices there). */
  addedByFile(masterItemId: number): boolean;
  /** Whether the catalogue was empty before this load (PostgreSQL only; false elsewhere). */
  readonly startedEmpty: boolean;
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
    addedByFile: (masterItemId) => items.hasInFile(masterItemId),
    startedEmpty: catalogue.startedEmpty(),
    async require(masterItemId, where) {
      if (!(await existing([masterItemId])).has(masterItemId)) {
        throw new DatasetError(`${where}: masterItemId ${masterItemId} is not in the catalogue`);
      }
    },
  };
}

/**
 * The scrape dates of the file's price records, by item: one Map keyed by number (most items have one
 * record, kept as a string; more as a list), where a Set of "id@date" strings made a string per row.
 */
class RecordDates {
  private readonly dates = new Map<number, string | string[]>();

  /** Adds the record; false when the item already has one for that date. */
  add(item: number, date: string): boolean {
    const known = this.dates.get(item);
    if (known === undefined) this.dates.set(item, date);
    else if (typeof known === 'string') {
      if (known === date) return false;
      this.dates.set(item, [known, date]);
    } else {
      if (known.includes(date)) return false;
      known.push(date);
    }
    return true;
  }

  items(): number[] {
    return Array.from(this.dates.keys());
  }
}

export async function loadPrices(ctx: LoadContext, items: CatalogueIds): Promise<void> {
  const { trx, bulk, progress, input } = ctx;
  let seen = new RecordDates();
  let restoreKeys = null as (() => Promise<void>) | null;
  const write = async (rows: Row[], firstRow: number) => {
    const ids = [...new Set(rows.map((r) => r.master_item_id as number))];
    const known = await items.existing(ids);
    const missing = rows.findIndex((r) => !known.has(r.master_item_id as number));
    if (missing >= 0) {
      throw new DatasetError(`prices row ${firstRow + missing}: masterItemId ${String(rows[missing]?.master_item_id)} is not in the catalogue`);
    }
    // Items this file added have no records in the store: only the store's own items are looked up.
    const ofStore = ids.filter((i) => !items.addedByFile(i));
    if (ofStore.length > 0) {
      const existing = await trx.selectFrom('price_records').select(['master_item_id', 'scrape_date']).where('master_item_id', 'in', ofStore).execute();
      const clash = new Set(existing.map((r) => `${r.master_item_id}@${r.scrape_date}`));
      const dup = rows.findIndex((r) => clash.has(`${String(r.master_item_id)}@${String(r.scrape_date)}`));
      if (dup >= 0) throw new DatasetError(`prices row ${firstRow + dup}: a price record for this masterItemId and scrapeDate already exists`);
    }
    if (items.startedEmpty) restoreKeys ??= await setAsideCatalogueKeys(trx, ['price_records', 'current_prices']);
    await bulk.insert('price_records', rows);
  };
  await inBatches(ctx, 'prices', write, (columns, _row, where) => {
    if (!seen.add(columns.master_item_id as number, columns.scrape_date as string)) {
      throw new DatasetError(`${where}: masterItemId ${String(columns.master_item_id)} has two records for ${String(columns.scrape_date)}`);
    }
  });
  // Every row was written (a refused one ends the load), so the items of the file's records are those priced.
  const priced = seen.items();
  seen = new RecordDates();
  if (input.prices !== undefined) {
    // Its own section: on a large load this takes seconds, and a bar left at 100% looks stuck.
    progress.start('current prices', priced.length);
    await refreshCurrentPrices(trx, priced, (done) => progress.update(done), { storeHadNoPrices: items.startedEmpty });
    // Checked in one go now that both tables are full (part of this section: no display line of its own).
    await restoreKeys?.();
    progress.end(priced.length);
  }
}
