/**
 * Per-key statistics for account owners (docs/contract.md, "Metering"): requests per UTC day by outcome, the
 * last use (time and client address), the last 20 rejected requests, the request log (the last 100 requests
 * of every outcome, 7 days), and usage in depth (per hour and per day: requests by endpoint, by outcome, and
 * a histogram of server time, usage-buckets.ts). Unlike the quota, which stays
 * exact and durable in the meter, these are gathered in memory and written in batches at most a second
 * later (one transaction, or Redis pipelines, per flush), so that a request only pays for an array push.
 * A normal stop (close) writes what is still held.
 *
 * Two stores, chosen like the meter: the database (database-usage-stats.ts) or Redis when REDIS_URL or
 * REDIS_CLUSTER_URLS is set (redis-usage-stats.ts). Reads take the account id first: in Redis one account's statistics share a hash
 * slot, so that they can live on a Redis Cluster next to its meter.
 */
import type { Selectable } from 'kysely';
import type { KeyRejectionsTable } from '../store/schema.js';
import { redactSecrets } from '../keys/api-key.js';
import { dayOf, daysBetween, isoOf } from '../metering/periods.js';
import { BucketCounts, UsageBucketCounter } from './usage-buckets.js';

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
/** How long records wait in memory before they are written. */
export const FLUSH_DELAY_MS = 500;
/**
 * Records that start a write at once instead of waiting for the timer. A SQLite write runs synchronously:
 * at 8,000 requests a second, half a second's records (about 3,700 rows each of counts and last uses) held
 * the event loop 40-49 ms every flush, which set the p99 of every request at 50 connections. Smaller writes
 * cost more in all (each dirties the same pages of the two tables), so this is a middle: item GETs at 50
 * connections on SQLite (1M items, under the profiler) had p99 39-40 ms and 8,438-8,810 requests a second
 * without it, 28 ms and 8,202 with 2,000, and 22-23 ms and 7,484-7,742 with 500.
 */
export const FLUSH_RECORDS = 2000;
export interface StatsPace {
  flushDelayMs: number;
  flushRecords: number;
}

/** Records held at most while the store cannot be written; past this, the oldest are dropped. */
export const MAX_HELD_RECORDS = 100_000;

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

/**
 * A flush's records summed, the usage buckets and the request log apart: a flush adds the buckets to those it
 * holds and takes the log's lines itself (BufferedUsageStats).
 */
function summarize(records: readonly RequestRecord[]): { batch: StatsBatch; buckets: UsageBucketCounter } {
  const outcomes = new Map<string, StatsBatch['outcomes'][number]>();
  const lastUse = new Map<number, StatsBatch['lastUse'][number]>();
  const rejections = new Map<number, StatsBatch['rejections'][number]>();
  const buckets = new UsageBucketCounter();
  for (const r of records) {
    if (r.call !== undefined) buckets.add(r, r.call.endpoint, r.call.durationMs);
    if (r.outcome !== null) {
      const day = dayOf(r.at);
      const id = `${r.keyId}|${day}|${r.outcome}`;
      const entry = outcomes.get(id);
      if (entry) entry.requests++;
      else outcomes.set(id, { accountId: r.accountId, keyId: r.keyId, day, outcome: r.outcome, requests: 1 });
    }
    if (r.used) {
      const seen = lastUse.get(r.keyId);
      if (!seen || seen.at <= r.at) lastUse.set(r.keyId, { accountId: r.accountId, keyId: r.keyId, at: r.at, address: r.address });
    }
    if (r.rejection !== null) {
      const entry = rejections.get(r.keyId) ?? { accountId: r.accountId, keyId: r.keyId, items: [] };
      entry.items.push(r.rejection);
      rejections.set(r.keyId, entry);
    }
  }
  for (const entry of rejections.values()) {
    entry.items.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    if (entry.items.length > REJECTIONS_KEPT) entry.items = entry.items.slice(-REJECTIONS_KEPT);
  }
  return {
    batch: {
      outcomes: [...outcomes.values()],
      lastUse: [...lastUse.values()],
      rejections: [...rejections.values()],
      log: [],
      buckets: [],
    },
    buckets,
  };
}

