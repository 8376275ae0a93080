/**
 * GET /settings/developer-api/usage.csv?range=R (every key of the account) and
 * GET /settings/developer-api/keys/:id/usage.csv?range=R (one key: 404 when it is not the owner's): the
 * numbers of usage in depth as CSV, one row per hour or day of the range, then a row for the whole range:
 * requests by outcome, all outcomes, by endpoint, and server time p50 / p95 / p99 in ms (server-times.ts:
 * to 2 figures; for periods stored before, their bucket's upper bound; `5000+` past the last bound). Text cells are safe from spreadsheet formulas.
 */
import type { FastifyReply } from 'fastify';
import { csvLine, spreadsheetText } from '../../../csv/csv.js';
import { OUTCOMES } from '../../../usage-stats/usage-stats.js';
import type { Percentile } from '../../../usage-stats/server-times.js';
import { ownedKey } from '../../../services/key-lookup.js';
import { keyIdParam } from '../form-input.js';
import { accountKeyIds } from '../overview-data.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { rangeOf, usageDepth, type Percentiles, type UsageDepth } from '../usage-depth-data.js';

/** A percentile in ms to 2 figures (what the buckets tell); an old period's bucket bound as written then; `5000+` past the last bound. */
const percentileCell = (p: Percentile | null): string | number | null =>
  p === null ? null : p.kind === 'over' ? `${Math.round(p.ms)}+` : p.kind === 'at_most' ? p.ms : Number(p.ms.toPrecision(2));

/** The CSV of a usage: a header, a row per period, a row `total` for the range. */
export function usageCsv(usage: UsageDepth): string {
  const header = [
    usage.unit === 'hour' ? 'hour_utc' : 'day_utc',
    ...OUTCOMES,
    'outcomes_total',
    ...usage.endpoints.map((e) => (e.endpoint === 'other' ? 'other_paths' : e.endpoint)),
    'p50_ms',
    'p95_ms',
    'p99_ms',
  ];
  const row = (label: string, at: (values: readonly number[]) => number, p: Percentiles) => {
    const outcomes = OUTCOMES.map((o) => at(usage.outcomes[o]));
    return csvLine([
      spreadsheetText(label),
      ...outcomes,
      outcomes.reduce((a, b) => a + b, 0),
      ...usage.endpoints.map((e) => at(e.perPeriod)),
      percentileCell(p.p50),
      percentileCell(p.p95),
      percentileCell(p.p99),
    ]);
  };
  let body = csvLine(header.map(spreadsheetText));
  usage.periods.forEach((period, i) => {
    const label = usage.unit === 'hour' ? `${period}:00Z` : period;
    body += row(label, (values) => values[i] ?? 0, usage.periodPercentiles[i] ?? { p50: null, p95: null, p99: null });
  });
  body += row('total', (values) => values.reduce((a, b) => a + b, 0), usage.percentiles);
  return body;
}

function sendCsv(reply: FastifyReply, name: string, usage: UsageDepth, now: number) {
  const day = new Date(now).toISOString().slice(0, 10);
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${name}-${usage.range}-${day}.csv"`)
    .send(usageCsv(usage));
}

export function registerUsageCsv(app: SettingsApp, context: SettingsContext): void {
  const deps = context.deps;
  app.get('/developer-api/usage.csv', async (request, reply) => {
    const session = requireSession(request);
    const range = rangeOf(request.query);
    const now = deps.clock.now();
    // Only the key ids: the overview's other reads (account, month, burst, last uses) are not in the CSV.
    const ids = await accountKeyIds(deps, session.accountId, now);
    const usage = await usageDepth(deps, session.accountId, ids.shown, range, now, ids.hidden);
    return sendCsv(reply, 'usage', usage, now);
  });

  app.get('/developer-api/keys/:id/usage.csv', async (request, reply) => {
    const session = requireSession(request);
    const keyId = keyIdParam(request.params);
    const range = rangeOf(request.query);
    const now = deps.clock.now();
    await ownedKey(deps.store, session.accountId, keyId);
    const usage = await usageDepth(deps, session.accountId, [keyId], range, now);
    return sendCsv(reply, `key-${keyId}-usage`, usage, now);
  });
}
