/** POST /settings/developer-api/keys/:id/name: renames the key (303 back to it); bad name: the page again, 422. */
import { InputError } from '../../../errors/input-error.js';
import { renameKey } from '../../../services/keys.service.js';
import { formBody, keyIdParam, textField } from '../form-input.js';
import { ownerActor } from '../guards.js';
import { keyDetailsData } from '../key-details-data.js';
import { withNotice } from '../notices.js';
import { namingRefusal } from '../page-errors.js';
import { paths } from '../paths.js';
import { sendPage } from '../render.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { KeyDetailsPage } from '../views/key-details.js';

export function registerRenameKey(app: SettingsApp, context: SettingsContext): void {
  const { store, clock, config } = context.deps;
  app.post('/developer-api/keys/:id/name', async (request, reply) => {
    const session = requireSession(request);
    const keyId = keyIdParam(request.params);
    const name = textField(formBody(request.body), 'name');
    const now = clock.now();
    try {
      await namingRefusal('rename', () => renameKey(store, { keyId, accountId: session.accountId, name, now, keyPrefix: config.keyPrefix, actor: ownerActor(session, request) }));
      return reply.redirect(withNotice(paths.key(keyId), 'renamed'), 303);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      const data = await keyDetailsData(context.deps, session.accountId, keyId, now, request.clientAddress);
      const shell = await shellFor(context, request, reply, null);
      const form = error.field === 'name' ? { name: { value: name, error: error.message } } : { key: error.message };
      return sendPage(reply, 422, KeyDetailsPage({ shell, data, form, notice: null }));
    }
  });
}
