/**
 * POST /settings/developer-api/keys: creates the key through the same service as `shelfapi keys create`,
 * keeps it in the session's one-time slot and redirects to the page that shows it once (303). Bad input:
 * the form again (422) with the message at its field, nothing created. A resubmitted form (same nonce):
 * no second key, a redirect to the overview that says so. Allowed addresses that leave out the owner's own
 * address: the form again (200, the same nonce) with a warning and "Create anyway" (`lockout=accept`).
 */
import { createKey } from '../../../services/keys.service.js';
import { lockOutWarning, locksOut, parseAllowedAddresses } from '../../../services/key-fields.js';
import { InputError, InputErrors } from '../../../errors/input-error.js';
import { keyCreationRefusal } from '../account-access.js';
import { expiryAsk, expiryValues } from '../expiry-input.js';
import { formBody, listField, nonceField, textField } from '../form-input.js';
import { ownerActor, requireRecentSignIn } from '../guards.js';
import { withNotice } from '../notices.js';
import { firstSubmission, keepNewKey, newNonce } from '../one-time.js';
import { paths } from '../paths.js';
import { sendPage } from '../render.js';
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { CreateKeyPage, type FieldErrors } from '../views/create-key.js';

export function registerCreateKey(app: SettingsApp, context: SettingsContext): void {
  const { store, clock, config } = context.deps;
  app.post('/developer-api/keys', async (request, reply) => {
    const session = requireRecentSignIn(context, request);
    const body = formBody(request.body);
    const nonce = nonceField(body);
    const values = { name: textField(body, 'name'), scopes: listField(body, 'scopes'), ...expiryValues(body), addresses: textField(body, 'addresses') };
    const now = clock.now();
    // Asked before the nonce is spent, so that "Create anyway" posts the same form again.
    if (textField(body, 'lockout') !== 'accept' && locksOutOwner(values.addresses, request.clientAddress)) {
      const blocked = await keyCreationRefusal(store, session.accountId);
      const shell = await shellFor(context, request, reply, 'create');
      const warning = lockOutWarning(request.clientAddress);
      return sendPage(reply, 200, CreateKeyPage({ shell, now, blocked, values, errors: {}, nonce, clientAddress: request.clientAddress, lockOutWarning: warning }));
    }
    if (!(await firstSubmission(store, session, nonce, now))) return reply.redirect(withNotice(paths.overview, 'already_submitted'), 303);
    try {
      const created = await createKey(store, {
        accountId: session.accountId,
        name: values.name,
        scopes: values.scopes,
        expiresAt: expiryAsk(values, 'create'),
        allowedAddresses: values.addresses,
        now,
        keyPrefix: config.keyPrefix,
        actor: ownerActor(session, request),
        keep: keepNewKey(request, session, now),
      });
      request.log.info({ accountId: session.accountId, keyId: created.id }, 'settings: key created');
      return reply.redirect(paths.createdKey, 303);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      // Every refused field at once, each message at its field.
      const errors: FieldErrors = {};
      for (const one of error instanceof InputErrors ? error.errors : [error]) {
        if (one.field === 'name' || one.field === 'scopes' || one.field === 'expiry' || one.field === 'addresses') errors[one.field] = one.message;
        else errors.form = one.message;
      }
      const blocked = await keyCreationRefusal(store, session.accountId);
      const shell = await shellFor(context, request, reply, 'create');
      return sendPage(reply, 422, CreateKeyPage({ shell, now, blocked, values, errors, nonce: newNonce(), clientAddress: request.clientAddress }));
    }
  });
}

/** A list that parses and leaves out `address`; a list that does not parse is refused by createKey instead. */
function locksOutOwner(text: string, address: string): boolean {
  try {
    return locksOut(parseAllowedAddresses(text), address);
  } catch (error) {
    if (error instanceof InputError) return false;
    throw error;
  }
}
