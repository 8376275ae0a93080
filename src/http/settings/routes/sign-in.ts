/**
 * GET /settings/sign-in?token=: exchanges a handover token for a session, then redirects to the overview
 * so the token leaves the address bar (and the history). The session cookie is SameSite=Lax: the owner
 * arrives here by a top-level navigation from the platform's site, and the redirect that follows is part
 * of that navigation; with Strict, the browser would withhold the new cookie on it and the owner would land
 * signed out. Cross-site POSTs still carry no cookie under Lax, and every POST also needs a form token.
 */
import { recordSecurityEvent } from '../../../services/security-log.js';
import { handoverSecret, redeemHandoverToken } from '../../../services/settings-auth/handover-token.js';
import { endSession, SESSION_ABSOLUTE_MS, SESSION_COOKIE, startSession } from '../../../services/settings-auth/sessions.js';
import { PageError } from '../page-errors.js';
import { paths } from '../paths.js';
import { cookieOptions, type SettingsApp, type SettingsContext } from '../settings-context.js';

export function registerSignIn(app: SettingsApp, context: SettingsContext): void {
  const { store, config, clock } = context.deps;
  app.get('/sign-in', async (request, reply) => {
    const token = (request.query as { token?: unknown }).token;
    if (typeof token !== 'string' || token === '' || token.length > 4096) throw new PageError('link_refused', 'missing');
    const now = clock.now();
    const result = await redeemHandoverToken(store, await handoverSecret(store, config, now), token, now);
    if (!result.ok) {
      request.log.info({ reason: result.reason }, 'settings: sign-in link refused');
      throw new PageError('link_refused', result.reason);
    }
    // A new sign-in replaces the session this browser had, whoever's it was.
    if (request.settingsSession !== null) await endSession(store, request.settingsSession.idHash);
    const { token: cookie, session } = await startSession(store, result.accountId, now, request.clientAddress);
    request.settingsSession = session;
    await recordSecurityEvent(store.db, {
      accountId: result.accountId,
      at: now,
      kind: 'signed_in',
      actor: { kind: 'owner', accountId: result.accountId, address: request.clientAddress },
    });
    request.log.info({ accountId: result.accountId }, 'settings: signed in');
    return reply
      .setCookie(SESSION_COOKIE, cookie, { ...cookieOptions(context), maxAge: SESSION_ABSOLUTE_MS / 1000 })
      .redirect(paths.overview, 303);
  });
}
