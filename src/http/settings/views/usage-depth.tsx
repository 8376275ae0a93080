/**
 * Usage in depth (key details and the overview): the range chosen by links (no script needed), requests
 * per hour or day by outcome as a chart that says what it counts, requests by endpoint, server time
 * p50 / p95 / p99, and the CSV download of those numbers.
 */
import { SERVER_TIME_BOUNDS_MS } from '../../../usage-stats/usage-buckets.js';
import { OUTCOMES } from '../../../usage-stats/usage-stats.js';
import { RANGE_NAMES, RANGES, type Percentiles, type RangeName, type UsageDepth } from '../usage-depth-data.js';
import { BarChart } from './bar-chart.js';
import { TableScroll } from './components.js';
import { formatCount } from './format.js';
import { OUTCOME_LABELS } from './key-details.js';

/** `≤ 10 ms`, `> 5000 ms`, or a dash for no requests: percentiles are bucket bounds, and say so. */
export function percentileText(ms: number | null): string {
  if (ms === null) return '–';
  if (ms === Infinity) return `> ${formatCount(SERVER_TIME_BOUNDS_MS[SERVER_TIME_BOUNDS_MS.length - 1]!)} ms`;
  return `≤ ${formatCount(ms)} ms`;
}

/** The page with another range (`base` keeps the page's path; other query fields are not carried). */
export function rangeHref(base: string, range: RangeName): string {
  return `${base}?range=${range}#usage-heading`;
}

export function UsageDepthSection({ usage, base, csv, subject }: { usage: UsageDepth; base: string; csv: string; subject: string }) {
  const { label, unit } = RANGES[usage.range];
  const total = OUTCOMES.reduce((sum, name) => sum + usage.outcomes[name].reduce((a, b) => a + b, 0), 0);
  const p: Percentiles = usage.percentiles;
  return (
    <section class="card" aria-labelledby="usage-heading">
      <h2 id="usage-heading">Usage in depth</h2>
      <nav aria-label="Range" class="actions">
        {RANGE_NAMES.map((range) =>
          range === usage.range ? (
            <a class="button" href={rangeHref(base, range)} aria-current="page">
              {RANGES[range].label}
            </a>
          ) : (
            <a class="button button-secondary" href={rangeHref(base, range)}>
              {RANGES[range].label}
            </a>
          ),
        )}
      </nav>
      <p class="small muted">
        {formatCount(total)} requests of every outcome, {label.toLowerCase()}, per {unit} (UTC).{' '}
        {unit === 'day'
          ? 'Counted requests come from the meter and agree with /me; the other outcomes may miss the last second of a server that stopped abruptly.'
          : 'Per hour, counted requests come from the statistics (the meter keeps days): they may miss the last second of a server that stopped abruptly.'}
      </p>
      <BarChart
        id="usage"
        unit={unit}
        title={`Requests of every outcome per ${unit} for ${subject}, ${label.toLowerCase()} (UTC)`}
        days={usage.periods}
        series={OUTCOMES.map((name) => ({ name: OUTCOME_LABELS[name], tone: name, values: usage.outcomes[name] }))}
      />
      <h3>Server time</h3>
      <dl class="facts">
        <dt>p50</dt>
        <dd>{percentileText(p.p50)}</dd>
        <dt>p95</dt>
        <dd>{percentileText(p.p95)}</dd>
        <dt>p99</dt>
        <dd>{percentileText(p.p99)}</dd>
      </dl>
      <p class="small muted">From the request's arrival to the end of its answer, every outcome; read from a histogram of fixed buckets, so each is the bucket's upper bound.</p>
      <h3>By endpoint</h3>
      <TableScroll label="Requests by endpoint">
        <table>
          <caption class="visually-hidden">Requests of every outcome by endpoint, {label.toLowerCase()}</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col" class="num">Requests</th>
            </tr>
          </thead>
          <tbody>
            {usage.endpoints.map((e) => (
              <tr>
                <th scope="row" class="mono">
                  {e.endpoint === 'other' ? 'Other (no such path)' : e.endpoint}
                </th>
                <td class="num">{formatCount(e.total)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
      <p class="actions">
        <a class="button button-secondary" href={`${csv}?range=${usage.range}`} download>
          Download CSV
        </a>
        <span class="hint">These numbers per {unit}: outcomes, endpoints, p50 / p95 / p99.</span>
      </p>
    </section>
  );
}
