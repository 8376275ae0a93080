/**
 * POST /settings/developer-api/keys/:id/addresses: replaces the addresses the key may be used from (empty:
 * any), through the same service as `shelfapi keys set-allowed-ips`; effective on the key's next request, on
 * every server. Needs a recent sign-in. Bad input: the form again (422), nothing saved. A list that leaves
 * out the owner's own address (as this request comes, by the TRUST_PROXY rule) is not saved either until
 * the owner confirms it: the form comes back (200) with a warning and "Save anyway" (`lockout=accept`).
 */
import { InputError } from '../../../errors/input-error.js';
import { setAllowedAddresses } from '../../../services/keys.service.js';
import { lockOutWarning, locksOut, parseAllowedAddresses } from '../../../services/key-fields.js';
import { formBody, keyIdParam, textField } from '../form-input.js';
import { ownerActor, requireRecentSignIn } from '../guards.js';
import { keyDetailsData } from '../key-details-data.js';
import { withNotice } from '../notices.js';
import { namingRefusal } from '../page-errors.js';
import { paths } from '../paths.js';
import { sendPage } from '../render.js';
import type { SettingsApp, SettingsContext } from '../settings-context.js';
import { shellFor } from '../shell.js';
import { KeyDetailsPage, type KeyDetailsForm } from '../views/key-details.js';

export function registerSetKeyAddresses(app: SettingsApp, context: SettingsContext): void {
  const { store, clock, config } = context.deps;
  app.post('/developer-api/keys/:id/addresses', async (request, reply) => {
    const session = requireRecentSignIn(context, request);
    const keyId = keyIdParam(request.params);
    const body = formBody(request.body);
    const value = textField(body, 'addresses');
    const confirmed = textField(body, 'lockout') === 'accept';
    const now = clock.now();
    const page = async (status: number, form: KeyDetailsForm) => {
      const data = await keyDetailsData(context.deps, session.accountId, keyId, now, request.clientAddress);
      const shell = await shellFor(context, request, reply, null);
      return sendPage(reply, status, KeyDetailsPage({ shell, data, form, notice: null }));
    };
    try {
      const addresses = parseAllowedAddresses(value);
      if (!confirmed && locksOut(addresses, request.clientAddress)) {
        return await page(200, { addresses: { value, warning: lockOutWarning(request.clientAddress) } });
      }
      await namingRefusal('addresses', () =>
        setAllowedAddresses(store, { keyId, accountId: session.accountId, addresses, now, keyPrefix: config.keyPrefix, actor: ownerActor(session, request) }),
      );
      return reply.redirect(withNotice(paths.key(keyId), 'addresses'), 303);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      return page(422, error.field === 'addresses' ? { addresses: { value, error: error.message } } : { key: error.message });
    }
  });
}
