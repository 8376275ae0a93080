/**
 * Usage in depth (the settings screen's ranges): per key, per UTC hour and per UTC day, requests counted in
 * named fields of one small table (or one Redis hash per key and period):
 *   `e:<endpoint>`  requests by endpoint, every outcome (`e:other` for a path the API does not have);
 *   `o:<outcome>`   requests by outcome, hours only (days have key_outcomes_daily, kept since before);
 *   `t:<i>`         a histogram of server time: bucket i of SERVER_TIME_BOUNDS_MS.
 * Percentiles come from the histogram: the upper bound of the bucket the rank falls in, so "p95 10 ms"
 * means at least 95% of the requests took at most 10 ms. Hours are kept 2 days (the 24-hour range), days
 * as long as the outcomes are.
 */
import { dayOf } from '../metering/periods.js';

/** Upper bounds of the server-time buckets, in ms; the last bucket holds everything slower. */
export const SERVER_TIME_BOUNDS_MS = [0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 2000, 5000] as const;

/** Hours are kept this long: the 24-hour range, and a day's margin. */
export const HOURS_KEPT_MS = 2 * 86_400_000;

const HOUR_MS = 3_600_000;
let heldHour = { start: 0, end: 0, text: '' };

/** `2026-11-24T08`: the UTC hour of ms, as periods name it. */
export function hourOf(ms: number): string {
  if (ms >= heldHour.start && ms < heldHour.end) return heldHour.text;
  const text = new Date(ms).toISOString().slice(0, 13);
  const start = Math.floor(ms / HOUR_MS) * HOUR_MS;
  heldHour = { start, end: start + HOUR_MS, text };
  return text;
}

/** The index of the server-time bucket a duration falls in. */
export function serverTimeBucket(ms: number): number {
  let i = 0;
  while (i < SERVER_TIME_BOUNDS_MS.length && ms > SERVER_TIME_BOUNDS_MS[i]!) i++;
  return i;
}

/**
 * A field's name, made once per name: a busy flush names ~7 fields a request, and each was a new string.
 * The names held are few and fixed: the API's routes and the outcomes, never what a client sent.
 */
function interned(make: (name: string) => string): (name: string) => string {
  const made = new Map<string, string>();
  return (name) => {
    let field = made.get(name);
    if (field === undefined) {
      field = make(name);
      made.set(name, field);
    }
    return field;
  };
}
const endpointFieldOf = interned((endpoint) => `e:${endpoint}`);
export const endpointField = (endpoint: string | null) => endpointFieldOf(endpoint ?? 'other');
export const outcomeField = interned((outcome) => `o:${outcome}`);
const TIME_FIELDS = Array.from({ length: SERVER_TIME_BOUNDS_MS.length + 1 }, (_, i) => `t:${i}`);

/** One key's requests in one hour of a flush. */
interface HourCounts {
  accountId: number;
  endpoints: Map<string | null, number>;
  outcomes: Map<string, number>;
  times: number[];
}

/**
 * A flush's bucket counts, per key and hour: a few map updates per request with keys that need no
 * building (numbers, and strings the request already holds); spread into the hours' and days' counts the
 * flush holds (addTo).
 */
export class UsageBucketCounter {
  private readonly keys = new Map<number, Map<number, HourCounts>>();

  /** One request of the key at `at` (epoch ms); its outcome null when it counts in no outcome bucket. */
  add(r: { accountId: number; keyId: number; at: number; outcome: string | null }, endpoint: string | null, durationMs: number): void {
    let hours = this.keys.get(r.keyId);
    if (hours === undefined) {
      hours = new Map();
      this.keys.set(r.keyId, hours);
    }
    const hourStart = r.at - (r.at % HOUR_MS);
    let counts = hours.get(hourStart);
    if (counts === undefined) {
      counts = { accountId: r.accountId, endpoints: new Map(), outcomes: new Map(), times: new Array<number>(SERVER_TIME_BOUNDS_MS.length + 1).fill(0) };
      hours.set(hourStart, counts);
    }
    counts.endpoints.set(endpoint, (counts.endpoints.get(endpoint) ?? 0) + 1);
    if (r.outcome !== null) counts.outcomes.set(r.outcome, (counts.outcomes.get(r.outcome) ?? 0) + 1);
    counts.times[serverTimeBucket(durationMs)]!++;
  }