/**
 * The request log lines of a flush: per key the newest REQUEST_LOG_KEPT records, oldest first. Records are
 * held in the order they were answered, so walking back from the end finds the newest; only the lines kept
 * pay for the URL's scan for keys.
 */
export function requestLogOf(records: readonly RequestRecord[]): StatsBatch['log'] {
  const perKey = new Map<number, { accountId: number; keyId: number; items: RequestLogEntry[] }>();
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i]!;
    if (r.call === undefined) continue;
    let entry = perKey.get(r.keyId);
    if (entry === undefined) {
      entry = { accountId: r.accountId, keyId: r.keyId, items: [] };
      perKey.set(r.keyId, entry);
    }
    if (entry.items.length < REQUEST_LOG_KEPT) entry.items.push(logEntryOf(r, r.call));
  }
  for (const entry of perKey.values()) entry.items.reverse();
  return [...perKey.values()];
}

/** A path longer than this is kept cut short: enough to recognise a script's call. */
const PATH_KEPT = 300;

function logEntryOf(r: RequestRecord, call: CallRecord): RequestLogEntry {
  // Keys however written (percent-encoded, without their prefix) and sign-in tokens: as the app's log does.
  const path = redactSecrets(call.url);
  return {
    at: isoOf(r.at),
    method: call.method,
    path: path.length > PATH_KEPT ? `${path.slice(0, PATH_KEPT)}…` : path,
    status: call.status,
    error: call.error,
    outcome: r.outcome ?? 'not_counted',
    durationMs: Math.round(call.durationMs * 100) / 100,
    address: call.address,
    requestId: call.requestId,
  };
}

/**
 * How often a busy server writes the request log (flushes started by their number of records). Every 2 s
 * rather than every second: with 1,001 keys a write holds about 9 lines per key, not 5, so half the chunks'
 * rows, index entries and sweeps; the log's share of the item GET went from about 10% to about 5%
 * (docs/performance.md, 2026-11-27 12:01). A quiet server's timer flush writes it at once.
 */
export const LOG_WRITE_MS = 2000;
/** Lines of the request log a busy server's flush writes at most (the rest at the next turns). */
export const LOG_LINES_PER_WRITE = 2000;
/**
 * How often a busy server writes the usage buckets, last uses, day counts by outcome and rejections. Summed
 * over a second rather than a flush (several a second when busy): with a thousand keys each flush held about
 * one request per key, and wrote ~2.6 bucket rows, a last use and an outcome's upsert for each request
 * (docs/performance.md).
 */
export const COUNTS_WRITE_MS = 1000;
/**
 * Rows of counts, last uses and rejections a write takes at most: about as long a hold of the event loop as a
 * slice of the log (LOG_LINES_PER_WRITE), a few milliseconds. SQLite writes on the event loop; PostgreSQL and
 * Redis are written asynchronously, but the write's statements or script calls are built on it.
 */
export const COUNT_ROWS_PER_WRITE = 2000;

type BucketRow = StatsBatch['buckets'][number];
type LastUseRow = StatsBatch['lastUse'][number];
type OutcomeRow = StatsBatch['outcomes'][number];
type RejectionsOfKey = StatsBatch['rejections'][number];

/** Adds rows (times `sign`) to the day counts by outcome held, by key, then day and outcome; a count that comes to 0 is let go. */
function mergeOutcomes(held: Map<number, Map<string, OutcomeRow>>, rows: readonly OutcomeRow[], sign: 1 | -1 = 1): void {
  for (const r of rows) {
    let ofKey = held.get(r.keyId);
    if (ofKey === undefined) {
      ofKey = new Map();
      held.set(r.keyId, ofKey);
    }
    const id = `${r.day}|${r.outcome}`;
    const before = ofKey.get(id);
    const requests = (before?.requests ?? 0) + sign * r.requests;
    if (requests === 0) {
      ofKey.delete(id);
      if (ofKey.size === 0) held.delete(r.keyId);
    } else if (before !== undefined) before.requests = requests;
    else ofKey.set(id, { ...r, requests });
  }
}

