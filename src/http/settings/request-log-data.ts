/**
 * A key's request log for key details: the last 100 requests of every outcome of the last 7 days, newest
 * first (src/usage-stats/usage-stats.ts keeps them), narrowed to one outcome by `?outcome=`.
 */
import { OUTCOMES, REQUEST_LOG_MS, type LogOutcome, type RequestLogEntry } from '../../usage-stats/usage-stats.js';
import type { AppDeps } from '../app-types.js';
import { PageError } from './page-errors.js';

export const LOG_OUTCOMES: readonly LogOutcome[] = [...OUTCOMES, 'not_counted'];

export interface RequestLogView {
  /** The outcome shown, or null for all. */
  outcome: LogOutcome | null;
  /** The lines shown, newest first. */
  entries: RequestLogEntry[];
  /** Lines of every outcome kept (at most 100). */
  kept: number;
}

/** The outcome filter of a page's query: absent or empty is every outcome; a value our form does not offer is a 400. */
export function logOutcomeOf(query: unknown): LogOutcome | null {
  const raw = (query as Record<string, unknown> | null)?.outcome;
  if (raw === undefined || raw === '' || raw === 'all') return null;
  if (typeof raw !== 'string' || !(LOG_OUTCOMES as readonly string[]).includes(raw)) throw new PageError('bad_request', 'outcome');
  return raw as LogOutcome;
}

export async function requestLogView(deps: AppDeps, accountId: number, keyId: number, outcome: LogOutcome | null, now: number): Promise<RequestLogView> {
  const all = deps.stats === undefined ? [] : await deps.stats.requestLog(accountId, keyId, new Date(now - REQUEST_LOG_MS).toISOString());
  return { outcome, entries: outcome === null ? all : all.filter((e) => e.outcome === outcome), kept: all.length };
}
