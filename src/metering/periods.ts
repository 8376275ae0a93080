/** Calendar arithmetic for the quota (UTC months) and per-key usage (UTC days). */
export const WINDOW_MS = 60_000;

const DAY_MS = 86_400_000;

/**
 * The last month and day named, with the span of epoch ms they cover: every request names today's (its
 * quota charge, the owners' statistics), and formatting a date is the costly part. Empty spans at first.
 */
let heldPeriod = { start: 0, end: 0, text: '' };
let heldDay = { start: 0, end: 0, text: '' };

export function periodOf(ms: number): string {
  if (ms >= heldPeriod.start && ms < heldPeriod.end) return heldPeriod.text;
  const text = new Date(ms).toISOString().slice(0, 7);
  const { start, reset } = monthBounds(ms);
  heldPeriod = { start, end: reset, text };
  return text;
}

/** Days named before, by their number since 1970: the settings pages name 90 days for each of 20 keys. */
const dayTexts = new Map<number, string>();
const DAY_TEXTS_KEPT = 4096;

export function dayOf(ms: number): string {
  if (ms >= heldDay.start && ms < heldDay.end) return heldDay.text;
  // UTC days are all DAY_MS long in epoch ms (which count no leap seconds).
  const n = Math.floor(ms / DAY_MS);
  let text = dayTexts.get(n);
  if (text === undefined) {
    text = new Date(ms).toISOString().slice(0, 10);
    if (dayTexts.size >= DAY_TEXTS_KEPT) dayTexts.clear();
    dayTexts.set(n, text);
  }
  heldDay = { start: n * DAY_MS, end: (n + 1) * DAY_MS, text };
  return text;
}

let heldSecond = { start: 0, text: '' };

/**
 * `new Date(ms).toISOString()`, with the date and time to the second made once a second: the request log
 * and the rejections name every request's time, and Date's formatting cost ~0.65 µs a call.
 */
export function isoOf(ms: number): string {
  // Fractions of a millisecond, and years before 0 or after 9999, as Date writes them (or refuses them).
  if (!Number.isInteger(ms) || ms < -62_167_219_200_000 || ms >= 253_402_300_800_000) return new Date(ms).toISOString();
  const start = Math.floor(ms / 1000) * 1000;
  if (start !== heldSecond.start || heldSecond.text === '') heldSecond = { start, text: new Date(start).toISOString().slice(0, 19) };
  const millis = ms - start;
  return `${heldSecond.text}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

let heldBounds: Readonly<{ start: number; reset: number }> = { start: 0, reset: 0 };

/** Start of the month containing ms, and of the next one (the quota reset), in epoch ms (frozen: shared). */
export function monthBounds(ms: number): Readonly<{ start: number; reset: number }> {
  if (ms >= heldBounds.start && ms < heldBounds.reset) return heldBounds;
  const d = new Date(ms);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const reset = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  heldBounds = Object.freeze({ start, reset });
  return heldBounds;
}

/** Whole seconds, rounded up, at least 1: the unit of Retry-After and the RateLimit `t` parameter. */
export function ceilSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** The days from sinceDay to untilDay, newest first. */
export function daysBetween(sinceDay: string, untilDay: string): string[] {
  const out: string[] = [];
  const start = Date.parse(`${sinceDay}T00:00:00.000Z`);
  for (let ms = Date.parse(`${untilDay}T00:00:00.000Z`); ms >= start; ms -= 86_400_000) out.push(dayOf(ms));
  return out;
}
