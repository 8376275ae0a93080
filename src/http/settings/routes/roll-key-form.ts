/** GET /settings/developer-api/keys/:id/roll: the roll form (choose the new key's expiry and when the old key stops). */
import { PageError } from '../page-errors.js';
import { keyCreationRefusal } from '../account-access.js';
import { keyIdParam } from '../form-input.js';
import { requireRecentSignIn } from '../guards.js';
import { newNonce } from '../one-time.js';
import { ownedKeyView } from '../overview-data.js';
import { sendPage } from '../render.js';
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { DEFAULT_ROLL_EXPIRY, RollKeyPage } from '../views/roll-key.js';

/** The stop time the form offers first: a day gives every script time to switch. */
export const DEFAULT_STOP_OLD = '24h';

export function registerRollKeyForm(app: SettingsApp, context: SettingsContext): void {
  const { store, clock } = context.deps;
  app.get('/developer-api/keys/:id/roll', async (request, reply) => {
    const session = requireRecentSignIn(context, request);
    const keyId = keyIdParam(request.params);
    const now = clock.now();
    const view = await ownedKeyView(context.deps, session.accountId, keyId, now);
    if (view.status.status === 'expired' || view.status.status === 'revoked') throw new PageError('not_found');
    const blocked =
      view.status.status === 'retiring' ? 'This key was rolled already: roll its replacement instead.' : await keyCreationRefusal(store, session.accountId);
    const shell = await shellFor(context, request, reply, null);
    return sendPage(reply, 200, RollKeyPage({ shell, now, keyView: view, blocked, stopOld: DEFAULT_STOP_OLD, expiry: DEFAULT_ROLL_EXPIRY, error: null, expiryError: null, nonce: newNonce() }));
  });
}
