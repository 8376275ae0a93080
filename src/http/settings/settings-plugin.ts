/**
 * The owner's settings screen (docs/contract.md, "Settings screen") as its own encapsulated Fastify plugin under /settings: a
 * second surface of the same service, beside the Developer API. Everything here stays inside this
 * context: cookies are parsed, form bodies read, security headers set, sessions loaded and form tokens
 * checked only for these routes; every route is `public` to the app, so the API's key, metering and
 * rate-limit pipeline never runs for it and the API never reads or sets a cookie.
 *
 * Pipeline of a settings request:
 *   onRequest     Cache-Control no-store; the session from its cookie (or none)
 *   preValidation POST: Origin / Sec-Fetch-Site is this site (403), a session (401), the form token (403)
 *   preHandler    GET: a form token for the page's forms
 *   handler       one route file per page or action (routes/index.ts)
 */
import { randomBytes } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrfProtection from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import fastifyHelmet from '@fastify/helmet';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InputError, NotFoundError } from '../../errors/input-error.js';
import { SESSION_COOKIE, loadSession } from '../../services/settings-auth/sessions.js';
import { ensureSecret } from '../../store/repositories/settings-auth.repository.js';
import type { App, AppDeps } from '../app-types.js';
import { REQUEST_DEADLINE_MS, settleBy } from '../../deadline.js';
import { isOutage, RETRY_AFTER_UNAVAILABLE_S } from '../store-unavailable.js';
import { AccessChangeUnavailableError } from '../../metering/access-change.js';
import { PageError, UNAVAILABLE_AFTER_POST } from './page-errors.js';
import { SETTINGS_PREFIX } from './paths.js';
import { sendPage } from './render.js';
import { registerSettingsRoutes } from './routes/index.js';
import { CSRF_COOKIE, cookieOptions, type SettingsContext } from './settings-context.js';
import { checkSameSite, SETTINGS_CSP_DIRECTIVES, siteOrigin } from './site.js';
import { errorPage } from './views/error-pages.js';
import { shellFor } from './shell.js';

/** A form of ours is a few hundred bytes; nothing larger is read. */
const FORM_BODY_LIMIT = 16 * 1024;

