/**
 * A flush's records made into what a store writes (StatsBatch): summed per key, day and outcome, the last
 * uses and rejections per key, the request log's lines; and those merged with what is held, not written yet
 * (BufferedUsageStats).
 */
import { redactSecrets } from '../keys/api-key.js';
import { dayOf, isoOf } from '../metering/periods.js';
import { BucketCounts, UsageBucketCounter } from './usage-buckets.js';
import { REJECTIONS_KEPT, REQUEST_LOG_KEPT, type CallRecord, type RequestLogEntry, type RequestRecord, type StatsBatch } from './usage-stats.js';

/**
 * A flush's records summed, the usage buckets and the request log apart: a flush adds the buckets to those it
 * holds and takes the log's lines itself (BufferedUsageStats).
 */
export function summarize(records: readonly RequestRecord[]): { batch: StatsBatch; buckets: UsageBucketCounter } {
  const outcomes = new Map<string, StatsBatch['outcomes'][number]>();
  const lastUse = new Map<number, StatsBatch['lastUse'][number]>();
  const rejections = new Map<number, StatsBatch['rejections'][number]>();
  const buckets = new UsageBucketCounter();
  for (const r of records) {
    if (r.call !== undefined) buckets.add(r, r.call.endpoint, r.call.durationMs);
    else if (r.outcome !== null) buckets.addOutcome({ ...r, outcome: r.outcome });
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

export type BucketRow = StatsBatch['buckets'][number];
export type LastUseRow = StatsBatch['lastUse'][number];
export type OutcomeRow = StatsBatch['outcomes'][number];
export type RejectionsOfKey = StatsBatch['rejections'][number];

/** Adds rows (times `sign`) to the day counts by outcome held, by key, then day and outcome; a count that comes to 0 is let go. */
export function mergeOutcomes(held: Map<number, Map<string, OutcomeRow>>, rows: readonly OutcomeRow[], sign: 1 | -1 = 1): void {
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
export function mergeBuckets(held: BucketCounts, rows: readonly BucketRow[], sign: 1 | -1 = 1): void {
  for (const r of rows) held.add(r.accountId, r.keyId, r.period, r.field, sign * r.requests);
}

/** Keeps each key's latest use. */
export function mergeLastUse(held: Map<number, LastUseRow>, rows: readonly LastUseRow[]): void {
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
export function mergeRejections(held: Map<number, RejectionsOfKey>, rows: Readonly<StatsBatch['rejections']>): void {
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
