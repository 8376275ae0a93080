/**
 * Usage in depth, for key details (one key) and the overview (every key of the account): a range of the
 * last 24 hours (per hour) or 7, 30 or 90 days (per day), chosen by `?range=`; requests by outcome per
 * period, by endpoint (the 12 routes, and `other` for paths the API does not have) and server time
 * p50 / p95 / p99 for the range, from the statistics' usage buckets (src/usage-stats/usage-buckets.ts).
 * Counted requests per day come from the meter, which loses none; per hour the
 * meter keeps no counts, so those come from the statistics like the other outcomes, and may lose the last
 * second of a server that crashed.
 */
import { dayOf } from '../../metering/periods.js';
import { endpointField, hourOf, outcomeField } from '../../usage-stats/usage-buckets.js';
import { addHistogram, emptyHistogram, histogramOf, percentileOf, type Percentile, type TimeHistogram } from '../../usage-stats/server-times.js';
import { OUTCOMES, type Outcome } from '../../usage-stats/usage-stats.js';
import type { AppDeps } from '../app-types.js';
import { lastDays } from './overview-data.js';
import { queryText } from './form-input.js';
import { PageError } from './page-errors.js';

/** `link`: the range picker's link; `label`: the range in a sentence. */
export const RANGES = {
  '24h': { unit: 'hour', count: 24, label: 'Last 24 hours', link: '24 hours' },
  '7d': { unit: 'day', count: 7, label: 'Last 7 days', link: '7 days' },
  '30d': { unit: 'day', count: 30, label: 'Last 30 days', link: '30 days' },
  '90d': { unit: 'day', count: 90, label: 'Last 90 days', link: '90 days' },
} as const;
export type RangeName = keyof typeof RANGES;
export const RANGE_NAMES = Object.keys(RANGES) as RangeName[];
/** Without `?range=`: the last 30 days, per day (what the screen's contract asks of the overview and key details). */
export const DEFAULT_RANGE: RangeName = '30d';

/** The Data API's 12 endpoints as the statistics name them (their routes without /developer/v1). */
export const API_ENDPOINTS = [
  '/me',
  '/catalogue',
  '/catalogue/:id',
  '/prices',
  '/prices/:masterItemId',
  '/prices/export.csv',
  '/collection',
  '/collection/value',
  '/collection/:id',
  '/listings',
  '/offers',
  '/transactions',
] as const;

/** The range of a page's query: absent is the default; a value no link of ours sends is a 400. */
export function rangeOf(query: unknown): RangeName {
  const raw = queryText(query, 'range');
  if (raw === undefined) return DEFAULT_RANGE;
  if (!Object.hasOwn(RANGES, raw)) throw new PageError('bad_request', 'range');
  return raw as RangeName;
}

/** Server time at three ranks; null: no requests. */
export interface Percentiles {
  p50: Percentile | null;
  p95: Percentile | null;
  p99: Percentile | null;
}

export interface UsageDepth {
  range: RangeName;
  unit: 'hour' | 'day';
  /** UTC hours (`2026-11-24T08`) or days, oldest first. */
  periods: string[];
  /** Requests per period by outcome (counted per day from the meter). */
  outcomes: Record<Outcome, number[]>;
  /** Requests of every outcome per period and endpoint, in the order of API_ENDPOINTS, then `other`. */
  endpoints: Array<{ endpoint: string; perPeriod: number[]; total: number }>;
  /** Server time per period, and for the whole range. */
  periodPercentiles: Percentiles[];
  percentiles: Percentiles;
}

/** The last `count` UTC hours, oldest first, this hour last. */
export function lastHours(now: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => hourOf(now - (count - 1 - i) * 3_600_000));
}

function percentiles(histogram: TimeHistogram): Percentiles {
  return { p50: percentileOf(histogram, 0.5), p95: percentileOf(histogram, 0.95), p99: percentileOf(histogram, 0.99) };
}

/**
 * The usage of the account's keys `keyIds` (one key for key details, all of them for the overview). With
 * `hiddenKeyIds` (the overview and the account's CSV: the account's keys that are not listed), the days
 * are read from the account's day totals (UsageStats.accountDays: 90 days' worth, not keys x days), which
 * give the same numbers as the listed keys' own.
 */
export async function usageDepth(
  deps: AppDeps,
  accountId: number,
  keyIds: readonly number[],
  range: RangeName,
  now: number,
  hiddenKeyIds?: readonly number[],
): Promise<UsageDepth> {
  const { unit, count } = RANGES[range];
  const periods = unit === 'hour' ? lastHours(now, count) : lastDays(now, count);
  const first = unit === 'hour' ? dayOf(now - (count - 1) * 3_600_000) : periods[0]!;
  const today = dayOf(now);
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, periods.map(() => 0)])) as Record<Outcome, number[]>;
  const stats = deps.stats;
  const account = unit === 'day' && hiddenKeyIds !== undefined;
  const [buckets, dayOutcomes, metered] = await Promise.all([
    stats === undefined
      ? new Map<string, Map<string, number>>()
      : account
        ? stats.accountDays(accountId, keyIds, hiddenKeyIds, periods)
        : stats.usageBuckets(accountId, keyIds, periods),
    // The account's days hold their outcomes as `o:` fields, read with the buckets.
    stats === undefined || unit === 'hour' || account ? [] : stats.keysOutcomes(accountId, keyIds, first, today),
    unit === 'hour' ? [] : Promise.all(keyIds.map((keyId) => deps.meter.keyUsage(accountId, keyId, first, today))),
  ]);
  const index = new Map(periods.map((p, i) => [p, i]));
  if (unit === 'hour' || account) {
    // Hours, and the account's days, hold the outcomes as `o:` fields.
    periods.forEach((period, i) => {
      const fields = buckets.get(period);
      for (const outcome of OUTCOMES) outcomes[outcome][i] = fields?.get(outcomeField(outcome)) ?? 0;
    });
  } else {
    for (const { day, counts } of dayOutcomes) {
      const i = index.get(day);
      if (i === undefined) continue;
      for (const outcome of OUTCOMES) outcomes[outcome][i]! += counts[outcome];
    }
  }
  if (unit === 'day') {
    outcomes.counted = periods.map(() => 0);
    for (const { day, requests } of metered.flat()) {
      const i = index.get(day);
      if (i !== undefined) outcomes.counted[i]! += requests;
    }
  }
  const endpoints = [...API_ENDPOINTS, null].map((endpoint) => {
    const field = endpointField(endpoint);
    const perPeriod = periods.map((period) => buckets.get(period)?.get(field) ?? 0);
    return { endpoint: endpoint ?? 'other', perPeriod, total: perPeriod.reduce((a, b) => a + b, 0) };
  });
  const histograms = periods.map((period) => histogramOf(buckets.get(period)));
  const whole = histograms.reduce(addHistogram, emptyHistogram());
  return { range, unit, periods, outcomes, endpoints, periodPercentiles: histograms.map(percentiles), percentiles: percentiles(whole) };
}
