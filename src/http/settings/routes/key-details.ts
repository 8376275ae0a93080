/** GET /settings/developer-api/keys/:id: the key's details (404 for a key that is not the owner's). */
import { keyIdParam } from '../form-input.js';
import { keyDetailsData } from '../key-details-data.js';
import { noticeFor } from '../notices.js';
import { sendPage } from '../render.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { KeyDetailsPage } from '../views/key-details.js';

export function registerKeyDetails(app: SettingsApp, context: SettingsContext): void {
  app.get('/developer-api/keys/:id', async (request, reply) => {
    const session = requireSession(request);
    const keyId = keyIdParam(request.params);
    const data = await keyDetailsData(context.deps, session.accountId, keyId, context.deps.clock.now(), request.clientAddress);
    const shell = await shellFor(context, request, reply, null);
    return sendPage(reply, 200, KeyDetailsPage({ shell, data, form: {}, notice: noticeFor(request.query) }));
  });
}
