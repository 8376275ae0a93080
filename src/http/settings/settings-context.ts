/**
 * What the settings screen's routes share with its plugin: the request's session fields, the context every
 * route is given, and the cookie and session rules. Its own module, below settings-plugin.ts (which
 * registers the routes), so that a route can use these without importing the module that imports it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Session } from '../../services/settings-auth/sessions.js';
import type { AppDeps } from '../app-types.js';
import { PageError } from './page-errors.js';
import { SETTINGS_PREFIX } from './paths.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in owner's session on a settings page; null when none (or outside the settings screen). */
    settingsSession: Session | null;
    /** The session cookie's value, needed to open the new key's sealed slot; never logged. */
    settingsCookie: string | null;
    /** The form token for this page's forms (GET pages with a session). */
    formToken: string;
    /** Epoch ms by which the page is answered, 503 if the stores have not answered (src/deadline.ts). */
    settingsDeadline: number;
  }
}

export const CSRF_COOKIE = 'shelfapi_settings_csrf';

export interface SettingsContext {
  deps: AppDeps;
  /** True when PUBLIC_URL is https: cookies get `Secure`. */
  secureCookies: boolean;
}

export type SettingsApp = FastifyInstance;

export function cookieOptions(context: SettingsContext) {
  return { path: SETTINGS_PREFIX, httpOnly: true, sameSite: 'lax', secure: context.secureCookies } as const;
}

export function requireSession(request: FastifyRequest): Session {
  if (request.settingsSession === null) throw new PageError('signed_out');
  return request.settingsSession;
}
