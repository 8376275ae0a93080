/**
 * What the service accepts as a timestamp from outside (dataset files, price CSVs, key expiry): ISO 8601
 * with a time and a zone, on a day that exists. Stored and served in one canonical form.
 */
const CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The two digits of `value` at `at`, as a number (the caller has matched CANONICAL: they are digits). */
const twoDigits = (value: string, at: number): number => (value.charCodeAt(at) - 48) * 10 + value.charCodeAt(at + 1) - 48;

/**
 * Whether a string of the canonical form names a real instant: what a round trip through Date decides (a
 * month, day, hour, minute and second in range, February 29th in leap years), read from the digits, with
 * no Date and no string made; a million-row load checks two timestamps a row.
 */
function isRealCanonical(value: string): boolean {
  const year = twoDigits(value, 0) * 100 + twoDigits(value, 2);
  const month = twoDigits(value, 5);
  const day = twoDigits(value, 8);
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] as number);
  return day <= days && twoDigits(value, 11) < 24 && twoDigits(value, 14) < 60 && twoDigits(value, 17) < 60;
}

/** Canonical form of a timestamp (UTC, milliseconds), or null when it is not an ISO 8601 date-time. */
export function canonicalTimestamp(value: string): string | null {
  // Fast path for the form the service writes itself (bulk loads are made of it): valid exactly when it
  // survives the round trip through Date, which also refuses days that do not exist.
  if (CANONICAL.test(value)) return isRealCanonical(value) ? value : null;
  if (!ISO_TIMESTAMP.test(value)) return null;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return null;
  // Date.parse rolls 2026-02-31 over to March; refuse dates that do not exist.
  const [y, m, d] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
  const probe = new Date(Date.UTC(y, m - 1, d));
  if (probe.getUTCFullYear() !== y || probe.getUTCMonth() !== m - 1 || probe.getUTCDate() !== d) return null;
  return new Date(ms).toISOString();
}
