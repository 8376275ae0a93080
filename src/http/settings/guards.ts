/** Checks a route makes before a change: a signed-in owner, and a recent enough sign-in for sensitive ones. */
import type { FastifyRequest } from 'fastify';
import type { Actor } from '../../services/actor.js';
import { withinReauthWindow, type Session } from '../../services/settings-auth/sessions.js';
import { PageError } from './page-errors.js';
import { requireSession, type SettingsContext } from './settings-context.js';

/** Create, roll, revoke, scope and allowed-address changes: the session must have signed in within SETTINGS_REAUTH_MINUTES. */
export function requireRecentSignIn(context: SettingsContext, request: FastifyRequest): Session {
  const session = requireSession(request);
  if (!withinReauthWindow(session, context.deps.clock.now(), context.deps.config.settingsReauthMinutes)) {
    throw new PageError('reauth_required');
  }
  return session;
}

export function ownerActor(session: Session, request: FastifyRequest): Actor {
  return { kind: 'owner', accountId: session.accountId, address: request.clientAddress };
}
