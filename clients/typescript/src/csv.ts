/**
 * A streaming reader for the export's CSV (RFC 4180: CRLF line ends, fields quoted when they hold `,`
 * `"` CR or LF, quotes doubled). Names can hold commas, quotes and line breaks, so splitting lines on
 * `\n` and fields on `,` would be wrong; this keeps memory to one record whatever the file's size.
 */
import type { PriceRow } from './types.js';

/** The export's columns, in order. */
export const PRICE_CSV_COLUMNS = [
  'masterItemId', 'name', 'slug', 'platform', 'category', 'upc',
  'loose', 'cib', 'new', 'boxOnly', 'manualOnly', 'scrapeDate',
] as const satisfies ReadonlyArray<keyof PriceRow>;

/**
 * Every record of a CSV byte or text stream as an array of fields, the header included. Accepts a web
 * `ReadableStream` (what `exportPricesCsv()` returns) or any async iterable of chunks (a Node file stream).
 */
export async function* csvRecords(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<string[]> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let record: string[] = [];
  let field = '';
  let inQuotes = false;
  // Just read a `"` inside quotes: either the first of `""` or the closing quote.
  let quotePending = false;
  // Whether the current record has any content, so a final CRLF does not yield an empty record.
  let started = false;

  const endField = (): void => {
    record.push(field);
    field = '';
  };

  for await (const chunk of source) {
    const text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    const out: string[][] = [];
    for (let i = 0; i < text.length; i++) {
      const ch = text[i]!;
      if (inQuotes) {
        if (quotePending) {
          quotePending = false;
          if (ch === '"') {
            field += '"';
            continue;
          }
          inQuotes = false;
          // Fall through: this character follows the closing quote.
        } else if (ch === '"') {
          quotePending = true;
          continue;
        } else {
          field += ch;
          continue;
        }
      }
      if (ch === '"' && field === '') {
        inQuotes = true;
        started = true;
      } else if (ch === ',') {
        endField();
        started = true;
      } else if (ch === '\n') {
        endField();
        out.push(record);
        record = [];
        started = false;
      } else if (ch === '\r') {
        // Part of CRLF: the LF ends the record.
      } else {
        field += ch;
        started = true;
      }
    }
    for (const r of out) yield r;
  }
  const tail = decoder.decode();
  if (tail !== '') field += tail;
  if (inQuotes && !quotePending) throw new Error('CSV ended inside a quoted field: the stream was cut short');
  if (started || field !== '' || record.length > 0) {
    endField();
    yield record;
  }
}

function priceOrNull(text: string): number | null {
  return text === '' ? null : Number(text);
}

/**
 * The export's rows as the same objects `/prices` returns: numbers for ids and prices, `null` for an
 * empty price (the export writes `null` as an empty field).
 */
export async function* priceRows(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<PriceRow> {
  let header = true;
  for await (const fields of csvRecords(source)) {
    if (header) {
      header = false;
      if (fields.join(',') !== PRICE_CSV_COLUMNS.join(',')) {
        // Guessing which column is which would silently mislabel prices: refuse instead.
        throw new Error(`the export's header is not the one this client knows: ${fields.join(',')}`);
      }
      continue;
    }
    const [masterItemId, name, slug, platform, category, upc, loose, cib, fresh, boxOnly, manualOnly, scrapeDate] = fields;
    yield {
      masterItemId: Number(masterItemId),
      name: name ?? '',
      slug: slug ?? '',
      platform: platform ?? '',
      category: category ?? '',
      upc: upc ?? '',
      loose: priceOrNull(loose ?? ''),
      cib: priceOrNull(cib ?? ''),
      new: priceOrNull(fresh ?? ''),
      boxOnly: priceOrNull(boxOnly ?? ''),
      manualOnly: priceOrNull(manualOnly ?? ''),
      scrapeDate: scrapeDate ?? '',
    };
  }
}
