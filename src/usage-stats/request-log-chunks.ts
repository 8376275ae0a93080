/**
 * The request log in the database (migration 0017): one row per key and write, a "chunk", holding that
 * write's lines of the key as one JSON text, with the times of its oldest and newest line. SQLite paid ~8-10
 * µs a line for a row per line (an insert into the table and its (key_id, at, id) index, and a trim per key
 * deleting rows scattered over pages shared with other keys); a chunk per key and write, and sweeps that
 * delete chunks in the order they were written (sweep plans in database-usage-stats.ts), cost ~3 µs a line
 * (docs/performance.md, 2026-11-27).
 *
 * What is shown stays exact: a chunk is deleted only once its key holds REQUEST_LOG_KEPT lines that are all
 * newer than the chunk's newest line, and a read takes every chunk that can hold one of the newest lines.
 */
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../store/schema.js';
import { lineOfStored, storedLineOf } from './request-log-lines.js';
import { REQUEST_LOG_KEPT, type RequestLogEntry } from './usage-stats.js';

/** A chunk as stored, the id aside. */
export interface ChunkRow {
  key_id: number;
  /** Epoch ms of its oldest and newest line. */
  oldest_ms: number;
  newest_ms: number;
  lines: number;
  /** JSON: an array of lines, oldest first, each [at, method, path, status, error, outcome, durationMs, address, requestId]. */
  body: string;
}

/** One key's lines of a write (oldest first, at least one) as a chunk. */
export function chunkOf(keyId: number, items: readonly RequestLogEntry[]): ChunkRow {
  const first = items[0];
  const last = items[items.length - 1];
  if (first === undefined || last === undefined) throw new Error('a request log chunk holds at least one line');
  return { key_id: keyId, oldest_ms: Date.parse(first.at), newest_ms: Date.parse(last.at), lines: items.length, body: JSON.stringify(items.map(storedLineOf)) };
}

/** A chunk's lines, oldest first; a line that is not what chunkOf writes (a row changed by hand) is left out. */
export function linesOfChunk(body: string): RequestLogEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const out: RequestLogEntry[] = [];
  for (const stored of parsed as unknown[]) {
    const line = lineOfStored(stored);
    if (line !== null) out.push(line);
  }
  return out;
}

/**
 * The newest `kept` lines of chunks (any order), none older than `since` (ISO), newest first; lines of the
 * same time in the order they were written (a later chunk's, or later in its chunk, first).
 */
export function newestLines(chunks: ReadonlyArray<{ id: number; body: string }>, since: string, kept = REQUEST_LOG_KEPT): RequestLogEntry[] {
  const all: Array<{ line: RequestLogEntry; id: number; n: number }> = [];
  for (const chunk of chunks) {
    linesOfChunk(chunk.body).forEach((line, n) => {
      if (line.at >= since) all.push({ line, id: chunk.id, n });
    });
  }
  all.sort((a, b) => (a.line.at !== b.line.at ? (a.line.at < b.line.at ? 1 : -1) : a.id !== b.id ? b.id - a.id : b.n - a.n));
  return all.slice(0, kept).map((x) => x.line);
}

/**
 * The chunks that can hold one of a key's newest `kept` lines: the time from which the key's chunks, taken
 * newest oldest-line first, hold `kept` lines, and every chunk with a line at or after it (a chunk another
 * server wrote a little later can reach back before it). The window reads the (key_id, oldest_ms, newest_ms,
 * lines) index only.
 */
export async function readChunks(db: Kysely<Database>, keyId: number, sinceMs: number, kept = REQUEST_LOG_KEPT): Promise<Array<{ id: number; body: string }>> {
  const cutoff = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('key_request_log_chunks')
        .select(['oldest_ms', sql<number | string>`sum(lines) over (order by oldest_ms desc, id desc)`.as('n')])
        .where('key_id', '=', keyId)
        .as('c'),
    )
    .select('oldest_ms')
    .where('n', '>=', kept)
    .orderBy('oldest_ms', 'desc')
    .limit(1)
    .executeTakeFirst();
  const from = Math.max(sinceMs, cutoff === undefined ? 0 : Number(cutoff.oldest_ms));
  const rows = await db.selectFrom('key_request_log_chunks').select(['id', 'body']).where('key_id', '=', keyId).where('newest_ms', '>=', from).execute();
  return rows.map((r) => ({ id: Number(r.id), body: r.body }));
}

