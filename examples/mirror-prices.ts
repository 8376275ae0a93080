/**
 * Mirrors every row of /prices into a local CSV file (the export's columns and format), page by page,
 * with @shelfapi/client. Safe to stop at any moment and to run again: it continues where it stopped,
 * without duplicates or gaps, and a later run appends only rows that are new since.
 *
 *   SHELF_API_URL=http://127.0.0.1:8080 SHELF_API_KEY=shelf_live_... npx tsx examples/mirror-prices.ts \
 *       [--out prices-mirror.csv] [--page-size 100]
 *
 * `SHELF_API_URL` is the server (`--base-url` overrides it; without either, http://127.0.0.1:8080).
 *
 * What is already mirrored: after every page the script appends the rows, flushes them to disk, then
 * records in `<out>.checkpoint.json` the file's length, the number of rows and the last `masterItemId`.
 * A run starts by cutting the file back to that length (dropping a page half-written when the previous
 * run was killed) and asks for the next page starting one row early, on the last row it has: since
 * /prices is ordered by `masterItemId`, that row shows whether the rows before it moved (items removed
 * or added while the mirror was stopped) and rows at or below the last id are never written twice.
 *
 * Limits: `429 rate_limited` is retried by the client after Retry-After; on `429 quota_exceeded` the
 * script stops with a message, keeps every row it has, and exits 75 (try again later).
 *
 * Exit codes: 0 mirrored to the end; 75 stopped by the monthly quota; 1 another API error, or no answer
 * from the server (the message names the address it tried); 2 usage.
 */
import { open, readFile, rename, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createShelfClient, PRICE_CSV_COLUMNS, ShelfApiError, ShelfError, type PriceRow } from '@shelfapi/client';

const EXIT_QUOTA = 75; // EX_TEMPFAIL: the conventional "temporary failure, try again later".

interface Checkpoint {
  version: 1;
  /** Length of the CSV file once the last recorded page was flushed. */
  bytes: number;
  rows: number;
  lastMasterItemId: number | null;
}

function usage(message: string): never {
  console.error(`mirror-prices: ${message}`);
  console.error('usage: SHELF_API_URL=... SHELF_API_KEY=... mirror-prices.ts [--out FILE] [--base-url URL] [--page-size 2..100]');
  process.exit(2);
}

const { values: args } = parseArgs({
  options: {
    out: { type: 'string', default: 'prices-mirror.csv' },
    'base-url': { type: 'string', default: process.env.SHELF_API_URL ?? 'http://127.0.0.1:8080' },
    'page-size': { type: 'string', default: '100' },
  },
});
const out = args.out;
const checkpointPath = `${out}.checkpoint.json`;
// The key comes from the environment, never the command line, where it would land in shell history.
const apiKey = process.env.SHELF_API_KEY || usage('set SHELF_API_KEY to your key');
const pageSize = Number(args['page-size']);
// Each page starts on the last row already mirrored, so a page of one row would never move forward.
if (!Number.isInteger(pageSize) || pageSize < 2 || pageSize > 100) usage('--page-size must be 2..100');

// The export's format (RFC 4180, CRLF, quoted only when needed, null as an empty field), so a finished
// mirror is byte for byte what /prices/export.csv sends.
function csvField(value: string | number | null): string {
  if (value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
const csvLine = (values: ReadonlyArray<string | number | null>): string => values.map(csvField).join(',') + '\r\n';
const csvRow = (row: PriceRow): string => csvLine(PRICE_CSV_COLUMNS.map((column) => row[column]));

async function sizeOf(path: string): Promise<number | null> {
  return stat(path).then(
    (s) => s.size,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    },
  );
}

/** The checkpoint to continue from, creating the file with its header on a first run. */
async function startingPoint(): Promise<Checkpoint> {
  const size = await sizeOf(out);
  const saved = await readFile(checkpointPath, 'utf8').then(
    (text) => JSON.parse(text) as Checkpoint,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    },
  );
  if (saved !== null && size !== null) {
    if (size < saved.bytes) usage(`${out} is shorter than its checkpoint says: it was changed by hand; move both files away to start over`);
    return saved;
  }
  if (size !== null) usage(`${out} exists without ${checkpointPath}, so what it holds is unknown; move it away to start over`);
  const header = csvLine(PRICE_CSV_COLUMNS);
  await writeFile(out, header);
  const fresh: Checkpoint = { version: 1, bytes: Buffer.byteLength(header), rows: 0, lastMasterItemId: null };
  await saveCheckpoint(fresh);
  return fresh;
}

