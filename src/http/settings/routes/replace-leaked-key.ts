/**
 * POST /settings/developer-api/keys/:id/replace-leaked: the one click on a leaked key's banner (the
 * overview's or the key's page): makes its replacement with the same name, scopes and allowed addresses
 * through the services (leaked-key-replacement.ts), keeps it in the one-time slot and redirects to the page
 * that shows it once. The form token is checked by the plugin as for every form. A second click (or a key
 * not revoked for a leak, a lapsed plan): the key's page again with why, 422, nothing made.
 */
import { InputError } from '../../../errors/input-error.js';
import { replaceLeakedKey } from '../../../services/leaked-key-replacement.js';
import { keyIdParam } from '../form-input.js';
import { ownerActor, requireRecentSignIn } from '../guards.js';
import { keyDetailsData } from '../key-details-data.js';
import { keepNewKey } from '../one-time.js';
import { paths } from '../paths.js';
import { sendPage } from '../render.js';
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { KeyDetailsPage } from '../views/key-details.js';

export function registerReplaceLeakedKey(app: SettingsApp, context: SettingsContext): void {
  const { store, clock, config } = context.deps;
  app.post('/developer-api/keys/:id/replace-leaked', async (request, reply) => {
    const session = requireRecentSignIn(context, request);
    const keyId = keyIdParam(request.params);
    const now = clock.now();
    try {
      const created = await replaceLeakedKey(store, {
        keyId,
        accountId: session.accountId,
        now,
        keyPrefix: config.keyPrefix,
        actor: ownerActor(session, request),
        keep: keepNewKey(request, session, now),
      });
      request.log.info({ accountId: session.accountId, keyId, newKeyId: created.id }, 'settings: leaked key replaced');
      return reply.redirect(paths.createdKey, 303);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      const data = await keyDetailsData(context.deps, session.accountId, keyId, now, request.clientAddress);
      const shell = await shellFor(context, request, reply, null);
      return sendPage(reply, 422, KeyDetailsPage({ shell, data, form: { key: error.message }, notice: null }));
    }
  });
}
