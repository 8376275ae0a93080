/**
 * `shelfapi import prices FILE.csv`: the aggregator's CSV, with the export's columns, upserted by
 * (masterItemId, scrapeDate) in one transaction. Every line is checked; any bad line refuses the whole
 * file, which names each one (src/errors/bad-rows.ts), and nothing of it is written. A dry run checks the
 * same way and rolls back. The name, slug, platform and category columns are read but not
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
import { BadRows, quoted, type BadRow } from '../errors/bad-rows.js';

type PriceInsert = Omit<PriceRecordsTable, 'id'>;

const BATCH = 2000;
/** Each column's place in a row. */
const COLUMN_AT = Object.fromEntries(EXPORT_COLUMNS.map((column, i) => [column, i])) as Record<(typeof EXPORT_COLUMNS)[number], number>;
// Plain decimals, and the exponent form the export writes for very small or large numbers (String(1e-7)
// is "1e-7", String(1e21) is "1e+21"): without it the API's own export did not import back.
const MONEY = /^[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?$/;

/** A line's refusal: its column, the value refused (as text) and why; the location is added by the caller. */
type Refusal = Pick<BadRow, 'column' | 'value' | 'message'>;

const refusal = (column: string | null, value: string | null, message: string): Refusal => ({ column, value, message });

/** A price cell: null when empty, the number it writes, or why it is refused. */
function priceValue(raw: string, column: string): number | null | Refusal {
  if (raw === '') return null;
  // isFinite: with exponents allowed, "1e400" would otherwise become Infinity.
  if (!MONEY.test(raw) || !Number.isFinite(Number(raw))) return refusal(column, raw, `${column} must be a number >= 0 or empty, got ${quoted(raw)}`);
  return Number(raw);
}

const PRICE_COLUMNS = [
  ['loose', 'loose'],
  ['cib', 'cib'],
  ['new', 'new'],
  ['boxOnly', 'box_only'],
  ['manualOnly', 'manual_only'],
] as const;

/** A data line (the header matched): the record it writes, or the first thing wrong with it. */
function priceRow(fields: string[]): PriceInsert | Refusal {
  if (fields.length !== EXPORT_COLUMNS.length) {
    return refusal(null, null, `expected ${EXPORT_COLUMNS.length} fields, found ${fields.length}`);
  }
  // The header matched EXPORT_COLUMNS, so each column is read where that list puts it.
  const field = (column: (typeof EXPORT_COLUMNS)[number]) => fields[COLUMN_AT[column]] as string;
  const id = field('masterItemId');
  const masterItemId = Number(id);
  if (!/^[0-9]+$/.test(id) || masterItemId < 1 || masterItemId > Number.MAX_SAFE_INTEGER) {
    return refusal('masterItemId', id, `masterItemId must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}, got ${quoted(id)}`);
  }
  const upc = field('upc');
  if (!/^[0-9]{6,14}$/.test(upc)) return refusal('upc', upc, `upc must be 6 to 14 ASCII digits, got ${quoted(upc)}`);
  const prices: Partial<Record<(typeof PRICE_COLUMNS)[number][1], number | null>> = {};
  for (const [column, stored] of PRICE_COLUMNS) {
    const value = priceValue(field(column), column);
    if (value !== null && typeof value === 'object') return value;
    prices[stored] = value;
  }
  const scrapeDate = field('scrapeDate');
  const date = canonicalTimestamp(scrapeDate);
  if (date === null) return refusal('scrapeDate', scrapeDate, `scrapeDate must be an ISO 8601 date-time, got ${quoted(scrapeDate)}`);
  return {
    master_item_id: masterItemId,
    upc,
    loose: prices.loose ?? null,
    cib: prices.cib ?? null,
    new: prices.new ?? null,
    box_only: prices.box_only ?? null,
    manual_only: prices.manual_only ?? null,
    scrape_date: date,
  };
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
  /**
   * Checks the whole file exactly as an import does, in the same transaction, and rolls it back at the end:
   * the result says what would have been written; nothing is, and the data version (every ETag) stays.
   */
  dryRun?: boolean;
}

/** The input, counting the bytes that have gone through it. */
async function* countingBytes(input: AsyncIterable<string | Buffer>, counter: { bytes: number }): AsyncGenerator<string | Buffer> {
  for await (const chunk of input) {
    counter.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    yield chunk;
  }
}

/**
 * Imports the CSV, or refuses it whole with a BadRowsError naming every bad line (the first
 * REPORTED_BAD_ROWS, and a count of the rest): a value of the wrong form, a second row for one
 * (masterItemId, scrapeDate), an item not in the catalogue. The catalogue is read for each batch's ids
 * before the batch is written, so an unknown item is one more bad line, never a constraint error (which on
 * PostgreSQL would end the transaction and with it the checks of the lines after it).
 */
export async function importPrices(store: Store, source: AsyncIterable<string | Buffer>, options: ImportOptions = {}): Promise<ImportResult> {
  const progress = options.progress ?? silentProgress;
  const dryRun = options.dryRun === true;
  const read = { bytes: 0 };
  const size = options.size;
  const input = size !== undefined && size > 0 ? countingBytes(source, read) : source;
  const fraction = () => (size !== undefined && size > 0 ? Math.min(1, read.bytes / size) : undefined);
  const bad = new BadRows();
  const refuse = (line: number, problem: Refusal) => bad.add({ line, ...problem });
  const result = await withWriteTransaction(
    store,
    async (db) => {
      /** The line of each (masterItemId, scrapeDate) of the file, to name the first when a second comes. */
      const seen = new Map<string, number>();
      const items = new Set<number>();
      let batch: Array<PriceInsert & { line: number; id: string }> = [];
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
        const good: PriceInsert[] = [];
        for (const { line, id, ...row } of batch) {
          if (found.has(row.master_item_id)) good.push(row);
          else refuse(line, refusal('masterItemId', id, `masterItemId ${quoted(id)} is not in the catalogue`));
        }
        // Only rows that passed every check are written: none can break a constraint of the store.
        await upsert(db, good);
        for (const row of good) items.add(row.master_item_id);
        progress.update(rows, fraction());
        batch = [];
      };

      progress.start('prices', null);
      let header = true;
      try {
        for await (const record of parseCsv(input)) {
          const { fields, line } = record;
          if (header) {
            header = false;
            if (fields.join(',') !== EXPORT_COLUMNS.join(',')) {
              // Every line would be read against the wrong columns: this one refusal says it all.
              refuse(line, refusal(null, fields.join(','), `the header must be ${EXPORT_COLUMNS.join(',')}`));
              break;
            }
            continue;
          }
          const row = priceRow(fields);
          if ('message' in row) {
            refuse(line, row);
            continue;
          }
          const key = `${row.master_item_id}@${row.scrape_date}`;
          const first = seen.get(key);
          if (first !== undefined) {
            const raw = fields[COLUMN_AT.scrapeDate] as string;
            refuse(line, refusal('scrapeDate', raw, `a second row for masterItemId ${row.master_item_id} at ${row.scrape_date} (the first is line ${first})`));
            continue;
          }
          seen.set(key, line);
          batch.push({ ...row, line, id: fields[COLUMN_AT.masterItemId] as string });
          rows++;
          if (batch.length >= BATCH) await flush();
        }
        if (header) refuse(1, refusal(null, null, 'the file is empty; expected a header row'));
      } catch (error) {
        if (!(error instanceof CsvSyntaxError)) throw error;
        // The parser cannot find where the next record starts: the lines after this one are not checked.
        refuse(error.line, refusal(null, null, `${error.reason}; the lines after it are not read`));
      }
      await flush();
      const refused = bad.error();
      if (refused !== null) throw refused;
      progress.end(rows);
      progress.start('current prices', items.size);
      await refreshCurrentPrices(db, [...items], (done) => progress.update(done));
      progress.end(items.size);
      // A file of only a header changes nothing: the data version (and so every ETag) stays as it was.
      if (rows > 0) await bumpDataVersion(db);
      return { rows, items: items.size };
    },
    { rollback: dryRun },
  );
  if (!dryRun && result.rows >= ANALYZE_AFTER_ROWS) await step(progress, 'statistics', () => refreshStatistics(store));
  return result;
}
