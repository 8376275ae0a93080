/** Calendar arithmetic for the quota (UTC months) and per-key usage (UTC days). */
export const WINDOW_MS = 60_000;

export function periodOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Start of the month containing ms, and of the next one (the quota reset), in epoch ms. */
export function monthBounds(ms: number): { start: number; reset: number } {
  const d = new Date(ms);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const reset = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return { start, reset };
}

/** Whole seconds, rounded up, at least 1: the unit of Retry-After and the RateLimit `t` parameter. */
export function ceilSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
