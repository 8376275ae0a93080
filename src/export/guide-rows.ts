/**
 * Filtered exports from the price guide file. The file holds the unfiltered export: a header, then one row
 * per priced published item in ascending masterItemId, the very bytes a filtered export formats for those
 * rows. So a filtered export at the file's data version is a subset of the file's rows, in order: knowing
 * where each row starts, it is the header and the matching rows' byte ranges, copied from the file.
 *
 * Where rows start is found by one scan of the file (a row ends at a line feed outside quotes: quoted
 * fields may hold line breaks), kept per version as one 4-byte offset per row (8 bytes past 4 GB): 3.7 MB
 * at a million rows, instead of the rows' values or ids.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { csvLine } from '../csv/csv.js';
import { EXPORT_COLUMNS } from '../domain/export-columns.js';

/** Bytes read from the file at once, by the scan and by a filtered export. */
const WINDOW_BYTES = 512 * 1024;
/** Size of the chunks a filtered export hands on. */
const CHUNK_BYTES = 256 * 1024;
const LF = 0x0a;
const QUOTE = 0x22;

export interface GuideRows {
  /** Byte offset where each row starts; bounds[0] ends the header, bounds[rows] is the file's size. */
  bounds: Uint32Array | Float64Array;
  rows: number;
  /** masterItemIds of the first and last rows, to check the file against the search index's idea of it. */
  firstId: number | null;
  lastId: number | null;
}

/** A growable offsets array. */
class Bounds {
  data: Uint32Array | Float64Array;
  length = 0;

  constructor(private readonly wide: boolean) {
    this.data = wide ? new Float64Array(1 << 16) : new Uint32Array(1 << 16);
  }

  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = this.wide ? new Float64Array(this.length * 2) : new Uint32Array(this.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = value;
  }
}

/** The leading masterItemId of the row at `at` (a plain integer, never quoted). */
async function idAt(file: FileHandle, at: number): Promise<number> {
  const head = Buffer.alloc(24);
  const { bytesRead } = await file.read(head, 0, head.length, at);
  const comma = head.subarray(0, bytesRead).indexOf(',');
  const id = Number(head.subarray(0, comma).toString('latin1'));
  if (comma <= 0 || !Number.isSafeInteger(id)) throw new Error('price guide: a row does not start with a masterItemId');
  return id;
}

/** Scans the guide file at `path` for where its rows start. Throws when it is not a complete guide file. */
export async function scanGuideRows(path: string, signal?: AbortSignal): Promise<GuideRows> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const bounds = new Bounds(size > 0xffffffff);
    const window = Buffer.allocUnsafe(WINDOW_BYTES);
    let quoted = false;
    for (let at = 0; at < size; ) {
      signal?.throwIfAborted();
      const { bytesRead } = await file.read(window, 0, Math.min(WINDOW_BYTES, size - at), at);
      if (bytesRead === 0) throw new Error('price guide: the file ended before its size');
      const bytes = window.subarray(0, bytesRead);
      // A line feed ends a row when it lies outside quotes: after an even number of quotes since the start.
      let quote = bytes.indexOf(QUOTE);
      for (let lf = bytes.indexOf(LF); lf >= 0; lf = bytes.indexOf(LF, lf + 1)) {
        for (; quote >= 0 && quote < lf; quote = bytes.indexOf(QUOTE, quote + 1)) quoted = !quoted;
        if (!quoted) bounds.push(at + lf + 1);
      }
      for (; quote >= 0; quote = bytes.indexOf(QUOTE, quote + 1)) quoted = !quoted;
      at += bytesRead;
    }
    const header = Buffer.from(csvLine(EXPORT_COLUMNS), 'utf8');
    const head = Buffer.alloc(header.length);
    await file.read(head, 0, head.length, 0);
    if (quoted || bounds.length === 0 || bounds.data[0] !== header.length || !head.equals(header) || bounds.data[bounds.length - 1] !== size) {
      throw new Error('price guide: the file is not a complete export');
    }
    const rows = bounds.length - 1;
    return {
      bounds: bounds.data.slice(0, bounds.length),
      rows,
      firstId: rows === 0 ? null : await idAt(file, bounds.data[0]!),
      lastId: rows === 0 ? null : await idAt(file, bounds.data[rows - 1]!),
    };
  } finally {
    await file.close();
  }
}

/**
 * The header and the rows of `runs` ([first row, end row) pairs, ascending) copied from the guide file, in
 * chunks: each run is one byte range, and the file is read in windows that serve every range they hold.
 */
export async function* copyGuideRows(file: FileHandle, guide: GuideRows, runs: Iterable<[number, number]>): AsyncGenerator<Buffer> {
  const { bounds } = guide;
  const window = Buffer.allocUnsafe(WINDOW_BYTES);
  let windowStart = 0;
  let windowEnd = 0;
  let chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let filled = 0;
  function* ranges(): Generator<[number, number]> {
    yield [0, bounds[0]!];
    for (const [first, end] of runs) yield [bounds[first]!, bounds[end]!];
  }
  for (const [start, to] of ranges()) {
    let from = start;
    while (from < to) {
      if (from < windowStart || from >= windowEnd) {
        const { bytesRead } = await file.read(window, 0, WINDOW_BYTES, from);
        if (bytesRead === 0) throw new Error('price guide: the file is shorter than its rows');
        windowStart = from;
        windowEnd = from + bytesRead;
      }
      const n = Math.min(to, windowEnd) - from;
      const copied = Math.min(n, CHUNK_BYTES - filled);
      window.copy(chunk, filled, from - windowStart, from - windowStart + copied);
      filled += copied;
      from += copied;
      if (filled === CHUNK_BYTES) {
        yield chunk;
        chunk = Buffer.allocUnsafe(CHUNK_BYTES);
        filled = 0;
      }
    }
  }
  if (filled > 0) yield chunk.subarray(0, filled);
}
