/**
 * What the service accepts as a timestamp from outside (dataset files, price CSVs, key expiry): ISO 8601
 * with a time and a zone, on a day that exists. Stored and served in one canonical form.
 */
const CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** Canonical form of a timestamp (UTC, milliseconds), or null when it is not an ISO 8601 date-time. */
export function canonicalTimestamp(value: string): string | null {
  // Fast path for the form the service writes itself (bulk loads are made of it): valid exactly when it
  // survives the round trip through Date, which also refuses days that do not exist.
  if (CANONICAL.test(value)) {
    const ms = Date.parse(value);
    return !Number.isNaN(ms) && new Date(ms).toISOString() === value ? value : null;
  }
  if (!ISO_TIMESTAMP.test(value)) return null;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return null;
  // Date.parse rolls 2026-02-31 over to March; refuse dates that do not exist.
  const [y, m, d] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
  const probe = new Date(Date.UTC(y, m - 1, d));
  if (probe.getUTCFullYear() !== y || probe.getUTCMonth() !== m - 1 || probe.getUTCDate() !== d) return null;
  return new Date(ms).toISOString();
}
