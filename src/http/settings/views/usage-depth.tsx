/**
 * The usage of a key (key details) or of every key (the overview): one chart of requests by outcome over a
 * range chosen by plain links (no script needed), server time p50 / p95 / p99, requests by endpoint, and
 * the CSV download of those numbers, all for the chosen range.
 */
import type { Percentile } from '../../../usage-stats/server-times.js';
import { OUTCOMES } from '../../../usage-stats/usage-stats.js';
import { keyPageHref } from '../paths.js';
import { DEFAULT_RANGE, RANGE_NAMES, RANGES, type Percentiles, type RangeName, type UsageDepth } from '../usage-depth-data.js';
import { BarChart } from './bar-chart.js';
import { TableScroll } from './components.js';
import { formatCount, requestsText } from './format.js';
import { OUTCOME_LABELS } from './key-details.js';

/** A time to 2 figures (what the buckets can tell): `0.42 ms`, `4.2 ms`, `42 ms`, `420 ms`, `4.2 s`. */
export function durationText(ms: number): string {
  const figures = Number(ms.toPrecision(2));
  return figures >= 1000 ? `${Number((figures / 1000).toPrecision(2))} s` : `${figures} ms`;
}

/**
 * `42 ms`; for periods stored before the finer buckets, `≤ 10 ms` (their bucket's bound, as shown then);
 * `> 5,000 ms` or `> 65 s` past the last bound; a dash for no requests.
 */
export function percentileText(p: Percentile | null): string {
  if (p === null) return '–';
  if (p.kind === 'about') return durationText(p.ms);
  if (p.kind === 'at_most') return `≤ ${formatCount(p.ms)} ms`;
  return p.ms >= 10_000 ? `> ${formatCount(Math.floor(p.ms / 1000))} s` : `> ${formatCount(p.ms)} ms`;
}

/** The page with another range (`base` keeps the page's path; `keep`: the request log's filter, kept; its page is not). */
export function rangeHref(base: string, range: RangeName, keep?: string): string {
  return keyPageHref(base, { range: range === DEFAULT_RANGE ? undefined : range, outcome: keep }, 'usage-heading');
}

export function UsageDepthSection({ usage, base, csv, subject, keep }: { usage: UsageDepth; base: string; csv: string; subject: string; keep?: string }) {
  const { label, unit } = RANGES[usage.range];
  const total = OUTCOMES.reduce((sum, name) => sum + usage.outcomes[name].reduce((a, b) => a + b, 0), 0);
  const byEndpoint = usage.endpoints.reduce((sum, e) => sum + e.total, 0);
  // Endpoints the range has requests of: the CSV has a column for each of the 12 all the same.
  const used = usage.endpoints.filter((e) => e.total > 0);
  const p: Percentiles = usage.percentiles;
  const range = label.toLowerCase();
  return (
    <section class="card" aria-labelledby="usage-heading">
      <div class="actions heading-row">
        <h2 id="usage-heading">Usage in depth</h2>
        <nav aria-label="Range" class="actions">
          {RANGE_NAMES.map((name) => (
            <a
              class={name === usage.range ? 'button' : 'button button-secondary'}
              href={rangeHref(base, name, keep)}
              aria-current={name === usage.range ? 'page' : undefined}
            >
              {RANGES[name].link}
            </a>
          ))}
        </nav>
      </div>
      <p class="small muted">
        {requestsText(total)} {range}, per {unit} (UTC), by how they were answered. Only counted requests use the monthly quota.
      </p>
      <BarChart
        id="usage"
        unit={unit}
        title={`Requests per ${unit} by outcome for ${subject}, ${range} (UTC)`}
        days={usage.periods}
        series={OUTCOMES.map((name) => ({ name: OUTCOME_LABELS[name], tone: name, values: usage.outcomes[name] }))}
      />
      <div class="grid grid-2">
        <div>
          <h3>Server time</h3>
          <dl class="facts facts-row">
            <dt>p50</dt>
            <dd>{percentileText(p.p50)}</dd>
            <dt>p95</dt>
            <dd>{percentileText(p.p95)}</dd>
            <dt>p99</dt>
            <dd>{percentileText(p.p99)}</dd>
          </dl>
          <p class="small muted">
            How long the server took to answer: half of the requests took at most p50, 95 in 100 at most p95. A slow p99 with a
            fast p50 means a few slow requests, not a slow service.
          </p>
          <p class="actions">
            <a class="button button-secondary" href={`${csv}?range=${usage.range}`} download>
              Download CSV
            </a>
            <span class="hint">These numbers per {unit}, {range}: outcomes, endpoints, p50 / p95 / p99.</span>
          </p>
        </div>
        <div>
          <h3>By endpoint</h3>
          <p class="small muted">
            {requestsText(byEndpoint)}: every request, also those the chart leaves out: <code>/me</code> (it counts toward the
            burst limit, not the monthly quota), OPTIONS checks, requests while the plan was not active.
          </p>
          {used.length === 0 ? null : (
            <TableScroll label="Requests by endpoint">
              <table>
                <caption class="visually-hidden">Requests by endpoint, {range} (endpoints with none are left out)</caption>
                <thead>
                  <tr>
                    <th scope="col">Endpoint</th>
                    <th scope="col" class="num">Requests</th>
                  </tr>
                </thead>
                <tbody>
                  {used.map((e) => (
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
          )}
        </div>
      </div>
    </section>
  );
}
