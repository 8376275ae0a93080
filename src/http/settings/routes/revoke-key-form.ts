/** GET /settings/developer-api/keys/:id/revoke: the confirmation, naming the key and its last use. */
import { keyIdParam } from '../form-input.js';
import { requireRecentSignIn } from '../guards.js';
import { ownedKeyView } from '../overview-data.js';
import { PageError } from '../page-errors.js';
import { sendPage } from '../render.js';
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { RevokeKeyPage } from '../views/revoke-key.js';

export function registerRevokeKeyForm(app: SettingsApp, context: SettingsContext): void {
  const { clock } = context.deps;
  app.get('/developer-api/keys/:id/revoke', async (request, reply) => {
    const session = requireRecentSignIn(context, request);
    const keyId = keyIdParam(request.params);
    const now = clock.now();
    const view = await ownedKeyView(context.deps, session.accountId, keyId, now);
    if (view.status.status === 'revoked' || view.status.status === 'expired') throw new PageError('not_found');
    const shell = await shellFor(context, request, reply, null);
    return sendPage(reply, 200, RevokeKeyPage({ shell, now, keyView: view, error: null }));
  });
}