/**
 * Deletes the chunks with ids from `from` to `to` whose key holds `kept` lines newer than the chunk's newest
 * line (which can then never be shown).
 */
export const sweepChunks = (db: Kysely<Database>, from: number, to: number, kept = REQUEST_LOG_KEPT) =>
  db
    .deleteFrom('key_request_log_chunks as c')
    .where('c.id', '>=', from)
    .where('c.id', '<=', to)
    .where((eb) =>
      eb(
        eb
          .selectFrom('key_request_log_chunks as n')
          .select((n) => n.fn.coalesce(n.fn.sum<number | string>('n.lines'), sql<number>`0`).as('newer'))
          .whereRef('n.key_id', '=', 'c.key_id')
          .whereRef('n.oldest_ms', '>', 'c.newest_ms'),
        '>=',
        kept,
      ),
    );

/**
 * How long after the write that made them a process sweeps its own chunks: each chunk is tested at each age
 * until it goes. A chunk goes at the first test after its key wrote 100 more lines, so a key keeps at most
 * about four times what it writes between two ages (a key of 8 requests a second, its 100 lines and about
 * 15 s more); a key quieter than 100 lines in 4 minutes keeps its chunks until the sweep of every chunk.
 * Swept in the order they were written, the chunks that share a page of the table go in one transaction:
 * a trim per key, which deletes one chunk of a page at a time, cost twice as much (docs/performance.md).
 */
export const SWEEP_AGES_MS: readonly number[] = [15_000, 60_000, 240_000];
/** Chunks the sweep of every chunk (every 10 minutes or so, and at a process's first write) takes per write. */
export const FULL_SWEEP_SLICE = 2_000;
/**
 * How often (real time) a write takes a slice of the sweep of every chunk. A slice a write was a slice 14-21
 * times a second on a busy server, about 7 ms each over a table of 346,000 chunks: 10-15% of the request
 * thread for the sweep's first 10-20 s after every start. Four a second still sweep 8,000 chunks a second.
 */
export const FULL_SWEEP_EVERY_MS = 250;

/** What a write sweeps: the id ranges of this process's earlier writes due a test, and the next slice of a sweep of every chunk. */
export interface SweepPlan {
  ranges: ReadonlyArray<readonly [number, number]>;
  /** The id after which the sweep of every chunk goes on; null when none is under way or its next slice is not due yet (FULL_SWEEP_EVERY_MS). */
  fullAfter: number | null;
  /** After the write: the ids of the chunks it wrote (null: none), and the last id the sweep of every chunk reached (null: it is over). */
  commit(wrote: readonly [number, number] | null, fullReached: number | null): void;
}

/** The sweeps of one process's chunks; a write that fails commits nothing, and the next one sweeps the same. */
export class ChunkSweeps {
  private writes: Array<{ at: number; from: number; to: number; tests: number }> = [];
  private fullAfter: number | null = null;
  /** When the last slice of the sweep of every chunk was taken. */
  private fullSliceAt = -Infinity;

  constructor(private readonly ages: readonly number[] = SWEEP_AGES_MS) {}

  /** A sweep of every chunk, a slice a write at most every FULL_SWEEP_EVERY_MS from the first; started again if one is under way. */
  sweepAll(): void {
    this.fullAfter = 0;
  }

  plan(now: number): SweepPlan {
    const due = this.writes.filter((w) => now - w.at >= (this.ages[w.tests] ?? Infinity));
    const fullDue = this.fullAfter !== null && now - this.fullSliceAt >= FULL_SWEEP_EVERY_MS;
    return {
      ranges: due.map((w) => [w.from, w.to] as const),
      fullAfter: fullDue ? this.fullAfter : null,
      commit: (wrote, fullReached) => {
        for (const w of due) w.tests++;
        this.writes = this.writes.filter((w) => w.tests < this.ages.length);
        if (wrote !== null && this.ages.length > 0) this.writes.push({ at: now, from: wrote[0], to: wrote[1], tests: 0 });
        if (!fullDue) return;
        this.fullAfter = fullReached;
        this.fullSliceAt = now;
      },
    };
  }
}

/** The last id of the next FULL_SWEEP_SLICE chunks after `after` (null: none). */
export const fullSweepSliceEnd = (db: Kysely<Database>, after: number, slice = FULL_SWEEP_SLICE) =>
  db
    .selectFrom((eb) => eb.selectFrom('key_request_log_chunks').select('id').where('id', '>', after).orderBy('id').limit(slice).as('s'))
    .select((eb) => eb.fn.max('s.id').as('last'));
