/**
 * Per-key statistics for account owners (docs/contract.md, "Metering"): requests per UTC day by outcome, the
 * last use (time and client address), the last 20 rejected requests, the request log (the last 100 requests
 * of every outcome, 7 days), and usage in depth (per hour and per day: requests by endpoint, by outcome, and
 * a histogram of server time, usage-buckets.ts). Unlike the quota, which stays
 * exact and durable in the meter, these are gathered in memory and written in batches at most a second
 * later (one transaction, or Redis pipelines, per flush), so that a request only pays for an array push.
 * A normal stop (close) writes what is still held.
 *
 * This module is the interface (UsageStats), the records a request leaves and the outcome it is counted
 * under; the buffering every store shares is buffered-usage-stats.ts, when it writes stats-pace.ts.
 *
 * Two stores, chosen like the meter: the database (database-usage-stats.ts) or Redis when REDIS_URL or
 * REDIS_CLUSTER_URLS is set (redis-usage-stats.ts). Reads take the account id first: in Redis one account's statistics share a hash
 * slot, so that they can live on a Redis Cluster next to its meter.
 */
import type { Selectable } from 'kysely';
import type { KeyRejectionsTable } from '../store/schema.js';
import { daysBetween } from '../metering/periods.js';

export const OUTCOMES = [
  'counted',
  'not_modified',
  'bad_request',
  'insufficient_scope',
  'rate_limited',
  'quota_exceeded',
  'server_error',
  'revoked_or_expired',
  'refused_address',
] as const;
export type Outcome = (typeof OUTCOMES)[number];

export const REJECTIONS_KEPT = 20;

/**
 * A rejected request as an owner sees it: the stored row (key_rejections) without its id and key, the
 * request id in camelCase. Its path is without the query string.
 */
export type Rejection = Omit<Selectable<KeyRejectionsTable>, 'id' | 'key_id' | 'request_id'> & { requestId: string };

export interface LastUse {
  at: string;
  /** The client address the request came from. */
  address: string | null;
}

/** How many requests a key's request log keeps, and for how long. */
export const REQUEST_LOG_KEPT = 100;
export const REQUEST_LOG_MS = 7 * 86_400_000;

/**
 * What a key's request log shows of a request: not only the outcomes of the day buckets, `not_counted` is
 * the rest (/me, OPTIONS, a lapsed plan's 403).
 */
export type LogOutcome = Outcome | 'not_counted';

/** One line of a key's request log, as stored and as the owner sees it. */
export interface RequestLogEntry {
  /** ISO 8601 UTC. */
  at: string;
  method: string;
  /** Path and query string, keys and sign-in tokens redacted, cut short past 300 characters. */
  path: string;
  status: number;
  /** The error code answered, null for a success. */
  error: string | null;
  outcome: LogOutcome;
  /** Server time: from the request's arrival to the end of the answer, in ms (two decimals). */
  durationMs: number;
  address: string | null;
  /** The X-Request-Id the client got. */
  requestId: string;
}

/**
 * What the request log and the usage buckets take of a request, as cheap to gather as can be: the URL is
 * scanned for keys only when a flush keeps its line (the newest 100 per key).
 */
export interface CallRecord {
  method: string;
  /** The URL as received (path and query), not yet redacted. */
  url: string;
  status: number;
  error: string | null;
  durationMs: number;
  address: string | null;
  requestId: string;
  /** The API route it matched without the /developer/v1 prefix (`/catalogue/:id`), null for none. */
  endpoint: string | null;
}

/** One request that reached a key, as the pipeline saw it when answering. */
export interface RequestRecord {
  accountId: number;
  keyId: number;
  /** Epoch ms. */
  at: number;
  /** The day's bucket it counts in; null when it counts in none (/me, OPTIONS, a lapsed plan's 403). */
  outcome: Outcome | null;
  /** Set when the request got past the key and plan checks: it is the key's last use. */
  address: string | null;
  used: boolean;
  rejection: Rejection | null;
  /** For the request log and the usage buckets; records made outside the pipeline (some tests) carry none. */
  call?: CallRecord;
}

export type OutcomeCounts = Record<Outcome, number>;

export interface DayOutcomes {
  day: string;
  counts: OutcomeCounts;
}