export async function registerSettings(app: App, deps: AppDeps): Promise<void> {
  const { config, store, clock } = deps;
  const context: SettingsContext = { deps, secureCookies: config.publicUrl?.startsWith('https:') ?? false };
  // The form tokens' HMAC key is shared by every server (kept in the store), so a form rendered by one
  // server can be posted to another.
  const formTokenKey = await ensureSecret(store.db, 'form_tokens', randomBytes(32).toString('base64url'), new Date(clock.now()).toISOString());

  await app.register(
    async (settings) => {
      settings.addHook('onRoute', (route) => {
        route.config = { ...(route.config ?? {}), public: true };
        // The OpenAPI document describes the Developer API only.
        route.schema = { ...(route.schema ?? {}), hide: true };
        // The page's queries get what is left of the request's deadline (set in onRequest), then 503, as
        // on the API: a stalled store otherwise held the page for the driver's own time limit, then 500.
        const handler = route.handler as (this: unknown, request: FastifyRequest, reply: FastifyReply) => unknown;
        route.handler = function (this: unknown, request: FastifyRequest, reply: FastifyReply) {
          return settleBy(request.settingsDeadline, Promise.resolve(handler.call(this, request, reply)), 'the settings page');
        } as typeof route.handler;
      });
      settings.decorateRequest('settingsSession', null);
      settings.decorateRequest('settingsCookie', null);
      settings.decorateRequest('formToken', '');
      settings.decorateRequest('settingsDeadline', 0);

      await settings.register(fastifyCookie);
      await settings.register(fastifyFormbody, { bodyLimit: FORM_BODY_LIMIT });
      await settings.register(fastifyHelmet, {
        contentSecurityPolicy: { useDefaults: false, directives: { ...SETTINGS_CSP_DIRECTIVES } },
        referrerPolicy: { policy: 'no-referrer' },
        hsts: context.secureCookies ? { maxAge: 31_536_000 } : false,
        // Only our own pages and files are ever loaded; no need to be loadable by other origins.
        crossOriginResourcePolicy: { policy: 'same-origin' },
      });
      await settings.register(fastifyCsrfProtection, {
        sessionPlugin: '@fastify/cookie',
        cookieKey: CSRF_COOKIE,
        cookieOpts: cookieOptions(context),
        // Binds every form token to the session it was made for: a token from another session is refused.
        getUserInfo: (request: FastifyRequest) => request.settingsSession?.idHash ?? '',
        csrfOpts: { hmacKey: formTokenKey },
      });

      settings.addHook('onRequest', async (request, reply) => {
        reply.header('cache-control', 'no-store');
        request.settingsDeadline = Date.now() + REQUEST_DEADLINE_MS;
        const cookie = request.cookies[SESSION_COOKIE];
        const session = await settleBy(request.settingsDeadline, loadSession(store, cookie, clock.now()), 'the session lookup');
        request.settingsSession = session;
        request.settingsCookie = session === null ? null : (cookie ?? null);
      });

      settings.addHook('preValidation', async (request) => {
        if (request.method !== 'POST') return;
        const site = checkSameSite(request.headers, siteOrigin(request, config.publicUrl));
        if (!site.ok) {
          request.log.warn({ reason: site.reason }, 'settings: request from another site refused');
          throw new PageError('forbidden_request', site.reason);
        }
        // Signing out twice, or after the session ended, is not an error: the owner is signed out.
        if (request.settingsSession === null) {
          if (request.routeOptions.url === `${SETTINGS_PREFIX}/sign-out`) return;
          throw new PageError('signed_out');
        }
      });
      // The form token, checked by @fastify/csrf-protection against this session (it answers a missing or
      // wrong token with an error the handler below turns into the 403 page).
      settings.addHook('preValidation', (request, reply, done) => {
        if (request.method !== 'POST' || request.settingsSession === null) return done();
        settings.csrfProtection(request, reply, done);
      });

      settings.addHook('preHandler', async (request, reply) => {
        if (request.method === 'GET' && request.settingsSession !== null) {
          request.formToken = reply.generateCsrf({ userInfo: request.settingsSession.idHash });
        }
      });

      settings.setErrorHandler(async (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
        const pageError = toPageError(error, request);
        // An outage's page is plain: the shell would ask the store again.
        const outage = pageError.kind === 'unavailable' || pageError.kind === 'change_refused';
        const signedIn = request.settingsSession !== null && pageError.kind !== 'signed_out' && !outage;
        const shell = signedIn
          ? await settleBy(request.settingsDeadline, shellFor(context, request, reply, null), 'the page shell').catch(() => null)
          : null;
        if (outage) reply.header('retry-after', RETRY_AFTER_UNAVAILABLE_S);
        return sendPage(reply, pageError.status, errorPage(pageError, shell, config.settingsReauthMinutes));
      });

      await registerSettingsRoutes(settings, context);
    },
    { prefix: SETTINGS_PREFIX },
  );
}

function toPageError(error: unknown, request: FastifyRequest): PageError {
  // A key change the access fence refused (Redis away): expected, and nothing was written. Routes name the
  // change (namingRefusal); one that does not still gets the page that says nothing was changed.
  if (error instanceof AccessChangeUnavailableError || (error instanceof PageError && error.kind === 'change_refused')) {
    request.log.warn({ cause: rootMessage(error) }, 'settings: key change refused, Redis unavailable');
    return error instanceof PageError ? error : new PageError('change_refused');
  }
  if (error instanceof PageError) return error;
  if (error instanceof NotFoundError) return new PageError('not_found');
  if (error instanceof InputError) return new PageError('bad_request', error.message);
  const code = (error as { code?: unknown }).code;
  if (code === 'FST_CSRF_MISSING_SECRET' || code === 'FST_CSRF_INVALID_TOKEN') return new PageError('forbidden_request', 'form_token');
  if (isOutage(error)) {
    // Expected while a store is down or stalled: a warning naming the cause, no stack (not a fault of ours).
    request.log.warn({ cause: error instanceof Error ? error.message : String(error) }, 'settings: store unavailable');
    return new PageError('unavailable', request.method === 'POST' ? UNAVAILABLE_AFTER_POST : 'unavailable');
  }
  const status = (error as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    request.log.info({ err: error }, 'settings: bad request');
    return new PageError('bad_request');
  }
  request.log.error({ err: error }, 'settings: unexpected error');
  return new PageError('unexpected');
}

/** The innermost cause's message (the driver's own words, for the log only). */
function rootMessage(error: unknown): string {
  let at: unknown = error;
  while (at instanceof Error && at.cause !== undefined) at = at.cause;
  return at instanceof Error ? at.message : String(at);
}
