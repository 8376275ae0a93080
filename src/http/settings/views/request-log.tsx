/**
 * Key details' request log: the key's last 100 requests (7 days), newest first, 20 a page, with what an
 * owner needs to debug a script alone; narrowed to the rejected requests or one outcome by a GET form, and
 * paged by plain links that keep the filter (no script needed).
 */
import type { LogOutcome } from '../../../usage-stats/usage-stats.js';
import { keyPageHref, type KeyPageQuery } from '../paths.js';
import { LOG_OUTCOMES, type LogFilter, type RequestLogView } from '../request-log-data.js';
import { FilterSelect, Pager } from './components.js';
import { requestsText } from './format.js';
import { OUTCOME_LABELS } from './key-details.js';
import { RequestTable, type RequestColumn } from './request-table.js';

export const LOG_OUTCOME_LABELS: Readonly<Record<LogOutcome, string>> = {
  ...OUTCOME_LABELS,
  not_counted: 'Not counted (/me, OPTIONS, lapsed plan)',
};

const FILTER_OPTIONS = [
  { value: 'rejected', label: 'Rejected only (4xx, 5xx)' },
  ...LOG_OUTCOMES.map((o) => ({ value: o, label: LOG_OUTCOME_LABELS[o] })),
];

type LogLine = RequestLogView['entries'][number];

/** The log's columns; with `messages` (a filtered log, where the owner looks into failures) the error's message beside its code. */
const logColumns = (messages: boolean): ReadonlyArray<RequestColumn<LogLine>> => [
  {
    heading: 'Error',
    cell: (e) =>
      e.error === null ? (
        <td>–</td>
      ) : (
        <td>
          <code>{e.error}</code>
          {messages && e.message !== undefined ? ` ${e.message}` : null}
        </td>
      ),
  },
  { heading: 'Server time', cell: (e) => <td class="num nowrap">{e.durationMs.toFixed(1)} ms</td> },
  { heading: 'Client address', cell: (e) => <td class="mono">{e.address ?? '–'}</td> },
];
const COLUMNS = logColumns(false);
const COLUMNS_WITH_MESSAGES = logColumns(true);

function filterText(filter: LogFilter): string {
  if (filter === null) return '';
  return filter === 'rejected' ? ', rejected only' : `, ${LOG_OUTCOME_LABELS[filter]} only`;
}

/** `base`: the key's page; `range`: the usage range the page shows, carried by the filter and the pages (undefined: the default). */
export function RequestLogSection({ log, base, range, now }: { log: RequestLogView; base: string; range: string | undefined; now: number }) {
  const query: KeyPageQuery = { range, outcome: log.filter ?? undefined };
  return (
    <section class="card" aria-labelledby="request-log-heading">
      <h2 id="request-log-heading">Request log</h2>
      <p class="small muted">
        The last 100 requests of the last 7 days, newest first; keys in paths show as [redacted]. Rejected only: what each
        client was told.
      </p>
      <form method="get" action={`${base}#request-log-heading`} class="actions">
        {range === undefined ? null : <input type="hidden" name="range" value={range} />}
        <FilterSelect id="log-outcome" name="outcome" label="Show" allLabel="All requests" allValue="all" options={FILTER_OPTIONS} selected={log.filter} />
        <button type="submit" class="button-secondary">
          Filter
        </button>
      </form>
      {log.entries.length === 0 ? (
        <p class="muted">{log.kept === 0 ? 'No requests in the last 7 days.' : log.filter === 'rejected' ? 'No rejected request among the last requests.' : 'No request with this outcome among the last requests.'}</p>
      ) : (
        <>
          <RequestTable
            label="Request log table"
            caption={
              <>
                {requestsText(log.matching)} of this key{filterText(log.filter)}, newest first, page {log.page} of {log.pages}
              </>
            }
            rows={log.entries}
            now={now}
            columns={log.filter === null ? COLUMNS : COLUMNS_WITH_MESSAGES}
          />
          <Pager label="Pages of the request log" page={log.page} pages={log.pages} href={(page) => keyPageHref(base, { ...query, page }, 'request-log-heading')} />
        </>
      )}
    </section>
  );
}
