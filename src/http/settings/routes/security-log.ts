/**
 * GET /settings/developer-api/security-log?kind=K&key=ID&page=N: the account's security log, 25 events a
 * page, narrowed to one kind of event and one key; GET …/security-log.csv?kind=K&key=ID: every matching
 * event of the 90 days as CSV. A filter no form of ours sends is a 400; another account's key a 404.
 */
import type { FastifyRequest } from 'fastify';
import { csvLine, spreadsheetText } from '../../../csv/csv.js';
import {
  allSecurityEvents,
  listSecurityEvents,
  securityLogFilter,
  securityLogKeys,
  type SecurityLogFilter,
} from '../../../services/security-log.js';
import type { Store } from '../../../store/database.js';
import { pageParam, queryText } from '../form-input.js';
import { PageError } from '../page-errors.js';
import { sendPage } from '../render.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { SecurityLogPage } from '../views/security-log.js';

type Query = Record<string, unknown>;

/** The filter of the query: its shape checked here (a 400 for what no form sends), its meaning by the service. */
function filterOf(store: Store, accountId: number, query: Query): Promise<SecurityLogFilter> {
  const key = queryText(query, 'key');
  if (key !== undefined && !/^[1-9][0-9]{0,14}$/.test(key)) throw new PageError('bad_request', 'key');
  return securityLogFilter(store, accountId, { kind: queryText(query, 'kind'), keyId: key === undefined ? undefined : Number(key) });
}

const CSV_HEADER = ['time', 'event', 'key_id', 'key_name', 'key_hint', 'actor', 'address', 'detail'] as const;

export function registerSecurityLog(app: SettingsApp, context: SettingsContext): void {
  const { store, clock } = context.deps;
  app.get('/developer-api/security-log', async (request, reply) => {
    const session = requireSession(request);
    const query = request.query as Query;
    const page = pageParam(query);
    const now = clock.now();
    const filter = await filterOf(store, session.accountId, query);
    const [result, keys] = await Promise.all([
      listSecurityEvents(store, session.accountId, { page, now, filter }),
      securityLogKeys(store, session.accountId, now),
    ]);
    const pages = Math.max(1, Math.ceil(result.total / result.pageSize));
    if (page > pages) throw new PageError('not_found');
    const shell = await shellFor(context, request, reply, 'security-log');
    return sendPage(reply, 200, SecurityLogPage({ shell, data: { now, events: result.events, page, pages, total: result.total, filter, keys } }));
  });

  app.get('/developer-api/security-log.csv', async (request: FastifyRequest, reply) => {
    const session = requireSession(request);
    const now = clock.now();
    const filter = await filterOf(store, session.accountId, request.query as Query);
    const events = await allSecurityEvents(store, session.accountId, { now, filter });
    let body = csvLine(CSV_HEADER);
    for (const e of events) {
      body += csvLine([
        e.at,
        e.kind,
        e.key?.id ?? null,
        spreadsheetText(e.key?.name ?? null),
        e.key?.hint ?? null,
        e.actor,
        e.address,
        spreadsheetText(e.detail),
      ]);
    }
    const day = new Date(now).toISOString().slice(0, 10);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="security-log-${day}.csv"`)
      .send(body);
  });
}
