/**
 * Key details' request log: the key's last 100 requests of every outcome (7 days), newest first, with
 * what an owner needs to debug a script alone, narrowed to one outcome by a GET form (works without script).
 */
import type { LogOutcome, RequestLogEntry } from '../../../usage-stats/usage-stats.js';
import { LOG_OUTCOMES, type RequestLogView } from '../request-log-data.js';
import { FilterSelect } from './components.js';
import { formatCount } from './format.js';
import { OUTCOME_LABELS } from './key-details.js';
import { RequestTable, type RequestColumn } from './request-table.js';

export const LOG_OUTCOME_LABELS: Readonly<Record<LogOutcome, string>> = {
  ...OUTCOME_LABELS,
  not_counted: 'Not counted (/me, OPTIONS, lapsed plan)',
};

const OUTCOME_OPTIONS = LOG_OUTCOMES.map((o) => ({ value: o, label: LOG_OUTCOME_LABELS[o] }));

const LOG_COLUMNS: ReadonlyArray<RequestColumn<RequestLogEntry>> = [
  { heading: 'Error', cell: (e) => <td>{e.error === null ? '–' : <code>{e.error}</code>}</td> },
  { heading: 'Server time', cell: (e) => <td class="num">{e.durationMs.toFixed(1)} ms</td> },
  { heading: 'Client address', cell: (e) => <td class="mono">{e.address ?? '–'}</td> },
];

export function RequestLogSection({ log, action, now }: { log: RequestLogView; action: string; now: number }) {
  return (
    <section class="card" aria-labelledby="request-log-heading">
      <h2 id="request-log-heading">Request log</h2>
      <p class="small muted">
        The last 100 requests of this key of every outcome, from the last 7 days, newest first. Keys in paths and query strings are shown as [redacted].
      </p>
      <form method="get" action={`${action}#request-log-heading`} class="actions">
        <FilterSelect id="log-outcome" name="outcome" label="Outcome" allLabel="All outcomes" allValue="all" options={OUTCOME_OPTIONS} selected={log.outcome} />
        <button type="submit" class="button-secondary">
          Filter
        </button>
      </form>
      {log.entries.length === 0 ? (
        <p class="muted">{log.kept === 0 ? 'No requests in the last 7 days.' : 'No request with this outcome among the last requests.'}</p>
      ) : (
        <RequestTable
          label="Request log table"
          caption={
            <>
              {formatCount(log.entries.length)} requests of this key{log.outcome === null ? '' : ` with the outcome ${LOG_OUTCOME_LABELS[log.outcome]}`}, newest first
            </>
          }
          rows={log.entries}
          now={now}
          columns={LOG_COLUMNS}
        />
      )}
    </section>
  );
}
