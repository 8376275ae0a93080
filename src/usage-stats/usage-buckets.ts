/**
 * Usage in depth (the settings screen's ranges): per key, per UTC hour and per UTC day, requests counted in
 * named fields of one small table (or one Redis hash per key and period):
 *   `e:<endpoint>`  requests by endpoint, every outcome (`e:other` for a path the API does not have);
 *   `o:<outcome>`   requests by outcome, hours only (days have key_outcomes_daily: in the database a day's
 *                   outcomes are its row there plus its `o:` hours still kept, as for the other fields);
 *   `s:<i>`         a histogram of server time, log-spaced (server-times.ts; `t:<i>`, its coarser
 *                   buckets of before, is still read).
 * Hours are kept 2 days (the 24-hour range), days as long as the outcomes are. Redis adds each flush's counts
 * to the day as well as the hour. The database writes hours only: a day's row holds the hours purged, so a
 * day is its row plus its hours still kept (an outcome's day row is key_outcomes_daily's), which halves the
 * rows a flush writes (and their account totals' triggers) where many keys are busy (docs/performance.md).
 */
import { dayOf } from '../metering/periods.js';
import { FINE_TIME_FIELDS, fineTimeBucket } from './server-times.js';

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

/** The day an hour row's field counts in, or null: a day row, or an outcome's (days have key_outcomes_daily). */
export function dayOfHourRow(period: string, field: string): string | null {
  return period.length === 13 && !field.startsWith('o:') ? period.slice(0, 10) : null;
}

/** The day and outcome of an outcome's hour row (`o:counted` of `2026-11-24T08`), or null for any other row. */
export function outcomeDayOfHourRow(period: string, field: string): { day: string; outcome: string } | null {
  return period.length === 13 && field.startsWith('o:') ? { day: period.slice(0, 10), outcome: field.slice(2) } : null;
}

/** One key's requests in one hour of a flush. */
interface HourCounts {
  accountId: number;
  endpoints: Map<string | null, number>;
  outcomes: Map<string, number>;
  /** Requests per server-time bucket (fineTimeBucket). */
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
    const counts = this.countsOf(r);
    counts.endpoints.set(endpoint, (counts.endpoints.get(endpoint) ?? 0) + 1);
    if (r.outcome !== null) counts.outcomes.set(r.outcome, (counts.outcomes.get(r.outcome) ?? 0) + 1);
    counts.times[fineTimeBucket(durationMs)]!++;
  }

  /** A request kept without its call (no endpoint or server time): its outcome alone, which a day's outcomes are read from. */
  addOutcome(r: { accountId: number; keyId: number; at: number; outcome: string }): void {
    const counts = this.countsOf(r);
    counts.outcomes.set(r.outcome, (counts.outcomes.get(r.outcome) ?? 0) + 1);
  }

  private countsOf(r: { accountId: number; keyId: number; at: number }): HourCounts {
    let hours = this.keys.get(r.keyId);
    if (hours === undefined) {
      hours = new Map();
      this.keys.set(r.keyId, hours);
    }
    const hourStart = r.at - (r.at % HOUR_MS);
    let counts = hours.get(hourStart);
    if (counts === undefined) {
      counts = { accountId: r.accountId, endpoints: new Map(), outcomes: new Map(), times: new Array<number>(FINE_TIME_FIELDS.length).fill(0) };
      hours.set(hourStart, counts);
    }
    return counts;
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
          if (into.withDays) into.add(c.accountId, keyId, day, field, sign * n);
        }
        for (let i = 0; i < c.times.length; i++) {
          const n = c.times[i]!;
          if (n === 0) continue;
          into.add(c.accountId, keyId, hour, FINE_TIME_FIELDS[i]!, sign * n);
          if (into.withDays) into.add(c.accountId, keyId, day, FINE_TIME_FIELDS[i]!, sign * n);
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

  /**
   * `withDays`: whether the counts of each hour are also added to its day's rows (Redis), or the store
   * makes the days from the hours when it purges them (the database: daysOfHours).
   */
  constructor(readonly withDays = true) {}

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