/** Adds rows (times `sign`) to bucket counts held; a count that comes to 0 is let go. */
function mergeBuckets(held: BucketCounts, rows: readonly BucketRow[], sign: 1 | -1 = 1): void {
  for (const r of rows) held.add(r.accountId, r.keyId, r.period, r.field, sign * r.requests);
}

/** Keeps each key's latest use. */
function mergeLastUse(held: Map<number, LastUseRow>, rows: readonly LastUseRow[]): void {
  for (const r of rows) {
    const before = held.get(r.keyId);
    if (before === undefined || before.at <= r.at) held.set(r.keyId, r);
  }
}

/** Adds a flush's log lines to those held: per key, the newest REQUEST_LOG_KEPT, oldest first, each request once. */
export function mergeLog(held: Map<number, StatsBatch['log'][number]>, lines: Readonly<StatsBatch['log']>): void {
  mergeNewest(held, lines, REQUEST_LOG_KEPT);
}

/** Adds a flush's rejections to those held: per key, the newest REJECTIONS_KEPT, oldest first, each request once. */
function mergeRejections(held: Map<number, RejectionsOfKey>, rows: Readonly<StatsBatch['rejections']>): void {
  mergeNewest(held, rows, REJECTIONS_KEPT);
}

/** Per key, the newest `kept` items of those held and those added, oldest first, each request once. */
function mergeNewest<Item extends { at: string; requestId: string }>(
  held: Map<number, { accountId: number; keyId: number; items: Item[] }>,
  added: ReadonlyArray<{ accountId: number; keyId: number; items: Item[] }>,
  kept: number,
): void {
  for (const entry of added) {
    const before = held.get(entry.keyId);
    if (before === undefined) {
      held.set(entry.keyId, { ...entry, items: [...entry.items] });
      continue;
    }
    const lastHeld = before.items[before.items.length - 1];
    const firstAdded = entry.items[0];
    if (lastHeld === undefined || firstAdded === undefined || firstAdded.at > lastHeld.at) {
      // All newer than what is held (a process's flushes, in the order answered): no copy to drop, no sort.
      before.items.push(...entry.items);
      if (before.items.length > kept) before.items = before.items.slice(-kept);
      continue;
    }
    const seen = new Set(before.items.map((item) => item.requestId));
    const items = [...before.items, ...entry.items.filter((item) => !seen.has(item.requestId))];
    items.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    before.items = items.slice(-kept);
  }
}

/**
 * A flush that failed for some accounts only (a Redis Cluster with one master away): the others' records
 * were written and must not be written again. Any other error: nothing was written.
 */
export class StatsWriteError extends Error {
  constructor(
    cause: unknown,
    readonly accounts: ReadonlySet<number>,
  ) {
    super(cause instanceof Error ? cause.message : 'the statistics could not be written', { cause });
  }
}

/**
 * The in-memory half every store shares: records wait in an array, a timer writes them FLUSH_DELAY_MS after
 * the first one, one write at a time. A failed write keeps its records for the next flush (up to
 * MAX_HELD_RECORDS), so a brief outage of the store loses nothing.
 */
export abstract class BufferedUsageStats implements UsageStats {
  private held: RequestRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  /** A write asked for at the next turn, FLUSH_RECORDS being held. */
  private soon = false;
  /** The last write failed: records wait for the timer, not for their number, until one succeeds. */
  private failing = false;
  /** Records dropped because the store could not be written for too long. */
  dropped = 0;
  /** When records are written: FLUSH_DELAY_MS after the first, or at once when FLUSH_RECORDS are held. */
  pace: StatsPace = { flushDelayMs: FLUSH_DELAY_MS, flushRecords: FLUSH_RECORDS };