  /**
   * Adds these counts (times `sign`) to `into`, those of the accounts `of` accepts only (all without it):
   * straight into the counts a flush holds, without rows made and copied in between.
   */
  addTo(into: BucketCounts, sign: 1 | -1 = 1, of?: (accountId: number) => boolean): void {
    for (const [keyId, hours] of this.keys) {
      for (const [hourStart, c] of hours) {
        if (of !== undefined && !of(c.accountId)) continue;
        const hour = hourOf(hourStart);
        const day = dayOf(hourStart);
        for (const [endpoint, n] of c.endpoints) {
          const field = endpointField(endpoint);
          into.add(c.accountId, keyId, hour, field, sign * n);
          into.add(c.accountId, keyId, day, field, sign * n);
        }
        for (let i = 0; i < c.times.length; i++) {
          const n = c.times[i]!;
          if (n === 0) continue;
          into.add(c.accountId, keyId, hour, TIME_FIELDS[i]!, sign * n);
          into.add(c.accountId, keyId, day, TIME_FIELDS[i]!, sign * n);
        }
        for (const [outcome, n] of c.outcomes) into.add(c.accountId, keyId, hour, outcomeField(outcome), sign * n);
      }
    }
  }
}

export interface BucketRow {
  accountId: number;
  keyId: number;
  period: string;
  field: string;
  requests: number;
}

/**
 * Bucket rows summed by key, period and field, in maps nested in that order: a busy flush adds ~7 rows a
 * request, and an id built of the three (`12|2026-11-24|e:/me`) was a string made and hashed for each.
 */
export class BucketCounts {
  private readonly keys = new Map<number, Map<string, Map<string, BucketRow>>>();
  /** Rows held. */
  size = 0;

  /** Adds `requests` (negative to take away); a count that comes to 0 is let go. */
  add(accountId: number, keyId: number, period: string, field: string, requests: number): void {
    if (requests === 0) return;
    let periods = this.keys.get(keyId);
    if (periods === undefined) {
      periods = new Map();
      this.keys.set(keyId, periods);
    }
    let fields = periods.get(period);
    if (fields === undefined) {
      fields = new Map();
      periods.set(period, fields);
    }
    const row = fields.get(field);
    if (row === undefined) {
      fields.set(field, { accountId, keyId, period, field, requests });
      this.size++;
    } else if (row.requests + requests === 0) {
      fields.delete(field);
      this.size--;
    } else row.requests += requests;
  }

  /** The keys whose rows are held. */
  keyIds(): IterableIterator<number> {
    return this.keys.keys();
  }

  /** How many rows of the key are held. */
  rowsOf(keyId: number): number {
    let n = 0;
    for (const fields of this.keys.get(keyId)?.values() ?? []) n += fields.size;
    return n;
  }

  /** The key's rows, taken out of those held. */
  take(keyId: number): BucketRow[] {
    const out: BucketRow[] = [];
    for (const fields of this.keys.get(keyId)?.values() ?? []) for (const row of fields.values()) out.push(row);
    this.keys.delete(keyId);
    this.size -= out.length;
    return out;
  }
}

/** Server-time histogram counts (index -> requests) out of a period's fields. */
export function histogramOf(fields: ReadonlyMap<string, number> | undefined, into: number[] = new Array<number>(SERVER_TIME_BOUNDS_MS.length + 1).fill(0)): number[] {
  if (fields === undefined) return into;
  for (const [field, n] of fields) {
    if (!field.startsWith('t:')) continue;
    const i = Number(field.slice(2));
    if (Number.isInteger(i) && i >= 0 && i < into.length) into[i]! += n;
  }
  return into;
}

/**
 * The p-th percentile (0 < p <= 1) of a histogram: the upper bound in ms of the bucket its rank falls in;
 * null for no requests, Infinity past the last bound.
 */
export function percentileOf(histogram: readonly number[], p: number): number | null {
  const total = histogram.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i]!;
    if (seen >= rank) return SERVER_TIME_BOUNDS_MS[i] ?? Infinity;
  }
  return Infinity;
}
