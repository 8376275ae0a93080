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
import { columnsFor, loadSection, missingRow, refuseRow, type LoadContext } from './load-context.js';
import { sectionFraction } from './progress.js';

const BATCH = 5000;
const YIELD_EVERY = 500;

/** Rows gathered for one write, with their numbers, to name a row the write's checks refuse. */
class Batch {
  private rows: Row[] = [];
  private numbers: number[] = [];
  constructor(private readonly write: (rows: Row[], numbers: number[]) => Promise<void>) {}

  async add(row: Row, n: number): Promise<void> {
    this.rows.push(row);
    this.numbers.push(n);
    if (this.rows.length >= BATCH) await this.flush();
  }

  /** Writes what is gathered. */
  async flush(): Promise<void> {
    if (this.rows.length === 0) return;
    const [rows, numbers] = [this.rows, this.numbers];
    this.rows = [];
    this.numbers = [];
    await this.write(rows, numbers);
  }
}

/**
 * The rows of a batch that pass `refusal` (a check against the store, run for the whole batch before it is
 * written): each one it refuses is recorded in ctx.bad, named by its number, and left out of the write, so
 * no row written can break a constraint of the store (on PostgreSQL that would end the transaction, and
 * with it the checks of every row after).
 */
function passing(ctx: LoadContext, section: 'catalogue' | 'prices', rows: Row[], numbers: number[], refusal: (row: Row) => DatasetError | null): Row[] {
  const good: Row[] = [];
  rows.forEach((row, i) => {
    const error = refusal(row);
    if (error === null) good.push(row);
    else refuseRow(ctx, section, numbers[i] as number, error);
  });
  return good;
}

/**
 * A big section: each row's columns, completed by `complete` (which may refuse the row), gathered into
 * batches that `write` checks against the store and writes. Progress hears of each batch written.
 */
async function inBatches(
  ctx: LoadContext,
  section: 'catalogue' | 'prices',
  write: (rows: Row[], numbers: number[]) => Promise<void>,
  complete: (columns: Row, row: Obj, where: string) => void,
): Promise<void> {
  const fraction = sectionFraction(ctx.input[section]);
  const batch = new Batch(async (rows, numbers) => {
    await write(rows, numbers);
    ctx.progress.update(numbers[numbers.length - 1] as number, fraction?.());
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
    afterRows: async () => {
      await batch.flush();
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
  const items = await IdSpace.open(trx, 'catalogue_items', 'master_item_id', declaredIds(input.catalogue, 'masterItemId'), 'masterItemId');
  const existing = async (ids: number[]): Promise<Set<number>> => {
    const fromStore = await items.conflictsWithStore(ids.filter((i) => !items.hasInFile(i)));
    return new Set(ids.filter((i) => items.hasInFile(i) || fromStore.has(i)));
  };
  const catalogue = catalogueBulk(store, bulk, trx);
  /** Ids this file gives that the store already has: the item is the store's, not added by the file. */
  const ofStore = new Set<number>();
  const write = async (rows: Row[], numbers: number[]) => {
    const clash = await items.conflictsWithStore(rows.map((r) => r.master_item_id as number));
    for (const id of clash) ofStore.add(id);
    const good = passing(ctx, 'catalogue', rows, numbers, (r) => {
      const id = r.master_item_id as number;
      return clash.has(id) ? new DatasetError(`masterItemId ${id} already exists in the store`, { field: 'masterItemId', value: id }) : null;
    });
    await catalogue.insert(good);
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
    addedByFile: (masterItemId) => items.hasInFile(masterItemId) && !ofStore.has(masterItemId),
    startedEmpty: catalogue.startedEmpty(),
    async require(masterItemId, where) {
      if (!(await existing([masterItemId])).has(masterItemId)) {
        throw missingRow(ctx.input, where, 'masterItemId', masterItemId, { section: 'catalogue', key: 'masterItemId' }, 'is not in the catalogue');
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
  const write = async (rows: Row[], numbers: number[]) => {
    const ids = [...new Set(rows.map((r) => r.master_item_id as number))];
    const known = await items.existing(ids);
    // Items this file added have no records in the store: only the store's own items are looked up.
    const ofStore = ids.filter((i) => known.has(i) && !items.addedByFile(i));
    const clash = new Set<string>();
    if (ofStore.length > 0) {
      const existing = await trx.selectFrom('price_records').select(['master_item_id', 'scrape_date']).where('master_item_id', 'in', ofStore).execute();
      for (const r of existing) clash.add(`${r.master_item_id}@${r.scrape_date}`);
    }
    const good = passing(ctx, 'prices', rows, numbers, (r) => {
      const id = r.master_item_id as number;
      if (!known.has(id)) return new DatasetError(`masterItemId ${id} is not in the catalogue`, { field: 'masterItemId', value: id });
      if (clash.has(`${id}@${String(r.scrape_date)}`)) {
        return new DatasetError(`a price record for this masterItemId and scrapeDate already exists`, { field: 'scrapeDate', value: r.scrape_date });
      }
      return null;
    });
    if (good.length === 0) return;
    if (items.startedEmpty) restoreKeys ??= await setAsideCatalogueKeys(trx, ['price_records', 'current_prices']);
    await bulk.insert('price_records', good);
  };
  await inBatches(ctx, 'prices', write, (columns, row, where) => {
    if (!seen.add(columns.master_item_id as number, columns.scrape_date as string)) {
      throw new DatasetError(`${where}: masterItemId ${String(columns.master_item_id)} has two records for ${String(columns.scrape_date)}`, {
        field: 'scrapeDate',
        value: row.scrapeDate,
      });
    }
  });
  // The items of the file's records: those priced (a refused record refuses the load, which is rolled back).
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
