/**
 * The endpoint's own limit, per server and apart from the API's meter: reports per client address per
 * minute, and reports being worked on at once. Checked in onRequest, before the body is read: a flood of
 * posts (signed or not) costs a Map lookup each, never a body, a signature check or a query, and leaves
 * the API's requests and its meter alone. GitHub sends a report per batch of findings, a few a minute at
 * most from any one address.
 */
export interface ReportLimitOptions {
  perAddressPerMinute: number;
  /** Reports read, checked and answered at once by this server. */
  atOnce: number;
  /** Addresses remembered within a minute; past it, new addresses are refused until the minute turns. */
  maxAddresses: number;
}

export const DEFAULT_REPORT_LIMITS: ReportLimitOptions = { perAddressPerMinute: 60, atOnce: 4, maxAddresses: 10_000 };

const WINDOW_MS = 60_000;

export class ReportLimit {
  private windowStart = -Infinity;
  private counts = new Map<string, number>();
  private running = 0;

  constructor(private readonly options: ReportLimitOptions = DEFAULT_REPORT_LIMITS) {}

  /**
   * Takes a turn for `address`: null when given (call `release` once answered), or the seconds after which
   * to retry.
   */
  take(address: string, now: number): number | null {
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.counts.clear();
    }
    const retryAfter = Math.max(1, Math.ceil((this.windowStart + WINDOW_MS - now) / 1000));
    const count = this.counts.get(address) ?? 0;
    if (count === 0 && this.counts.size >= this.options.maxAddresses) return retryAfter;
    // Counted refused or not: a client ignoring its 429s stays refused for the rest of the minute.
    this.counts.set(address, count + 1);
    if (count >= this.options.perAddressPerMinute) return retryAfter;
    if (this.running >= this.options.atOnce) return 1;
    this.running += 1;
    return null;
  }

  release(): void {
    this.running = Math.max(0, this.running - 1);
  }
}
