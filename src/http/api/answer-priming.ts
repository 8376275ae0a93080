/**
 * Priming: when a generation of item answers starts (a server's first request, and the first request after
 * every load or import), the whole catalogue's answers are read in the background, a page at a time in id
 * order, and kept under that generation's data version, so that the requests which follow find them in
 * memory instead of each reading its row from the store once (a fresh PostgreSQL + Redis server served the
 * item GET about 45% slower until its cache was warm).
 *
 * Only when the whole resource fits in the cache's bound: of a catalogue larger than the cache, priming
 * would keep an arbitrary first slice (the lowest ids), which real traffic then pushes out again, paying
 * the reads twice. For the same reason it never evicts: it stops before the cache's bytes pass
 * PRIMED_SHARE of their bound, leaving the rest to what requests ask for.
 *
 * The generation's invariant (versioned-answers.ts) holds: the prime starts from a request that has just
 * read the version, so every page is read after it; after each read the generation is checked again, and a
 * prime whose version was replaced stops. An answer already held is never replaced. A page that cannot be
 * read stops the prime with one warning; requests meanwhile take the normal path, and never see its errors.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Dialect } from '../../store/dialect.js';
import type { ItemPages } from '../../store/item-pages.js';

/** Priming stops before the held answers' bytes pass this share of the cache's bound. */
export const PRIMED_SHARE = 0.9;

/**
 * Rows a page. SQLite reads synchronously, and the prime yields between pages: on a 20,000-item demo
 * catalogue a page of 200 (read, each body serialized and hashed) held the event loop 2.5-5 ms, and with both
 * caches priming at once each turn of the loop runs a page of each; pages of 100 halved the loop's delay
 * (mean 7.3 -> 4.7 ms, p99 21 -> 12 ms while priming) and primed as fast (about a second for both caches).
 * PostgreSQL's read is a round trip that holds nothing; 500 rows keep the round trips few and the
 * serializing of a page short.
 */
const PAGE_ROWS: Record<Dialect, number> = { sqlite: 100, postgres: 500 };

/** The app's logger (FastifyBaseLogger), as much of it as a prime writes to. */
export interface PrimeLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** What a cache is primed from, and how its log lines name it. */
export interface ItemPriming<Row> {
  /** What the log calls the cache: 'catalogue items', 'prices'. */
  name: string;
  pages: ItemPages<Row>;
  pageRows: number;
  log: PrimeLog;
}

export function itemPriming<Row>(name: string, pages: ItemPages<Row>, dialect: Dialect, log: PrimeLog): ItemPriming<Row> {
  return { name, pages, pageRows: PAGE_ROWS[dialect], log };
}

/** The cache being primed, as the prime sees it. */
export interface PrimeTarget<A> {
  /** The most answers the cache holds. */
  maxEntries: number;
  /** Whether the cache's generation is still that of `version`. */
  isCurrent(version: number): boolean;
  /** Whether `answer` can be kept without evicting or passing PRIMED_SHARE of the bytes. */
  fits(answer: A): boolean;
  /** Keeps `answer` unless `id` holds one already; true when kept. */
  keepUnlessHeld(version: number, id: number, answer: A): boolean;
}

/** How a prime ended: every row kept, none (too many rows), stopped at the bytes' share, by a newer version or a close, or by a failure. */
export type PrimeOutcome = 'primed' | 'too-large' | 'full' | 'superseded' | 'failed';

export interface PrimeJob<Row, A> {
  version: number;
  priming: ItemPriming<Row>;
  target: PrimeTarget<A>;
  /** The answer of a row, as the route would send it. */
  answerOf(row: Row): A;
  /** True once the cache is closed (the app is closing, the store about to be). */
  closed(): boolean;
}

/** Runs one prime to its end. Never rejects: every failure is logged and ends the prime. */
export async function primeAnswers<Row, A>(job: PrimeJob<Row, A>): Promise<PrimeOutcome> {
  const { version, priming, target } = job;
  const { pages, pageRows, log } = priming;
  const context = { cache: priming.name, dataVersion: version };
  const started = performance.now();
  const ended = () => job.closed() || !target.isCurrent(version);
  let kept = 0;
  try {
    // One count, stopped just past the bound: beyond it the number does not matter.
    const rows = await pages.countUpTo(target.maxEntries + 1);
    if (rows > target.maxEntries) {
      log.info({ ...context, maxEntries: target.maxEntries }, 'item answers not primed: more rows than the cache holds');
      return 'too-large';
    }
    for (let afterId = 0; ; ) {
      if (ended()) return 'superseded';
      const page = await pages.after(afterId, pageRows);
      // Checked after the read: a page read while a newer version was taking over is not kept under the old one.
      if (ended()) return 'superseded';
      for (const row of page) {
        const answer = job.answerOf(row);
        if (!target.fits(answer)) {
          log.info({ ...context, answers: kept }, 'item answers primed in part: the cache is nearly full');
          return 'full';
        }
        if (target.keepUnlessHeld(version, pages.idOf(row), answer)) kept++;
      }
      const last = page.at(-1);
      if (page.length < pageRows || last === undefined) break;
      afterId = pages.idOf(last);
      // SQLite's reads are synchronous: without this the whole prime would be one hold of the event loop.
      await nextTurn();
    }
  } catch (error) {
    // The message only: a driver's error object can carry more than the log should.
    log.warn({ ...context, reason: error instanceof Error ? error.message : String(error) }, 'item answers priming stopped: the store could not be read');
    return 'failed';
  }
  log.info({ ...context, answers: kept, ms: Math.round(performance.now() - started) }, 'item answers primed');
  return 'primed';
}
