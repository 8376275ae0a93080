/**
 * POST /settings/developer-api/keys/:id/revoke: revokes the key (refused from its next request, on every
 * server) and redirects to its page. A key already revoked: the confirmation again with why, 422.
 */
import { InputError } from '../../../errors/input-error.js';
import { revokeKey } from '../../../services/keys.service.js';
import { keyIdParam } from '../form-input.js';
import { ownerActor, requireRecentSignIn } from '../guards.js';
import { withNotice } from '../notices.js';
import { ownedKeyView } from '../overview-data.js';
import { namingRefusal } from '../page-errors.js';
import { paths } from '../paths.js';
import { sendPage } from '../render.js';
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { RevokeKeyPage } from '../views/revoke-key.js';

export function registerRevokeKey(app: SettingsApp, context: SettingsContext): void {
  const { store, clock, config } = context.deps;
  app.post('/developer-api/keys/:id/revoke', async (request, reply) => {
    const session = requireRecentSignIn(context, request);
    const keyId = keyIdParam(request.params);
    const now = clock.now();
    try {
      await namingRefusal('revoke', () => revokeKey(store, { keyId, accountId: session.accountId, now, keyPrefix: config.keyPrefix, actor: ownerActor(session, request) }));
      request.log.info({ accountId: session.accountId, keyId }, 'settings: key revoked');
      return reply.redirect(withNotice(paths.key(keyId), 'revoked'), 303);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      const view = await ownedKeyView(context.deps, session.accountId, keyId, now);
      const shell = await shellFor(context, request, reply, null);
      return sendPage(reply, 422, RevokeKeyPage({ shell, now, keyView: view, error: error.message }));
    }
  });
}
