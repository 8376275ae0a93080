/**
 * The owners' statistics written from a thread of their own (`serve` with STATS_THREAD on, config.ts): the request path only hands each
 * request's record over, and the summing, the request log's redaction and the writes to the database or Redis
 * run beside it. In the request's thread they cost about a third of an item GET's CPU at 1,001 keys
 * (docs/performance.md); handed over, about 2 µs a record (a structured clone of the turn's records).
 *
 * The thread (usage-stats-worker.ts) holds the same BufferedUsageStats a server without it holds, over a
 * connection of its own: one write at a time, records kept through a store's brief outage, the last ones
 * written at close. Reads (the settings screen) stay on the server's own connection. A thread that dies is
 * started again, and the records it held are lost, as a crash loses the last second of statistics (never a
 * counted request: the quota lives in the meter).
 */
import { Worker } from 'node:worker_threads';
import type { DatabaseConfig } from '../config.js';
import type { RedisTarget } from '../metering/redis-client.js';
import type { DayOutcomes, LastUse, Rejection, RequestLogEntry, RequestRecord, UsageStats } from './usage-stats.js';
import type { StatsPace } from './stats-pace.js';

/** What the thread needs to open its own writer. */
export interface StatsWriterTarget {
  /** Where the statistics are written: Redis when set, else the database. */
  redis: RedisTarget | null;
  redisKeyPrefix: string;
  database: DatabaseConfig;
  /** The keys' prefix (config.keyPrefix): the request log the thread writes cuts out their secrets, which it recognises by it. */
  keyPrefix: string;
}

/**
 * The thread writes once a second what came in that second: a long write holds no request up there, and
 * written at once every 2,000 records (the request thread's pace) the same work cost the thread a third more
 * (the request log of a busy second merged again at each write).
 */
export const THREAD_PACE: StatsPace = { flushDelayMs: 1000, flushRecords: Infinity };

/** From the server to the thread. */
export type ToStatsThread = { records: RequestRecord[] } | { flush: number } | { close: number };
/** From the thread: a flush or close done (error: its message), or the thread ready to take records. */
export type FromStatsThread = { done: number; error: string | null } | { ready: true };

/**
 * The thread's young generation, in MB. V8 sizes each thread's by the machine's memory, and the server's cap
 * (observability/heap-growth.ts) reaches its own thread only: unbounded, the thread added 63-80 MB to a
 * PostgreSQL + Redis server's peak RSS under wrk. At 16 MB the thread collected its young generation 12
 * times a second and its whole heap twice a second (--trace-gc, 10,000 keys): a second's records, held for
 * the write, outlived two young collections and were promoted, and the old generation filled with them.
 * At 32 MB, 5 and 0.5 a second: the item GET's server CPU fell 140 -> 126 µs a request and V8's helper
 * threads (which mark concurrently, on the same 2 cores as the request thread) were freed; peak RSS at 200
 * connections 301 -> 329 MB. 64 MB gave the same CPU for 67 MB. At 24 MB, PostgreSQL + Redis over 10,000
 * accounts peaked at 273-275 MB against 320-324 at 32, item GETs as fast in turns (ratios 0.23 / 0.22 / 0.19
 * against 0.17 / 0.23 / 0.18): with the thread the server stays under the 300 MB check (docs/performance.md).
 */
const THREAD_YOUNG_GENERATION_MB = 24;

/**
 * The thread's module: the built .js; or, when the server itself runs from source (tsx: the tests, the
 * benches' helpers), the .ts through tsx's loader, which a worker thread does not inherit.
 */
function newStatsWorker(workerData: StatsWriterTarget): Worker {
  const options = { workerData, resourceLimits: { maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB } };
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./usage-stats-worker.js', import.meta.url), options);
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./usage-stats-worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { ...options, eval: true });
}

const RESTART_DELAY_MS = 1000;
/** Records go to the thread this often, or once this many are waiting. */
const SEND_EVERY_MS = 50;
const SEND_RECORDS = 1000;

export class ThreadedUsageStats implements UsageStats {
  private worker!: Worker;
  private pending: RequestRecord[] = [];
  private sendTimer: NodeJS.Timeout | null = null;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  private closed = false;
  private alive = false;
  /** How often the thread was started again after it died. */
  restarts = 0;

  private constructor(
    private readonly target: StatsWriterTarget,
    /** The reads, and nothing else: records never reach it. */
    private readonly reader: UsageStats,
    private readonly onThreadError: (error: Error) => void,
  ) {}

