/**
 * POST /settings/sign-out: deletes the session from the store, so every server refuses its cookie on the
 * next request, clears the cookies, and shows a signed-out page. Signing out with no session is no error.
 */
import { recordSecurityEvent } from '../../../services/security-log.js';
import { endSession, SESSION_COOKIE } from '../../../services/settings-auth/sessions.js';
import { sendPage } from '../render.js';
import { CSRF_COOKIE, cookieOptions, type SettingsApp, type SettingsContext } from '../settings-context.js';
import { SignedOutPage } from '../views/signed-out.js';

export function registerSignOut(app: SettingsApp, context: SettingsContext): void {
  const { store, clock } = context.deps;
  app.post('/sign-out', async (request, reply) => {
    const session = request.settingsSession;
    if (session !== null) {
      await endSession(store, session.idHash);
      await recordSecurityEvent(store.db, {
        accountId: session.accountId,
        at: clock.now(),
        kind: 'signed_out',
        actor: { kind: 'owner', accountId: session.accountId, address: request.clientAddress },
      });
      request.log.info({ accountId: session.accountId }, 'settings: signed out');
    }
    request.settingsSession = null;
    reply.clearCookie(SESSION_COOKIE, cookieOptions(context)).clearCookie(CSRF_COOKIE, cookieOptions(context));
    return sendPage(reply, 200, SignedOutPage());
  });
}
