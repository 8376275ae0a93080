/**
 * POST /settings/developer-api/keys/:id/roll: rolls the key through the same service as the command line,
 * keeps the new key in the one-time slot and redirects to the page that shows it once. A resubmitted form
 * makes no second key. Bad input (no stop time, a bad expiry, a key revoked meanwhile): the form again, 422,
 * each message at its field.
 */
import { InputError, InputErrors } from '../../../errors/input-error.js';
import { rollKey } from '../../../services/keys.service.js';
import { ownedKey } from '../../../services/key-lookup.js';
import { keyCreationRefusal } from '../account-access.js';
import { expiryAsk, expiryValues } from '../expiry-input.js';
import { formBody, keyIdParam, nonceField, textField } from '../form-input.js';
import { ownerActor, requireRecentSignIn } from '../guards.js';
import { withNotice } from '../notices.js';
import { firstSubmission, keepNewKey, newNonce, releasingSubmission } from '../one-time.js';
import { namingRefusal } from '../page-errors.js';
import { ownedKeyView } from '../overview-data.js';
import { paths } from '../paths.js';
import { sendPage } from '../render.js';
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { RollKeyPage } from '../views/roll-key.js';

export function registerRollKey(app: SettingsApp, context: SettingsContext): void {
  const { store, clock, config } = context.deps;
  app.post('/developer-api/keys/:id/roll', async (request, reply) => {
    const session = requireRecentSignIn(context, request);
    const keyId = keyIdParam(request.params);
    const body = formBody(request.body);
    const nonce = nonceField(body);
    const stopOld = textField(body, 'stopOld');
    const expiry = expiryValues(body);
    const now = clock.now();
    // The key must be the owner's before anything is recorded (another account's id: 404, nothing changed).
    const before = await ownedKey(store, session.accountId, keyId);
    if (!(await firstSubmission(store, session, nonce, now))) return reply.redirect(withNotice(paths.overview, 'already_submitted'), 303);
    try {
      const roll = () =>
        rollKey(store, {
          keyId,
          accountId: session.accountId,
          stopOld,
          expiresAt: expiryAsk(expiry, 'roll'),
          now,
          keyPrefix: config.keyPrefix,
          actor: ownerActor(session, request),
          keep: keepNewKey(request, session, now),
        });
      // A roll the access fence refused made nothing: its form may be sent again, so its nonce is not spent.
      const { created } = await namingRefusal('roll', () => roll().catch(releasingSubmission(store, session, nonce)));
      request.log.info({ accountId: session.accountId, keyId, newKeyId: created.id }, 'settings: key rolled');
      return reply.redirect(paths.createdKey, 303);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      const shell = await shellFor(context, request, reply, null);
      const view = await ownedKeyView(context.deps, session.accountId, before.id, now);
      const refusals = error instanceof InputErrors ? error.errors : [error];
      const at = (field: 'stopOld' | 'expiry') => refusals.find((e) => e.field === field)?.message ?? null;
      // A refusal of the key itself (revoked meanwhile, a lapsed plan) replaces the form.
      const other = refusals.find((e) => e.field !== 'stopOld' && e.field !== 'expiry');
      const blocked = other !== undefined ? other.message : await keyCreationRefusal(store, session.accountId);
      return sendPage(
        reply,
        422,
        RollKeyPage({ shell, now, keyView: view, blocked, stopOld, expiry, error: at('stopOld'), expiryError: at('expiry'), nonce: newNonce() }),
      );
    }
  });
}
