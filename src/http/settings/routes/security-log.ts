/** GET /settings/developer-api/security-log?page=N: the account's security log, 25 events a page. */
import { listSecurityEvents } from '../../../services/security-log.js';
import { PageError } from '../page-errors.js';
import { sendPage } from '../render.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { SecurityLogPage } from '../views/security-log.js';

export function registerSecurityLog(app: SettingsApp, context: SettingsContext): void {
  const { store, clock } = context.deps;
  app.get('/developer-api/security-log', async (request, reply) => {
    const session = requireSession(request);
    const raw = (request.query as { page?: unknown }).page;
    if (raw !== undefined && (typeof raw !== 'string' || !/^[1-9][0-9]{0,5}$/.test(raw))) throw new PageError('not_found');
    const page = raw === undefined ? 1 : Number(raw);
    const now = clock.now();
    const result = await listSecurityEvents(store, session.accountId, { page, now });
    const pages = Math.max(1, Math.ceil(result.total / result.pageSize));
    if (page > pages) throw new PageError('not_found');
    const shell = await shellFor(context, request, reply, 'security-log');
    return sendPage(reply, 200, SecurityLogPage({ shell, data: { now, events: result.events, page, pages, total: result.total } }));
  });
}
