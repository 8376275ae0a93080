/**
 * CSV text in chunks from batches of rows: the export's body, both when it streams from the store and when
 * the price guide file is written (src/export/price-guide.ts), so the two are the same bytes.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { csvLine } from './csv.js';

/** Work between two yields to the event loop, and the largest chunk handed on at once. */
const SLICE_MS = 4;
const CHUNK_CHARS = 256 * 1024;

/**
 * The header, then every row. Reading and formatting rows is synchronous, so it runs in slices of a few
 * milliseconds, yielding to the event loop between them: other requests keep being served meanwhile.
 * The consumer pulls a chunk only when it wants more, which is the backpressure.
 */
export async function* csvChunks(
  header: ReadonlyArray<string>,
  batches: AsyncIterable<ReadonlyArray<ReadonlyArray<string | number | null>>>,
): AsyncGenerator<string> {
  let chunk = csvLine(header);
  let sliceStart = performance.now();
  for await (const batch of batches) {
    for (const row of batch) chunk += csvLine(row);
    if (chunk.length >= CHUNK_CHARS || performance.now() - sliceStart >= SLICE_MS) {
      yield chunk;
      chunk = '';
      await yieldToEventLoop();
      sliceStart = performance.now();
    }
  }
  if (chunk !== '') yield chunk;
}
