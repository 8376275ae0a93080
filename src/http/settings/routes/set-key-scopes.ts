/**
 * POST /settings/developer-api/keys/:id/scopes: replaces the key's scopes (effective on its next request, on
 * every server: the request path reads them from the store). Needs a recent sign-in. Bad input: 422.
 */
import { InputError } from '../../../errors/input-error.js';
import { setKeyScopes } from '../../../services/keys.service.js';
import { formBody, keyIdParam, listField } from '../form-input.js';
import { ownerActor, requireRecentSignIn } from '../guards.js';
import { keyDetailsData } from '../key-details-data.js';
import { withNotice } from '../notices.js';
import { namingRefusal } from '../page-errors.js';
import { paths } from '../paths.js';
import { sendPage } from '../render.js';
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { KeyDetailsPage } from '../views/key-details.js';

export function registerSetKeyScopes(app: SettingsApp, context: SettingsContext): void {
  const { store, clock, config } = context.deps;
  app.post('/developer-api/keys/:id/scopes', async (request, reply) => {
    const session = requireRecentSignIn(context, request);
    const keyId = keyIdParam(request.params);
    const scopes = listField(formBody(request.body), 'scopes');
    const now = clock.now();
    try {
      await namingRefusal('scopes', () =>
        setKeyScopes(store, { keyId, accountId: session.accountId, scopes, now, keyPrefix: config.keyPrefix, actor: ownerActor(session, request) }),
      );
      return reply.redirect(withNotice(paths.key(keyId), 'scopes'), 303);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      const data = await keyDetailsData(context.deps, session.accountId, keyId, now, request.clientAddress);
      const shell = await shellFor(context, request, reply, null);
      const form = error.field === 'scopes' ? { scopes: { values: scopes, error: error.message } } : { key: error.message };
      return sendPage(reply, 422, KeyDetailsPage({ shell, data, form, notice: null }));
    }
  });
}
