/**
 * At most a few list scans (a page and its total, a collection's value) run on PostgreSQL at once; the
 * others wait their turn here, in the server, instead of in the connection pool. Why: fifty first requests
 * for uncached totals took every pooled connection and ran side by side, each slowed past the query time
 * limit, so the key lookups of all other requests timed out waiting for a connection and the counts never
 * finished to be cached: the server answered 503 to everyone for as long as the load lasted. One at a time,
 * each count finishes in a fraction of the limit and is cached (read-cache.ts), and the queue drains.
 * SQLite needs none of this: its queries run synchronously on the event loop, one at a time anyway.
 */
export class StoreBusyError extends Error {
  constructor() {
    super('too many list queries are waiting; retry shortly');
    this.name = 'StoreBusyError';
  }
}

export class ScanLimiter {
  private running = 0;
  private readonly queue: Array<{ start: () => void; timer: NodeJS.Timeout }> = [];

  /**
   * @param slots scans that may run at once
   * @param maxWaitMs how long a request waits for a slot before it is answered 503 (Retry-After), so a
   *   request never hangs behind a store that has stopped answering
   */
  constructor(
    private readonly slots: number,
    private readonly maxWaitMs: number,
  ) {}

  async run<T>(scan: () => Promise<T>): Promise<T> {
    if (this.running < this.slots) this.running++;
    else await this.waitForSlot();
    try {
      return await scan();
    } finally {
      // The slot passes straight to the next waiter, so no newcomer can slip in between.
      const next = this.queue.shift();
      if (next === undefined) this.running--;
      else {
        clearTimeout(next.timer);
        next.start();
      }
    }
  }

  private waitForSlot(): Promise<void> {
    return new Promise((resolve, reject) => {
      const entry = {
        start: resolve,
        timer: setTimeout(() => {
          const at = this.queue.indexOf(entry);
          if (at >= 0) this.queue.splice(at, 1);
          reject(new StoreBusyError());
        }, this.maxWaitMs),
      };
      this.queue.push(entry);
    });
  }
}

/** For SQLite: runs the scan at once. */
export const noScanLimit = { run: <T>(scan: () => Promise<T>): Promise<T> => scan() };
export type ScanRunner = Pick<ScanLimiter, 'run'>;
