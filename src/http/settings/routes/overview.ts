/** GET /settings/developer-api: the overview. */
import { overviewData } from '../overview-data.js';
import { noticeFor } from '../notices.js';
import { sendPage } from '../render.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { OverviewPage } from '../views/overview.js';

export function registerOverview(app: SettingsApp, context: SettingsContext): void {
  app.get('/developer-api', async (request, reply) => {
    const session = requireSession(request);
    const data = await overviewData(context.deps, session.accountId, context.deps.clock.now());
    const shell = await shellFor(context, request, reply, 'overview');
    return sendPage(reply, 200, OverviewPage({ shell, data, notice: noticeFor(request.query) }));
  });
}