export interface UsageStats {
  /** Takes a request's record; written at most a second later. */
  record(request: RequestRecord): void;
  /** Writes everything held now (tests, and close). */
  flush(): Promise<void>;
  /** Every UTC day from sinceDay to untilDay, newest first, with its counts by outcome (zeros included). */
  keyOutcomes(accountId: number, keyId: number, sinceDay: string, untilDay: string): Promise<DayOutcomes[]>;
  /**
   * keyOutcomes of several keys of the account summed per day and outcome, in one read (the overview's 90
   * days of 20 keys were 20 queries, or 1,820 HGETALLs in Redis).
   */
  keysOutcomes(accountId: number, keyIds: readonly number[], sinceDay: string, untilDay: string): Promise<DayOutcomes[]>;
  /** The key's last rejected requests, newest first, at most 20. */
  recentRejections(accountId: number, keyId: number): Promise<Rejection[]>;
  /** Last use of each key of the account; keys never used are absent. */
  lastUse(accountId: number, keyIds: readonly number[]): Promise<Map<number, LastUse>>;
  /** The key's request log, newest first: at most REQUEST_LOG_KEPT lines, none older than `since` (ISO). */
  requestLog(accountId: number, keyId: number, since: string): Promise<RequestLogEntry[]>;
  /**
   * The usage buckets (usage-buckets.ts) of the account's keys `keyIds` for each period named (UTC hours
   * `2026-11-24T08` or days `2026-11-24`), summed over the keys: period -> field -> requests.
   */
  usageBuckets(accountId: number, keyIds: readonly number[], periods: readonly string[]): Promise<Map<string, Map<string, number>>>;
  /**
   * The account's usage per UTC day for the overview and the account's CSV: day -> field -> requests, the
   * day buckets' fields (`e:`, `t:`) and the day outcomes as `o:<outcome>`, summed over the keys `shown`
   * (the account's listed keys). Read from the account's day totals (kept as every key's statistics are
   * written: 90 days are 90 rows or hashes' worth, not 20 keys x 90), minus the keys of the account in
   * `hidden` (keys no longer listed, which the totals still hold), so that it equals the sum of the shown
   * keys' usageBuckets and keysOutcomes.
   */
  accountDays(accountId: number, shown: readonly number[], hidden: readonly number[], days: readonly string[]): Promise<Map<string, Map<string, number>>>;
  /** Writes what is held, then lets go of its connection. */
  close(): Promise<void>;
}

export function zeroCounts(): OutcomeCounts {
  return { counted: 0, not_modified: 0, bad_request: 0, insufficient_scope: 0, rate_limited: 0, quota_exceeded: 0, server_error: 0, revoked_or_expired: 0, refused_address: 0 };
}

export function isOutcome(value: string): value is Outcome {
  return (OUTCOMES as readonly string[]).includes(value);
}

/** Every day from sinceDay to untilDay, newest first, with the counts stored for it (zero where none is). */
export function outcomesByDay(sinceDay: string, untilDay: string, stored: Iterable<{ day: string; outcome: string; requests: number }>): DayOutcomes[] {
  const days = new Map(daysBetween(sinceDay, untilDay).map((day) => [day, zeroCounts()]));
  for (const row of stored) {
    const counts = days.get(row.day);
    if (counts && isOutcome(row.outcome)) counts[row.outcome] += row.requests;
  }
  return [...days].map(([day, counts]) => ({ day, counts }));
}

/**
 * Which day bucket a request falls in, from what the pipeline knows when it answers:
 * - a known key refused as revoked or expired (or rolled past its stop time): revoked_or_expired;
 * - a known key used from an address its allowed addresses do not hold: refused_address;
 * - 304: not_modified; any 5xx: server_error (neither is counted against the quota);
 * - 429 and 403 insufficient_scope by their error codes;
 * - 400, and 404 for a path the API does not have: bad_request;
 * - a request counted against the quota (200, or 404 for a missing item, as the meter counts it): counted;
 * - anything else (/me, OPTIONS, a 403 for a lapsed plan): no bucket (the rejection is still kept).
 */
export function outcomeOf(answer: {
  status: number;
  error: string | null;
  counted: boolean;
  /** Why a known key was refused before the pipeline went on (src/auth); null when it was not. */
  keyRefused: 'revoked_or_expired' | 'refused_address' | 'plan' | null;
}): Outcome | null {
  if (answer.keyRefused !== null) return answer.keyRefused === 'plan' ? null : answer.keyRefused;
  if (answer.status === 304) return 'not_modified';
  if (answer.status >= 500) return 'server_error';
  switch (answer.error) {
    case 'rate_limited':
    case 'quota_exceeded':
    case 'insufficient_scope':
    case 'bad_request':
      return answer.error;
    case 'not_found':
      return answer.counted ? 'counted' : 'bad_request';
    default:
      return answer.counted ? 'counted' : null;
  }
}

/** Adds `sign` x requests to day -> field in `into`; a field that comes to 0 is dropped (as a read of no row has none). */
export function addField(into: Map<string, Map<string, number>>, day: string, field: string, requests: number, sign = 1): void {
  let fields = into.get(day);
  if (fields === undefined) {
    fields = new Map();
    into.set(day, fields);
  }
  const n = (fields.get(field) ?? 0) + sign * requests;
  if (n === 0) fields.delete(field);
  else fields.set(field, n);
}

/** A flush's records, summed: what one transaction or one pipeline writes. */
export interface StatsBatch {
  outcomes: Array<{ accountId: number; keyId: number; day: string; outcome: Outcome; requests: number }>;
  lastUse: Array<{ accountId: number; keyId: number; at: number; address: string | null }>;
  /** Per key, oldest first, at most 20 (the newest). */
  rejections: Array<{ accountId: number; keyId: number; items: Rejection[] }>;
  /** Per key, oldest first, at most REQUEST_LOG_KEPT (the newest). */
  log: Array<{ accountId: number; keyId: number; items: RequestLogEntry[] }>;
  /** Requests per key, period (hour or day) and field (usage-buckets.ts). */
  buckets: Array<{ accountId: number; keyId: number; period: string; field: string; requests: number }>;
}
