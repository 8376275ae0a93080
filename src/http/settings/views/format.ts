/** Plain formatting the views share: numbers, UTC times, relative times. Pure functions of their input. */
import { utcMinute } from '../../../services/time-text.js';

const numberFormat = new Intl.NumberFormat('en-US');

/**
 * "1,234,567": en-US grouping. A whole number is grouped by hand, as Intl would: the 90-day overview formats
 * a few thousand counts, and Intl's format() was 4% of its CPU (docs/performance.md). Anything else goes to Intl.
 */
export function formatCount(n: number): string {
  if (!Number.isSafeInteger(n) || Object.is(n, -0)) return numberFormat.format(n);
  const digits = String(Math.abs(n));
  if (digits.length <= 3) return n < 0 ? `-${digits}` : digits;
  let out = digits.slice(0, digits.length % 3 || 3);
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return n < 0 ? `-${out}` : out;
}

/** "2026-11-24 08:12 UTC": the exact time, always UTC, as the contract's times are (the log's and CLI's format). */
export function formatUtc(iso: string): string {
  // Through Date.parse: a time in another offset is shown in UTC, as before, not sliced as written.
  return utcMinute(Date.parse(iso));
}

/** One formatter for every call: toLocaleDateString with options builds one each time (1.3 ms of a 90-day overview). */
const DAY_FORMAT = new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', month: 'short', day: 'numeric' });

export function formatDay(day: string): string {
  return DAY_FORMAT.format(new Date(`${day}T00:00:00Z`));
}

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
];
const relativeFormat = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/**
 * "3 minutes ago", "in 2 days", "just now". A time past counts the whole units gone by (29.9 days ago reads
 * "29 days ago"); a time to come counts the units begun, rounded up, so that a key made for 30 days reads "in
 * 30 days" when it is made and until a whole day of it has gone, and a roll's old key "stops in 24 hours".
 * Months and years to come, rough units, are rounded to the nearest (a 90-day key: "in 3 months").
 */
export function formatRelative(iso: string, now: number): string {
  const delta = Date.parse(iso) - now;
  const size = Math.abs(delta);
  if (size < 60_000) return 'just now';
  for (const [unit, ms] of UNITS) {
    if (size < ms) continue;
    if (delta < 0) return relativeFormat.format(-Math.floor(size / ms), unit);
    return relativeFormat.format(unit === 'month' || unit === 'year' ? Math.round(size / ms) : Math.ceil(size / ms), unit);
  }
  return 'just now';
}

export function percent(part: number, whole: number): number {
  if (whole <= 0) return part > 0 ? 100 : 0;
  return Math.min(100, Math.floor((part / whole) * 100));
}

/** "1 request", "1,234 requests". */
export function requestsText(n: number): string {
  return `${formatCount(n)} ${n === 1 ? 'request' : 'requests'}`;
}
