/**
 * `node --import tsx bench/csv-throughput.ts [rows]`: rows per second of the server's CSV writer (csvLine,
 * chunked as the export route does) against the client's readers (csvRecords, and priceRows behind
 * exportPrices()) over the same export, 1,000,000 rows by default. Like is set against like: text written
 * against text read, and text written then encoded to UTF-8 (what the socket sends) against bytes decoded
 * then read (what a client receives). The UTF-8 pair is the fairer one: `chunk += line` only links the
 * pieces, and V8 joins them when the text is first read or encoded, so "to text" leaves part of the
 * writer's work undone. The server's strict import parser is shown too, for scale. Rows are
 * demo items and their prices (names with commas, quotes, accents) repeated under new ids. Prints figures
 * only: timing on a shared machine is for reading, not for asserting.
 */
import { csvLine, parseCsv } from '../src/csv/csv.js';
import { generateDemo } from '../src/demo/index.js';
import { EXPORT_COLUMNS, type ExportRow } from '../src/store/repositories/price-export.js';
import { csvRecords, priceRows } from '../clients/typescript/src/csv.js';

const ROWS = Number(process.argv[2] ?? 1_000_000);
const DISTINCT = 20_000;
/** As the export route: text is handed on in chunks of about this many characters. */
const CHUNK_CHARS = 256 * 1024;
const RUNS = 3;

function sampleRows(): ExportRow[] {
  const demo = generateDemo({ items: DISTINCT, now: new Date('2026-03-15T12:00:00.000Z') });
  const items = new Map([...demo.catalogue()].map((c) => [c.masterItemId, c]));
  const rows: ExportRow[] = [];
  for (const p of demo.prices()) {
    const c = items.get(p.masterItemId);
    if (c === undefined) continue;
    rows.push([p.masterItemId, c.name, c.slug, c.platform, c.category, p.upc, p.loose ?? null, p.cib ?? null,
      p.new ?? null, p.boxOnly ?? null, p.manualOnly ?? null, p.scrapeDate]);
  }
  return rows;
}

/** Writes the export as the route does, handing each chunk to `sink` (the route hands it to the socket). */
function write(sample: readonly ExportRow[], sink: (chunk: string) => void): void {
  let chunk = csvLine(EXPORT_COLUMNS);
  for (let n = 0; n < ROWS; n++) {
    const row = sample[n % sample.length] as ExportRow;
    // A new id per row, as a real export of ROWS items would have (set in place: no allocation to time).
    row[0] = n + 1;
    chunk += csvLine(row);
    if (chunk.length >= CHUNK_CHARS) {
      sink(chunk);
      chunk = '';
    }
  }
  if (chunk !== '') sink(chunk);
}

async function* iterate<T>(chunks: readonly T[]): AsyncGenerator<T> {
  yield* chunks;
}

interface Measure {
  label: string;
  run: () => Promise<number> | number;
  fastestMs: number;
  rows: number;
}

/**
 * Runs every measure RUNS times, taking turns, and prints each one's fastest run: on a shared machine the
 * load changes from second to second, and taking turns spreads it over all of them alike.
 */
async function compare(measures: Omit<Measure, 'fastestMs' | 'rows'>[]): Promise<void> {
  const all: Measure[] = measures.map((m) => ({ ...m, fastestMs: Infinity, rows: 0 }));
  for (let i = 0; i < RUNS; i++) {
    for (const m of all) {
      const started = performance.now();
      m.rows = await m.run();
      m.fastestMs = Math.min(m.fastestMs, performance.now() - started);
    }
  }
  for (const m of all) {
    const perSecond = Math.round((m.rows / m.fastestMs) * 1000).toLocaleString('en-US');
    console.log(`${m.label.padEnd(42)} ${String(m.rows).padStart(9)} rows  ${(m.fastestMs / 1000).toFixed(2).padStart(6)} s  ${perSecond.padStart(9)} rows/s`);
  }
}

async function count(records: AsyncIterable<unknown>): Promise<number> {
  let n = 0;
  for await (const _record of records) n++;
  return n;
}

const sample = sampleRows();
// The text the readers read, made once outside the timings.
const chunks: string[] = [];
write(sample, (chunk) => chunks.push(chunk));
const encoder = new TextEncoder();
const bytes = chunks.map((c) => encoder.encode(c));
console.log(`${ROWS.toLocaleString('en-US')} rows, ${(bytes.reduce((n, b) => n + b.length, 0) / 1e6).toFixed(1)} MB of CSV; the fastest of ${RUNS} runs each`);

// The writer keeps only the length, as a socket takes a chunk and lets it go.
let written = 0;
await compare([
  { label: 'server writer: csvLine to text', run: () => (write(sample, (chunk) => (written += chunk.length)), ROWS) },
  { label: 'client reader: csvRecords from text', run: async () => (await count(csvRecords(iterate(chunks)))) - 1 },
  {
    label: 'server writer: csvLine to text to UTF-8',
    run: () => (write(sample, (chunk) => (written += encoder.encode(chunk).length)), ROWS),
  },
  { label: 'client reader: csvRecords from UTF-8', run: async () => (await count(csvRecords(iterate(bytes)))) - 1 },
  { label: 'client reader: priceRows from UTF-8', run: () => count(priceRows(iterate(bytes))) },
  { label: 'server import parser: parseCsv from text', run: async () => (await count(parseCsv(chunks))) - 1 },
]);
