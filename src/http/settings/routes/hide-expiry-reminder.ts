/**
 * POST /settings/developer-api/keys/:id/hide-expiry-reminder: hides the overview's expiry reminder for one
 * of the owner's keys until the next UTC day (src/services/expiry-reminders.ts), and redirects to the
 * overview. Another account's key, or none: 404, nothing stored. Changes no key, so a sign-in of any age
 * will do; the form token and the same-site check apply as to every POST.
 */
import { hideExpiryReminder } from '../../../services/expiry-reminders.js';
import { keyIdParam } from '../form-input.js';
import { withNotice } from '../notices.js';
import { paths } from '../paths.js';
import { requireSession, type SettingsApp, type SettingsContext } from '../settings-context.js';

export function registerHideExpiryReminder(app: SettingsApp, context: SettingsContext): void {
  const { store, clock } = context.deps;
  app.post('/developer-api/keys/:id/hide-expiry-reminder', async (request, reply) => {
    const session = requireSession(request);
    const keyId = keyIdParam(request.params);
    const { until } = await hideExpiryReminder(store, { accountId: session.accountId, keyId, now: clock.now() });
    request.log.info({ accountId: session.accountId, keyId, until }, 'settings: expiry reminder hidden');
    return reply.redirect(withNotice(paths.overview, 'reminder_hidden'), 303);
  });
}
