/**
 * `shelfapi import prices FILE.csv`: the aggregator's CSV, with the export's columns, upserted by
 * (masterItemId, scrapeDate) in one transaction. The first bad line refuses the whole file, naming the
 * line, and nothing of it is written. The name, slug, platform and category columns are read but not
 * stored: the catalogue is the authority on those.
 */
import type { Kysely } from 'kysely';
import { CsvSyntaxError, parseCsv } from '../csv/csv.js';
import { EXPORT_COLUMNS } from '../store/repositories/price-export.js';
import type { Store } from '../store/database.js';
import { refreshCurrentPrices } from '../load/bulk-insert.js';
import { silentProgress, step, type ProgressSink } from '../load/progress.js';
import { canonicalTimestamp } from '../domain/timestamps.js';
import type { Database, PriceRecordsTable } from '../store/schema.js';
import { withWriteTransaction } from '../store/write-transaction.js';
import { bumpDataVersion } from '../store/read-cache.js';
import { ANALYZE_AFTER_ROWS, refreshStatistics } from '../store/analyze.js';
import { InputError } from '../errors/input-error.js';

type PriceInsert = Omit<PriceRecordsTable, 'id'>;

const BATCH = 2000;
/** Each column's place in a row. */
const COLUMN_AT = Object.fromEntries(EXPORT_COLUMNS.map((column, i) => [column, i])) as Record<(typeof EXPORT_COLUMNS)[number], number>;
// Plain decimals, and the exponent form the export writes for very small or large numbers (String(1e-7)
// is "1e-7", String(1e21) is "1e+21"): without it the API's own export did not import back.
const MONEY = /^[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?$/;

function priceValue(raw: string, column: string, line: number): number | null {
  if (raw === '') return null;
  // isFinite: with exponents allowed, "1e400" would otherwise become Infinity.
  if (!MONEY.test(raw) || !Number.isFinite(Number(raw))) throw new InputError(`line ${line}: ${column} must be a number >= 0 or empty, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

async function upsert(db: Kysely<Database>, rows: PriceInsert[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto('price_records')
      .values(rows.slice(i, i + 500))
      .onConflict((oc) =>
        oc.columns(['master_item_id', 'scrape_date']).doUpdateSet((eb) => ({
          upc: eb.ref('excluded.upc'),
          loose: eb.ref('excluded.loose'),
          cib: eb.ref('excluded.cib'),
          new: eb.ref('excluded.new'),
          box_only: eb.ref('excluded.box_only'),
          manual_only: eb.ref('excluded.manual_only'),
        })),
      )
      .execute();
  }
}

export interface ImportResult {
  rows: number;
  items: number;
}

export interface ImportOptions {
  progress?: ProgressSink;
  /** Bytes the input will yield (the file's size): the row count is unknown until the end, the bytes read say how far it is. */
  size?: number;
}

/** The input, counting the bytes that have gone through it. */
async function* countingBytes(input: AsyncIterable<string | Buffer>, counter: { bytes: number }): AsyncGenerator<string | Buffer> {
  for await (const chunk of input) {
    counter.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    yield chunk;
  }
}

export async function importPrices(store: Store, source: AsyncIterable<string | Buffer>, options: ImportOptions = {}): Promise<ImportResult> {
  const progress = options.progress ?? silentProgress;
  const read = { bytes: 0 };
  const size = options.size;
  const input = size !== undefined && size > 0 ? countingBytes(source, read) : source;
  const fraction = () => (size !== undefined && size > 0 ? Math.min(1, read.bytes / size) : undefined);
  const result = await withWriteTransaction(store, async (db) => {
    const seen = new Set<string>();
    const items = new Set<number>();
    let batch: Array<PriceInsert & { line: number }> = [];
    let rows = 0;

    const flush = async () => {
      if (batch.length === 0) return;
      const ids = [...new Set(batch.map((r) => r.master_item_id))];
      const found = new Set<number>();
      for (let i = 0; i < ids.length; i += 500) {
        const existing = await db
          .selectFrom('catalogue_items')
          .select('master_item_id')
          .where('master_item_id', 'in', ids.slice(i, i + 500))
          .execute();
        for (const r of existing) found.add(r.master_item_id);
      }
      const missing = batch.find((r) => !found.has(r.master_item_id));
      if (missing) throw new InputError(`line ${missing.line}: masterItemId ${missing.master_item_id} is not in the catalogue`);
      await upsert(db, batch.map(({ line: _line, ...row }) => row));
      for (const id of ids) items.add(id);
      progress.update(rows, fraction());
      batch = [];
    };

    progress.start('prices', null);
    try {
      let header = true;
      for await (const record of parseCsv(input)) {
        const { fields, line } = record;
        if (header) {
          header = false;
          if (fields.join(',') !== EXPORT_COLUMNS.join(',')) {
            throw new InputError(`line ${line}: the header must be ${EXPORT_COLUMNS.join(',')}`);
          }
          continue;
        }
        if (fields.length !== EXPORT_COLUMNS.length) {
          throw new InputError(`line ${line}: expected ${EXPORT_COLUMNS.length} fields, found ${fields.length}`);
        }
        // The header matched EXPORT_COLUMNS, so each column is read where that list puts it.
        const field = (column: (typeof EXPORT_COLUMNS)[number]) => fields[COLUMN_AT[column]] as string;
        const id = field('masterItemId');
        const upc = field('upc');
        const scrapeDate = field('scrapeDate');
        const price = (column: (typeof EXPORT_COLUMNS)[number]) => priceValue(field(column), column, line);
        const masterItemId = Number(id);
        if (!/^[0-9]+$/.test(id) || masterItemId < 1 || masterItemId > Number.MAX_SAFE_INTEGER) {
          throw new InputError(`line ${line}: masterItemId must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}`);
        }
        if (!/^[0-9]{6,14}$/.test(upc)) throw new InputError(`line ${line}: upc must be 6 to 14 ASCII digits`);
        const date = canonicalTimestamp(scrapeDate);
        if (date === null) throw new InputError(`line ${line}: scrapeDate must be an ISO 8601 date-time`);
        const key = `${masterItemId}@${date}`;
        if (seen.has(key)) throw new InputError(`line ${line}: a second row for masterItemId ${masterItemId} at ${date}`);
        seen.add(key);
        batch.push({
          line,
          master_item_id: masterItemId,
          upc,
          loose: price('loose'),
          cib: price('cib'),
          new: price('new'),
          box_only: price('boxOnly'),
          manual_only: price('manualOnly'),
          scrape_date: date,
        });
        rows++;
        if (batch.length >= BATCH) await flush();
      }
      if (header) throw new InputError('line 1: the file is empty; expected a header row');
      await flush();
    } catch (error) {
      if (error instanceof CsvSyntaxError) throw new InputError(error.message);
      throw error;
    }
    progress.end(rows);
    progress.start('current prices', items.size);
    await refreshCurrentPrices(db, [...items], (done) => progress.update(done));
    progress.end(items.size);
    // A file of only a header changes nothing: the data version (and so every ETag) stays as it was.
    if (rows > 0) await bumpDataVersion(db);
    return { rows, items: items.size };
  });
  if (result.rows >= ANALYZE_AFTER_ROWS) await step(progress, 'statistics', () => refreshStatistics(store));
  return result;
}
