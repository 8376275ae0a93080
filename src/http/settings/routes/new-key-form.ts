/** GET /settings/developer-api/keys/new: the create form (or why this account cannot create a key now). */
import { keyCreationRefusal } from '../account-access.js';
import { requireRecentSignIn } from '../guards.js';
import { newNonce } from '../one-time.js';
import { sendPage } from '../render.js';
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { CreateKeyPage, EMPTY_CREATE_FORM } from '../views/create-key.js';

export function registerNewKeyForm(app: SettingsApp, context: SettingsContext): void {
  app.get('/developer-api/keys/new', async (request, reply) => {
    const session = requireRecentSignIn(context, request);
    const blocked = await keyCreationRefusal(context.deps.store, session.accountId);
    const shell = await shellFor(context, request, reply, 'create');
    return sendPage(reply, 200, CreateKeyPage({ shell, now: context.deps.clock.now(), blocked, values: EMPTY_CREATE_FORM, errors: {}, nonce: newNonce(), clientAddress: request.clientAddress }));
  });
}