  protected abstract write(batch: StatsBatch): Promise<void>;
  /** A flush's request log lines (requestLogOf); bench/stats-overhead.ts --log measures the item GET without them. */
  protected requestLogOf(records: readonly RequestRecord[]): StatsBatch['log'] {
    return requestLogOf(records);
  }
  abstract keyOutcomes(accountId: number, keyId: number, sinceDay: string, untilDay: string): Promise<DayOutcomes[]>;
  abstract keysOutcomes(accountId: number, keyIds: readonly number[], sinceDay: string, untilDay: string): Promise<DayOutcomes[]>;
  abstract recentRejections(accountId: number, keyId: number): Promise<Rejection[]>;
  abstract lastUse(accountId: number, keyIds: readonly number[]): Promise<Map<number, LastUse>>;
  abstract requestLog(accountId: number, keyId: number, since: string): Promise<RequestLogEntry[]>;
  abstract usageBuckets(accountId: number, keyIds: readonly number[], periods: readonly string[]): Promise<Map<string, Map<string, number>>>;
  abstract accountDays(accountId: number, shown: readonly number[], hidden: readonly number[], days: readonly string[]): Promise<Map<string, Map<string, number>>>;
  protected abstract disconnect(): Promise<void>;

  record(request: RequestRecord): void {
    this.held.push(request);
    if (this.held.length >= this.pace.flushRecords && !this.failing) this.flushSoon();
    else this.scheduleFlush();
  }

  /** A flush at the next turn of the event loop (after the request that filled the batch is answered). */
  private flushSoon(): void {
    if (this.soon) return;
    this.soon = true;
    setImmediate(() => {
      this.soon = false;
      void this.write_('busy').catch(() => {});
    });
  }

  /** A flush FLUSH_DELAY_MS from now, unless one is pending already. */
  private scheduleFlush(): void {
    if (this.timer !== null) return;
    this.timer = setTimeout(() => void this.write_('timer').catch(() => {}), this.pace.flushDelayMs);
    // A pending flush does not keep a process alive; close() writes what is left.
    this.timer.unref();
  }

  /**
   * Request log lines summed from flushed records but not written yet: a flush started because
   * FLUSH_RECORDS were held (a busy server, several a second) writes the log at most every LOG_WRITE_MS, its
   * newest 100 lines per key; lines a later request pushed out are never written. The timer's flush writes
   * them too, flush() (tests, close) all at once.
   */
  private pendingLog = new Map<number, StatsBatch['log'][number]>();
  private logWrittenAt = 0;
  /** A due log was written in part: the rest goes at the next turn, whatever the time. */
  private logBacklog = false;
  /**
   * Bucket counts, last uses, day counts by outcome and rejections summed from flushed records, not written
   * yet (COUNTS_WRITE_MS). Written at every flush, the outcomes and rejections were a third of what the
   * statistics cost SQLite on a busy server: one upsert and a trim per key, several times a second.
   */
  private pendingBuckets = new BucketCounts();
  private pendingLastUse = new Map<number, LastUseRow>();
  private pendingOutcomes = new Map<number, Map<string, OutcomeRow>>();
  private pendingRejections = new Map<number, RejectionsOfKey>();
  private countsWrittenAt = 0;
  /**
   * Rows of counts, last uses and rejections a busy write takes at most (whole keys; the rest at the next
   * turns); Infinity: all at once (tests). A second's counts of 10,000 keys (~38,000 rows) written at once
   * held SQLite's event loop 130-230 ms each second; on PostgreSQL + Redis (no statistics thread) building
   * their script calls at once put an item GET's p99 at 109-162 ms, in slices 53-57 ms (docs/performance.md,
   * 2026-11-27).
   */
  protected countRowsPerWrite = COUNT_ROWS_PER_WRITE;
  /**
   * The keys of a due write of the counts still to be taken, lowest id first (their rows lie together in
   * the tables' key-first indexes); keys counted while it goes wait for the next due write.
   */
  private countsQueue: number[] = [];
  /** A due write of the counts went in part: the rest goes at the next turn, whatever the time. */
  private countsBacklog = false;

