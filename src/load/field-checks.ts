/**
 * Small checks for untrusted input (dataset files, price CSVs, command-line options). Each returns an
 * error phrase, or null when the value is good, so a caller can name the row and the field.
 */
export type Check = (value: unknown) => string | null;

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

export const isString: Check = (v) => (typeof v === 'string' ? null : 'must be a string');
export const nonEmptyString: Check = (v) => (typeof v === 'string' && v.trim() !== '' ? null : 'must be a non-empty string');
export const timestamp: Check = (v) =>
  typeof v === 'string' && canonicalTimestamp(v) !== null ? null : 'must be an ISO 8601 date-time such as 2026-11-01T00:00:00.000Z';
export const boolean: Check = (v) => (typeof v === 'boolean' ? null : 'must be true or false');
export const id: Check = (v) =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 ? null : `must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}`;
export const money: Check = (v) =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? null : 'must be a number >= 0';
export const upc: Check = (v) => (typeof v === 'string' && /^[0-9]{6,14}$/.test(v) ? null : 'must be 6 to 14 ASCII digits');
export const year: Check = (v) =>
  typeof v === 'number' && Number.isInteger(v) && v >= 1000 && v <= 9999 ? null : 'must be a four-digit year';
export const currency: Check = (v) => (typeof v === 'string' && /^[A-Z]{3}$/.test(v) ? null : 'must be a three-letter currency code such as USD');
export const oneOf =
  (values: readonly string[]): Check =>
  (v) =>
    typeof v === 'string' && values.includes(v) ? null : `must be one of ${values.join(', ')}`;
export const nullable =
  (check: Check): Check =>
  (v) =>
    v === null ? null : check(v);

export interface FieldSpec {
  check: Check;
  required: boolean;
}

export const required = (check: Check): FieldSpec => ({ check, required: true });
export const optional = (check: Check): FieldSpec => ({ check, required: false });

/** Checks one object against its fields: unknown fields, missing required ones, bad values. */
export function checkFields(row: unknown, fields: Record<string, FieldSpec>): string | null {
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return 'must be an object';
  for (const name of Object.keys(row)) {
    // Own fields only: `in` finds Object.prototype members, so "__proto__" or "constructor" passed as known.
    if (!Object.hasOwn(fields, name)) return `unknown field '${name}'`;
  }
  for (const [name, spec] of Object.entries(fields)) {
    const value = (row as Record<string, unknown>)[name];
    if (value === undefined) {
      if (spec.required) return `field '${name}' is required`;
      continue;
    }
    const problem = spec.check(value);
    if (problem !== null) return `field '${name}' ${problem}`;
  }
  return null;
}