async function saveCheckpoint(checkpoint: Checkpoint): Promise<void> {
  // Write then rename: a kill mid-write leaves the previous checkpoint whole, never half of one.
  await writeFile(`${checkpointPath}.tmp`, JSON.stringify(checkpoint) + '\n');
  await rename(`${checkpointPath}.tmp`, checkpointPath);
}

const shelf = createShelfClient({
  baseUrl: args['base-url'],
  apiKey,
  // A burst wait is at most 60 s; several in a row only happen if other scripts share the account.
  maxRetries: 5,
  onRetry: (e) => console.log(`${e.code}: waiting ${e.waitSeconds} s (retry ${e.attempt} of ${e.maxRetries})`),
});

let checkpoint = await startingPoint();
let file: FileHandle | undefined;
let written = 0;
try {
  const me = await shelf.get('/me'); // free: /me never counts against the quota
  console.log(`${me.usage.remaining} of ${me.limits.monthly} requests left this month; each request brings up to ${pageSize - 1} new rows`);
  if (checkpoint.rows > 0) console.log(`resuming after masterItemId ${checkpoint.lastMasterItemId} (${checkpoint.rows} rows already in ${out})`);

  file = await open(out, 'r+');
  // Drop whatever a killed run wrote after its last checkpoint: those rows are asked for again.
  await file.truncate(checkpoint.bytes);

  let start = Math.max(0, checkpoint.rows - 1);
  for (;;) {
    const { data, pagination } = await shelf.get('/prices', { query: { limit: pageSize, offset: start } });
    const last = checkpoint.lastMasterItemId;
    if (last !== null && start > 0 && (data.length === 0 || data[0]!.masterItemId > last)) {
      // The row we stopped on is no longer at `start`: rows before it were removed. Step back to find it.
      start = Math.max(0, start - pageSize + 1);
      continue;
    }
    const fresh = last === null ? data : data.filter((row) => row.masterItemId > last);
    if (fresh.length > 0) {
      const text = fresh.map(csvRow).join('');
      await file.write(text, checkpoint.bytes);
      // On disk before the checkpoint says so: otherwise a crash could record rows that were lost.
      await file.sync();
      checkpoint = {
        version: 1,
        bytes: checkpoint.bytes + Buffer.byteLength(text),
        rows: checkpoint.rows + fresh.length,
        lastMasterItemId: fresh.at(-1)!.masterItemId,
      };
      await saveCheckpoint(checkpoint);
      written += fresh.length;
      console.log(`${checkpoint.rows} of ${pagination.total} rows`);
    }
    if (!pagination.hasMore) break;
    start += data.length - 1;
  }
  console.log(written > 0 ? `done: ${written} new rows, ${checkpoint.rows} in ${out}` : `up to date: ${checkpoint.rows} rows in ${out}`);
} catch (error) {
  if (!(error instanceof ShelfError)) throw error;
  if (!(error instanceof ShelfApiError)) {
    // No answer at all (ShelfConnectionError) or none in time (ShelfTimeoutError): most often the wrong
    // address, so say which one was used and how to change it.
    console.error(`mirror-prices: ${error.message} (set SHELF_API_URL or --base-url to the server). ${checkpoint.rows} rows are kept in ${out}.`);
    process.exitCode = 1;
  } else if (error.code === 'quota_exceeded') {
    const reset = error.retryAfterSeconds === null ? 'next month' : new Date(Date.now() + error.retryAfterSeconds * 1000).toISOString();
    console.error(
      `mirror-prices: monthly quota reached. ${checkpoint.rows} rows are kept in ${out} (${written} new this run); ` +
        `run again after ${reset} to continue from there.`,
    );
    process.exitCode = EXIT_QUOTA;
  } else {
    console.error(`mirror-prices: ${error.status} ${error.code}: ${error.message} (request id ${error.requestId ?? 'none'}). ` +
      `${checkpoint.rows} rows are kept in ${out}; run again to continue.`);
    process.exitCode = 1;
  }
} finally {
  await file?.close();
}