  /**
   * Held log lines of whole keys, at least one key and about `lines` lines, taken out of those held. A busy
   * server's log of a second (10,000 lines over 1,000 keys) written at once held SQLite's event loop ~45 ms;
   * in slices of LOG_LINES_PER_WRITE, a turn at a time, the requests in between are answered.
   */
  private takeLog(lines: number): StatsBatch['log'] {
    const taken: StatsBatch['log'] = [];
    let n = 0;
    for (const [keyId, entry] of this.pendingLog) {
      if (taken.length > 0 && n + entry.items.length > lines) break;
      taken.push(entry);
      n += entry.items.length;
      this.pendingLog.delete(keyId);
    }
    return taken;
  }

  /** Whether counts, last uses or rejections are held, not written yet. */
  private countsHeld(): boolean {
    return this.pendingBuckets.size > 0 || this.pendingLastUse.size > 0 || this.pendingOutcomes.size > 0 || this.pendingRejections.size > 0;
  }

  /**
   * Held counts, last uses and rejections of whole keys, at least one key and about `rows` rows, taken out of
   * those held: the keys of the due write under way first (Infinity: every key held).
   */
  private takeCounts(rows: number): Pick<StatsBatch, 'buckets' | 'lastUse' | 'outcomes' | 'rejections'> {
    if (this.countsQueue.length === 0 || rows === Infinity) {
      const keyIds = new Set([...this.pendingBuckets.keyIds(), ...this.pendingLastUse.keys(), ...this.pendingOutcomes.keys(), ...this.pendingRejections.keys()]);
      this.countsQueue = [...keyIds].sort((a, b) => a - b);
    }
    const taken: Pick<StatsBatch, 'buckets' | 'lastUse' | 'outcomes' | 'rejections'> = { buckets: [], lastUse: [], outcomes: [], rejections: [] };
    let n = 0;
    let i = 0;
    for (; i < this.countsQueue.length; i++) {
      const keyId = this.countsQueue[i]!;
      const outcomes = this.pendingOutcomes.get(keyId);
      const lastUse = this.pendingLastUse.get(keyId);
      const rejections = this.pendingRejections.get(keyId);
      const keyRows = this.pendingBuckets.rowsOf(keyId) + (outcomes?.size ?? 0) + (lastUse === undefined ? 0 : 1) + (rejections?.items.length ?? 0);
      if (n > 0 && n + keyRows > rows) break;
      n += keyRows;
      taken.buckets.push(...this.pendingBuckets.take(keyId));
      if (outcomes !== undefined) taken.outcomes.push(...outcomes.values());
      if (lastUse !== undefined) taken.lastUse.push(lastUse);
      if (rejections !== undefined) taken.rejections.push(rejections);
      this.pendingOutcomes.delete(keyId);
      this.pendingLastUse.delete(keyId);
      this.pendingRejections.delete(keyId);
    }
    this.countsQueue = i === this.countsQueue.length ? [] : this.countsQueue.slice(i);
    return taken;
  }

  /** Writes everything held now (tests, and close). */
  flush(): Promise<void> {
    return this.write_('all');
  }