  /** Starts the thread and resolves once its writer is connected (rejects when it cannot be). */
  static async start(target: StatsWriterTarget, reader: UsageStats, onThreadError: (error: Error) => void): Promise<ThreadedUsageStats> {
    const stats = new ThreadedUsageStats(target, reader, onThreadError);
    await stats.spawn();
    return stats;
  }

  private spawn(): Promise<void> {
    const worker = newStatsWorker(this.target);
    this.worker = worker;
    return new Promise<void>((resolve, reject) => {
      let started = false;
      worker.on('message', (message: FromStatsThread) => {
        if ('ready' in message) {
          started = true;
          this.alive = true;
          return resolve();
        }
        const waiter = this.waiting.get(message.done);
        this.waiting.delete(message.done);
        if (message.error === null) waiter?.resolve();
        else waiter?.reject(new Error(message.error));
      });
      worker.on('error', (error) => {
        if (started) this.onThreadError(error);
        else reject(error);
      });
      worker.on('exit', (code) => {
        // A thread that ends before it is ready (an exit without an error) must not leave start() waiting.
        if (!started) reject(new Error(`the statistics thread ended before it was ready (exit code ${code})`));
        this.alive = false;
        // Whatever was asked of it will not be answered: a flush or close waiting on it fails.
        this.failWaiting();
        // A thread that died while the server runs is started again, a moment later (not in a loop).
        if (started && !this.closed) {
          this.restarts++;
          setTimeout(() => {
            if (!this.closed) this.spawn().catch((error: unknown) => this.onThreadError(error instanceof Error ? error : new Error(String(error))));
          }, RESTART_DELAY_MS).unref();
        }
      });
    });
  }

  private failWaiting(): void {
    for (const [id, waiter] of this.waiting) {
      this.waiting.delete(id);
      waiter.reject(new Error('the statistics thread stopped'));
    }
  }

  record(request: RequestRecord): void {
    this.pending.push(request);
    if (this.pending.length >= SEND_RECORDS) return this.send();
    if (this.sendTimer !== null) return;
    // Each message wakes the thread: records go over in batches, not one a turn.
    this.sendTimer = setTimeout(() => this.send(), SEND_EVERY_MS);
    this.sendTimer.unref();
  }

  private send(): void {
    if (this.sendTimer !== null) clearTimeout(this.sendTimer);
    this.sendTimer = null;
    if (this.pending.length === 0) return;
    // A thread being started again takes none: those records are lost with the ones it held.
    const records = this.pending;
    this.pending = [];
    this.worker.postMessage({ records } satisfies ToStatsThread);
  }

  private ask(message: (id: number) => ToStatsThread): Promise<void> {
    if (!this.alive) return Promise.reject(new Error('the statistics thread is not running'));
    this.send();
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage(message(id));
    });
  }

  /** Writes everything handed over so far. */
  flush(): Promise<void> {
    return this.ask((id) => ({ flush: id }));
  }

  /** Writes what is held (the thread's own close), stops the thread, then lets go of the reads' connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      if (this.alive) await this.ask((id) => ({ close: id }));
    } finally {
      this.closed = true;
      await this.worker.terminate();
      await this.reader.close();
    }
  }

  keyOutcomes(accountId: number, keyId: number, sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
    return this.reader.keyOutcomes(accountId, keyId, sinceDay, untilDay);
  }

  keysOutcomes(accountId: number, keyIds: readonly number[], sinceDay: string, untilDay: string): Promise<DayOutcomes[]> {
    return this.reader.keysOutcomes(accountId, keyIds, sinceDay, untilDay);
  }

  recentRejections(accountId: number, keyId: number): Promise<Rejection[]> {
    return this.reader.recentRejections(accountId, keyId);
  }

  lastUse(accountId: number, keyIds: readonly number[]): Promise<Map<number, LastUse>> {
    return this.reader.lastUse(accountId, keyIds);
  }

  requestLog(accountId: number, keyId: number, since: string): Promise<RequestLogEntry[]> {
    return this.reader.requestLog(accountId, keyId, since);
  }

  usageBuckets(accountId: number, keyIds: readonly number[], periods: readonly string[]): Promise<Map<string, Map<string, number>>> {
    return this.reader.usageBuckets(accountId, keyIds, periods);
  }

  accountDays(accountId: number, shown: readonly number[], hidden: readonly number[], days: readonly string[]): Promise<Map<string, Map<string, number>>> {
    return this.reader.accountDays(accountId, shown, hidden, days);
  }
}
