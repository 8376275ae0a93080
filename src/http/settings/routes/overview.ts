/** GET /settings/developer-api?range=R: the overview, with usage in depth of every key over the range R (a range no link of ours sends: 400). */
import { accountKeyIds, overviewData } from '../overview-data.js';
import { noticeFor } from '../notices.js';
import { sendPage } from '../render.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { OverviewPage } from '../views/overview.js';
import { paths } from '../paths.js';
import { rangeOf, usageDepth } from '../usage-depth-data.js';
import { UsageDepthSection } from '../views/usage-depth.js';

export function registerOverview(app: SettingsApp, context: SettingsContext): void {
  app.get('/developer-api', async (request, reply) => {
    const session = requireSession(request);
    const range = rangeOf(request.query);
    const now = context.deps.clock.now();
    const [data, ids] = await Promise.all([overviewData(context.deps, session.accountId, now), accountKeyIds(context.deps, session.accountId, now)]);
    const usage = await usageDepth(context.deps, session.accountId, ids.shown, range, now, ids.hidden);
    const shell = await shellFor(context, request, reply, 'overview');
    const children = UsageDepthSection({ usage, base: paths.overview, csv: paths.usageCsv, subject: 'all keys' });
    return sendPage(reply, 200, OverviewPage({ shell, data, notice: noticeFor(request.query), children }));
  });
}