  /**
   * One write of what is held. The request log: 'all' every line held; 'timer' a slice of it; 'busy' a slice
   * only when LOG_WRITE_MS have passed since it was last written, or a slice of it is still to go. The usage
   * buckets and last uses: 'busy' only when COUNTS_WRITE_MS have passed since they were last written.
   */
  private write_(mode: 'all' | 'timer' | 'busy'): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const next = this.writing.then(async () => {
      const records = this.held;
      if (records.length === 0 && this.pendingLog.size === 0 && !this.countsHeld()) return;
      this.held = [];
      const { batch, buckets: ownBuckets } = summarize(records);
      mergeLog(this.pendingLog, this.requestLogOf(records));
      const logDue = mode !== 'busy' || this.logBacklog || Date.now() - this.logWrittenAt >= LOG_WRITE_MS;
      batch.log = logDue ? this.takeLog(mode === 'all' ? Infinity : LOG_LINES_PER_WRITE) : [];
      // The counts, last uses and rejections of these records join those held; all of them go when due.
      const own = { lastUse: batch.lastUse, outcomes: batch.outcomes, rejections: batch.rejections };
      ownBuckets.addTo(this.pendingBuckets);
      mergeLastUse(this.pendingLastUse, own.lastUse);
      mergeOutcomes(this.pendingOutcomes, own.outcomes);
      mergeRejections(this.pendingRejections, own.rejections);
      const countsDue = mode !== 'busy' || this.countsBacklog || Date.now() - this.countsWrittenAt >= COUNTS_WRITE_MS;
      Object.assign(batch, countsDue ? this.takeCounts(mode === 'all' ? Infinity : this.countRowsPerWrite) : { buckets: [], lastUse: [], outcomes: [], rejections: [] });
      try {
        await this.write(batch);
        this.failing = false;
        if (logDue) this.logWrittenAt = Date.now();
        if (countsDue) this.countsWrittenAt = Date.now();
        // What is left of a due log or of due counts goes at the next turn; the log and counts held back,
        // by the timer's flush if no other comes first.
        this.logBacklog = logDue && this.pendingLog.size > 0;
        this.countsBacklog = countsDue && this.countsQueue.length > 0;
        if (this.logBacklog || this.countsBacklog) this.flushSoon();
        else if (this.pendingLog.size > 0 || this.countsHeld()) this.scheduleFlush();
      } catch (error) {
        this.failing = true;
        // Keep what was not written for the next flush, oldest dropped past the limit.
        const failed = error instanceof StatsWriteError ? error.accounts : null;
        const unwritten = failed === null ? records : records.filter((r) => failed.has(r.accountId));
        const kept = [...unwritten, ...this.held];
        this.dropped += Math.max(0, kept.length - MAX_HELD_RECORDS);
        this.held = kept.slice(-MAX_HELD_RECORDS);
        // Log lines of the records kept come again from them; merging drops the copies (same request id).
        const ofFailed = <T extends { accountId: number }>(rows: readonly T[]): readonly T[] =>
          failed === null ? rows : rows.filter((r) => failed.has(r.accountId));
        mergeLog(this.pendingLog, ofFailed(batch.log));
        // Counts taken and not written are held again, less what the records kept will bring again (last
        // uses and rejections merge to the same whichever way they come twice).
        if (countsDue) {
          mergeBuckets(this.pendingBuckets, ofFailed(batch.buckets));
          mergeLastUse(this.pendingLastUse, ofFailed(batch.lastUse));
          mergeOutcomes(this.pendingOutcomes, ofFailed(batch.outcomes));
          mergeRejections(this.pendingRejections, ofFailed(batch.rejections));
        }
        ownBuckets.addTo(this.pendingBuckets, -1, failed === null ? undefined : (accountId) => failed.has(accountId));
        mergeOutcomes(this.pendingOutcomes, ofFailed(own.outcomes), -1);
        this.scheduleFlush();
        throw error;
      }
    });
    this.writing = next.catch(() => {});
    return next;
  }

  /**
   * Writes what is held, then lets go of the store. A stop must not fail on statistics: when the last
   * write cannot be made (the store is away or locked), its records are counted as dropped, like records
   * past the limit, and the stop goes on (the quota never depends on them).
   */
  async close(): Promise<void> {
    try {
      await this.flush();
    } catch {
      this.dropped += this.held.length;
      this.held = [];
    } finally {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      await this.disconnect();
    }
  }
}
