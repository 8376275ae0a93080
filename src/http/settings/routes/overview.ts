/** GET /settings/developer-api?range=R: the overview, with usage in depth of every key over the range R (a range no link of ours sends: 400). */
import { accountAndKeys, CHART_DAYS, overviewData } from '../overview-data.js';
import { noticeFor } from '../notices.js';
import { sendPage } from '../render.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { OverviewPage } from '../views/overview.js';
import { paths } from '../paths.js';
import { RANGES, rangeOf, usageDepth } from '../usage-depth-data.js';
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
    // Usage in depth by day over at least the chart's 30 days counts the same keys' requests per day.
    const chartInUsage = RANGES[range].unit === 'day' && RANGES[range].count >= CHART_DAYS;
    const [data, usage] = await Promise.all([
      overviewData(context.deps, read, now, !chartInUsage),
      usageDepth(context.deps, session.accountId, shown, range, now, read.hiddenIds),
    ]);
    if (chartInUsage) data.counted = usage.outcomes.counted.slice(-CHART_DAYS);
    const children = UsageDepthSection({ usage, base: paths.overview, csv: paths.usageCsv, subject: 'all keys' });
    return sendPage(reply, 200, OverviewPage({ shell, data, notice: noticeFor(request.query), children }));
  });
}
