/**
 * GET /settings/developer-api/keys/:id?range=R&outcome=O&page=N: the key's details (404 for a key that is
 * not the owner's), with its usage over the range R and page N of its request log narrowed to O (an
 * outcome, or `rejected`); a range or outcome no link or form of ours sends is a 400, a page past the last
 * a 404.
 */
import { keyIdParam, pageParam, queryText } from '../form-input.js';
import { ownedKey } from '../../../services/key-lookup.js';
import { keyDetailsOf } from '../key-details-data.js';
import { noticeFor } from '../notices.js';
import { sendPage } from '../render.js';
import { logFilterOf, requestLogView } from '../request-log-data.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { rangeOf, usageDepth } from '../usage-depth-data.js';
import { paths } from '../paths.js';
import { KeyDetailsPage } from '../views/key-details.js';
import { RequestLogSection } from '../views/request-log.js';
import { UsageDepthSection } from '../views/usage-depth.js';

export function registerKeyDetails(app: SettingsApp, context: SettingsContext): void {
  app.get('/developer-api/keys/:id', async (request, reply) => {
    const session = requireSession(request);
    const keyId = keyIdParam(request.params);
    const range = rangeOf(request.query);
    const filter = logFilterOf(request.query);
    const page = pageParam(request.query);
    const now = context.deps.clock.now();
    // Two waits for the stores: the key, found to be the owner's (404 otherwise: nothing else of it is
    // read), with the page's shell beside it; then every number and line of the page at once.
    const [record, shell] = await Promise.all([ownedKey(context.deps.store, session.accountId, keyId), shellFor(context, request, reply, null)]);
    const [data, usage, log] = await Promise.all([
      keyDetailsOf(context.deps, session.accountId, record, now, request.clientAddress),
      usageDepth(context.deps, session.accountId, [keyId], range, now),
      requestLogView(context.deps, session.accountId, keyId, filter, page, now),
    ]);
    const base = paths.key(keyId);
    // The range as the owner chose it (rangeOf checked it), carried by the log's filter and pages.
    const chosenRange = queryText(request.query, 'range');
    return sendPage(
      reply,
      200,
      KeyDetailsPage({
        shell,
        data,
        form: {},
        notice: noticeFor(request.query),
        children: [
          UsageDepthSection({ usage, base, csv: paths.keyUsageCsv(keyId), subject: `key ${data.key.name}`, keep: filter === null ? undefined : filter }),
          RequestLogSection({ log, base, range: chosenRange, now }),
        ],
      }),
    );
  });
}
