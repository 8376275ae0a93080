/**
 * A key's request log for key details: its last 100 requests of every outcome of the last 7 days
 * (src/usage-stats/usage-stats.ts keeps them), newest first, 20 a page, narrowed by `?outcome=` to one
 * outcome or to the rejected ones (what the page once showed as a table of its own).
 */
import { OUTCOMES, REQUEST_LOG_MS, type LogOutcome, type RequestLogEntry } from '../../usage-stats/usage-stats.js';
import type { AppDeps } from '../app-types.js';
import { queryText } from './form-input.js';
import { PageError } from './page-errors.js';

export const LOG_OUTCOMES: readonly LogOutcome[] = [...OUTCOMES, 'not_counted'];
export const LOG_PAGE_SIZE = 20;

/** The log's filter: every request (null), the rejected ones (answered 4xx or 5xx), or one outcome. */
export type LogFilter = LogOutcome | 'rejected' | null;

export interface RequestLogView {
  filter: LogFilter;
  /** The page's lines, newest first, a rejection's message beside it when it is among the key's last 20. */
  entries: Array<RequestLogEntry & { message?: string }>;
  /** Lines the filter keeps, on every page. */
  matching: number;
  /** Lines of every outcome kept (at most 100). */
  kept: number;
  page: number;
  pages: number;
}

/** The filter of a page's query: absent, empty or `all` is every request; a value our form does not offer is a 400. */
export function logFilterOf(query: unknown): LogFilter {
  const raw = queryText(query, 'outcome');
  if (raw === undefined || raw === 'all') return null;
  if (raw === 'rejected') return 'rejected';
  if (!(LOG_OUTCOMES as readonly string[]).includes(raw)) throw new PageError('bad_request', 'outcome');
  return raw as LogOutcome;
}

function kept(entry: RequestLogEntry, filter: LogFilter): boolean {
  if (filter === null) return true;
  // A rejection is any request not answered with success: what the owner's script has to look into.
  if (filter === 'rejected') return entry.status >= 400;
  return entry.outcome === filter;
}

/** Page `page` (from 1) of the key's log under `filter`; a page past the last is a 404, as the security log's. */
export async function requestLogView(deps: AppDeps, accountId: number, keyId: number, filter: LogFilter, page: number, now: number): Promise<RequestLogView> {
  const stats = deps.stats;
  // The log keeps the error code, the last 20 rejections also what the client was told: joined by request id.
  const [all, rejections] = await Promise.all([
    stats === undefined ? [] : stats.requestLog(accountId, keyId, new Date(now - REQUEST_LOG_MS).toISOString()),
    stats === undefined ? [] : stats.recentRejections(accountId, keyId),
  ]);
  const matching = all.filter((e) => kept(e, filter));
  const pages = Math.max(1, Math.ceil(matching.length / LOG_PAGE_SIZE));
  if (page > pages) throw new PageError('not_found');
  const messages = new Map(rejections.map((r) => [r.requestId, r.message]));
  const entries = matching.slice((page - 1) * LOG_PAGE_SIZE, page * LOG_PAGE_SIZE).map((e) => {
    const message = e.error === null ? undefined : messages.get(e.requestId);
    return message === undefined ? e : { ...e, message };
  });
  return { filter, entries, matching: matching.length, kept: all.length, page, pages };
}
