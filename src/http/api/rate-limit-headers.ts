/**
 * The rate-limit fields of metered responses (docs/contract.md, "Metering"): the X-RateLimit-* trio and the IETF
 * draft's RateLimit / RateLimit-Policy, computed from one admission so they always agree with /me.
 */
import type { PlanLimits } from '../../domain/scopes.js';
import type { BurstState } from '../../metering/meter.js';
import { ceilSeconds, monthBounds, WINDOW_MS } from '../../metering/periods.js';

export type Headers = Record<string, string | number>;

export function quotaRemaining(limits: PlanLimits, used: number): number {
  return Math.max(0, limits.monthly - used);
}

export function rateLimitHeaders(limits: PlanLimits, burst: BurstState, used: number | null, now: number): Headers {
  const { start, reset } = monthBounds(now);
  const burstT = burst.remaining > 0 && burst.resetInMs <= 0 ? 0 : ceilSeconds(burst.resetInMs);
  const policy = [`"burst";q=${limits.perMinute};w=${WINDOW_MS / 1000}`];
  const state = [`"burst";r=${burst.remaining};t=${burstT}`];
  const headers: Headers = {};
  if (used !== null) {
    const remaining = quotaRemaining(limits, used);
    policy.push(`"quota";q=${limits.monthly};w=${(reset - start) / 1000}`);
    state.push(`"quota";r=${remaining};t=${ceilSeconds(reset - now)}`);
    headers['x-ratelimit-limit'] = limits.monthly;
    headers['x-ratelimit-remaining'] = remaining;
    headers['x-ratelimit-reset'] = Math.floor(reset / 1000);
  }
  headers['ratelimit-policy'] = policy.join(', ');
  headers['ratelimit'] = state.join(', ');
  return headers;
}
