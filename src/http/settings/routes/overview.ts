/** GET /settings/developer-api?range=R: the overview, with the usage of every key over the range R (a range no link of ours sends: 400). */
import { accountAndKeys, overviewData } from '../overview-data.js';
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
    // Two waits for the stores in turn, not six: the account and its keys (and the page's shell beside
    // them), then every number of the page at once.
    const [read, shell] = await Promise.all([accountAndKeys(context.deps, session.accountId, now), shellFor(context, request, reply, 'overview')]);
    const shown = read.listed.map((key) => key.id);
    const [data, usage] = await Promise.all([overviewData(context.deps, read, now), usageDepth(context.deps, session.accountId, shown, range, now, read.hiddenIds)]);
    const children = UsageDepthSection({ usage, base: paths.overview, csv: paths.usageCsv, subject: 'all keys' });
    return sendPage(reply, 200, OverviewPage({ shell, data, notice: noticeFor(request.query), children }));
  });
}
