/**
 * The Data API's request pipeline (docs/contract.md, "Request pipeline"), in order:
 *   onRequest   1 method (405) -> 2 key (401) -> 3 allowed addresses (401) -> 4 plan (403 forbidden)
 *   preHandler  5 burst (429) -> 6 route (404; OPTIONS 204) -> 7 scope (403) -> 8 parameters (400)
 *               -> 9 quota (429)        [one meter call decides 5 and 9 together, atomically]
 *   handler     10 200, or 404 for a missing item
 *   onSend      strong ETag; 304 for a matching If-None-Match (its quota count given back)
 *   onResponse  the owner's per-key statistics, metrics, one log line
 * Route, scope and parameters are known before the meter is asked, so a request costs one round trip to
 * the meter, and the outcome still follows the contract's order.
 *
 * On PostgreSQL + Redis a key's principal held by this server is used at step 2 without reading PostgreSQL,
 * and the meter's admission checks it: the script compares the held principal's access version with the
 * account's in Redis and counts nothing when they differ ("stale"); the pipeline then reads the key from
 * PostgreSQL, decides steps 2 and 3 again (a revoked key is 401 then) and admits again, without the check.
 * So a request whose principal is current makes one round trip, to Redis (docs/performance.md). A held row
 * that would be refused is never trusted either: it is read again first.
 *
 * The hooks sit on the root instance, not in an encapsulated plugin under /developer/v1: a URL that matches
 * no route (anywhere on the port), a router error (framework errors) and a request while the server drains
 * all go through steps 1 to 5 before they are answered. The other surfaces (the reference page, the
 * settings screen) mark their routes `public`, and the pipeline steps aside for them.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, RefusedKeyError, type KeyRefusal, type Principal } from '../../auth/authenticate.js';
import { PrincipalCache } from '../../auth/principal-cache.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { REQUEST_DEADLINE_MS, settleBy } from '../../deadline.js';
import type { PlanLimits, Scope } from '../../domain/scopes.js';
import { AuthError } from '../../errors/auth-error.js';
import { MeterUnavailableError, type Admission, type BurstState, type Meter } from '../../metering/meter.js';
import { STALE, type AccessCheckedMeter } from '../../metering/redis-meter.js';
import { giveBackCounted } from '../../metering/give-back.js';
import { ceilSeconds, dayOf, monthBounds } from '../../metering/periods.js';
import type { UsageStats } from '../../usage-stats/usage-stats.js';
import type { Metrics } from '../../observability/metrics.js';
import type { HotQueries } from '../../store/hot-queries.js';
import type { App } from '../app-types.js';
import { hostHeaderProblem } from '../connection-errors.js';
import { ApiError, badRequest, errorBody, notFound } from '../errors.js';
import { redactSecrets } from '../log-redaction.js';
import { ifNoneMatchMatches, strongEtag } from './conditional.js';
import { paramValidatorCompiler } from './param-validator.js';
import { rateLimitHeaders } from './rate-limit-headers.js';
import { isOutage, RETRY_AFTER_UNAVAILABLE_S } from '../store-unavailable.js';
import { gateKeyOf, KeyGate, type Release } from './key-gate.js';
import { API_PREFIX } from './api-prefix.js';
import { usageRecord } from './usage-record.js';

/** Whether a logger at this level writes the per-request line (info); false for Fastify's silent logger. */
const logsRequests = (level: string | undefined): boolean => level === 'info' || level === 'debug' || level === 'trace';

/** What a route declares about itself to the pipeline. */
export interface RouteMeta {
  /** Scope the endpoint needs; null for /me. */
  scope: Scope | null;
  /** Counts against the monthly quota (every endpoint but /me). */
  quota: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    /** The quota count this request holds (its month and UTC day), so a 5xx or a 304 can give it back; null when none was taken or it was given back. */
    quotaCharge: { period: string; day: string } | null;
    /** The account's quota usage as the meter saw it when admitting this request (/me reports it). */
    usage: { period: string; used: number } | null;
    /** The admission's burst state and time, to restate the rate-limit headers after a give-back. */
    burst: { state: BurstState; now: number } | null;
    /** Epoch ms by which the request is answered, 503 if its stores have not answered (deadline.ts). */
    deadline: number;
    /** A known key refused (revoked, expired, a refused address, lapsed plan): whose attempt it was and why, for the owner's statistics. */
    refusedKey: { keyId: number; accountId: number; refusal: KeyRefusal } | null;
    /** The error this request was answered with, for the owner's statistics. */
    failure: { code: string; message: string } | null;
    /** The store's data version, read with the key check; null when none was read (item-answers.ts). */
    dataVersion: number | null;
    /**
     * PostgreSQL + Redis, when the key check read nothing from PostgreSQL: the data version as the LISTEN
     * connection last heard it (within a second of a load or import). Single-item answers use it; lists,
     * searches and exports read the data version themselves (dataVersion is null then).
     */
    notifiedDataVersion: number | null;
    /** The access version of a held principal used without reading PostgreSQL, for the meter to check; else null. */
    heldAccessVersion: number | null;
    /** The account's access version as read from PostgreSQL for this request, for the meter to keep; else null. */
    readAccessVersion: number | null;
  }
  interface FastifyContextConfig {
    meta?: RouteMeta;
    /** Set on the OPTIONS twin of every route. */
    preflight?: boolean;
    /** Served outside the Developer API (the reference page, the settings screen): no key, no metering, no rate-limit headers. */
    public?: boolean;
  }
}

export const ALLOW = 'GET, HEAD, OPTIONS';
const ACCEPTED_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** A give-back (refund) may hold a 5xx past the request's deadline this long at most, then goes on alone. */
const GIVE_BACK_WAIT_MS = 200;

/** What the pipeline reads: the key lookup, the meter, the clock, and where outcomes are recorded. */
export interface ApiPipelineDeps {
  config: Readonly<Config>;
  meter: Meter;
  clock: Clock;
  queries: HotQueries;
  metrics: Metrics;
  /** The owners' per-key statistics; null when requests are not recorded for them. */
  stats: UsageStats | null;
  /**
   * PostgreSQL + Redis: the meter that checks held principals' access versions, and whether the server may
   * use held principals now (its LISTEN connection, version-listener.ts); null elsewhere.
   */
  heldPrincipals?: HeldPrincipalsDeps | null;
}

export interface HeldPrincipalsDeps {
  meter: AccessCheckedMeter;
  versions: {
    /** False while held principals must not be used (the LISTEN connection is down, or a version not yet in Redis). */
    trusted(): boolean;
    /** The data version as notified; only read while trusted. */
    readonly dataVersion: number | null;
  };
}

export interface ApiPipeline {
  /** Fastify's `frameworkErrors` option: the router's own errors, answered after steps 1 to 5. */
  frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => void;
  /** Adds the request decorations, hooks, not-found and error handlers to the root instance. */
  install(app: App): void;
  /** Drops every principal this server holds (its LISTEN connection listens again: see version-listener.ts). */
  dropHeldPrincipals(): void;
}

/** The contract's error for anything thrown while answering: 503 for an unreachable store or meter. */
function toApiError(error: unknown, request: FastifyRequest, metrics: Metrics): ApiError {
  if (error instanceof ApiError) return error;
  // A refused key or plan (src/auth): its code names the status and body in the one error table.
  if (error instanceof AuthError) return new ApiError(error.code, error.message);
  if (isOutage(error)) {
    metrics.storeErrors.inc({ kind: 'unavailable' });
    if (error instanceof MeterUnavailableError) metrics.outcome('unavailable');
    request.log.warn({ err: error }, 'store or meter unavailable');
    return new ApiError('service_unavailable', 'The service is temporarily unavailable; retry shortly.', {
      'retry-after': RETRY_AFTER_UNAVAILABLE_S,
    });
  }
  metrics.storeErrors.inc({ kind: 'unexpected' });
  request.log.error({ err: error }, 'unexpected error');
  return new ApiError('server_error', 'An unexpected error occurred.');
}

export function apiPipeline(deps: ApiPipelineDeps): ApiPipeline {
  const { config, meter, clock, queries, metrics, stats } = deps;
  const held = deps.heldPrincipals ?? null;
  let draining = false;
  const principals = new PrincipalCache(queries);
  const keyGate = new KeyGate();

  /**
   * Steps 1 to 4: method (405), key (401), allowed addresses (401), plan (403). With `mayUseHeld`, a principal this server holds is
   * used unchecked (the admission checks it), unless its row would be refused: that is read again first.
   */
  async function methodKeyAndPlan(request: FastifyRequest, mayUseHeld: boolean): Promise<Principal> {
    if (!ACCEPTED_METHODS.has(request.method)) {
      throw new ApiError('method_not_allowed', `Method ${request.method} is not allowed; use GET, HEAD or OPTIONS.`, {
        allow: ALLOW,
      });
    }
    const useHeld = mayUseHeld && held !== null && held.versions.trusted();
    request.heldAccessVersion = null;
    request.readAccessVersion = null;
    try {
      return await authenticate(request.raw.rawHeaders, clock.now(), {
        findKey: async (keyHash) => {
          const row = useHeld ? principals.held(keyHash) : undefined;
          if (row !== undefined && held !== null) {
            request.heldAccessVersion = row.accessVersion;
            request.dataVersion = null;
            request.notifiedDataVersion = held.versions.dataVersion;
            return row;
          }
          const found = await principals.find(keyHash);
          request.dataVersion = found.dataVersion;
          request.notifiedDataVersion = null;
          request.readAccessVersion = found.key?.accessVersion ?? null;
          return found.key;
        },
        keyPrefix: config.keyPrefix,
        planLimits: config.planLimits,
        // The request is where a key with allowed addresses reads the client's address (a getter), when it does.
      }, request);
    } catch (error) {
      // A refusal is never decided on a row that was not checked: a plan renewed since must not be refused.
      if (error instanceof RefusedKeyError && request.heldAccessVersion !== null) return methodKeyAndPlan(request, false);
      throw error;
    }
  }

  /** Steps 2 and 3 again, from PostgreSQL: the held principal's access version was not the account's. */
  async function reauthenticate(request: FastifyRequest): Promise<Principal> {
    // The held principal is no longer the key's: a refusal now must be recorded as the key's refusal (a
    // revoked key's attempt, say), not as a request of the principal that was held.
    request.principal = null;
    try {
      request.principal = await settleBy(request.deadline, methodKeyAndPlan(request, false), 'the key lookup');
    } catch (error) {
      if (error instanceof RefusedKeyError) request.refusedKey = { keyId: error.keyId, accountId: error.accountId, refusal: error.refusal };
      throw error;
    }
    return request.principal;
  }

  /**
   * One meter call for the principal at the clock's now, and the rate-limit headers that state its outcome;
   * STALE when the principal was held and its access version is no longer the account's (nothing counted).
   */
  async function admitNow(request: FastifyRequest, principal: Principal, quota: boolean, deadline: number) {
    const now = clock.now();
    const admitRequest = {
      accountId: principal.accountId,
      keyId: principal.keyId,
      limits: principal.limits,
      quota,
      now,
      deadline,
    };
    let admission: Admission;
    if (held !== null) {
      const checked = await held.meter.admitChecked(admitRequest, { held: request.heldAccessVersion, known: request.readAccessVersion });
      if (checked === STALE) return STALE;
      admission = checked;
    } else {
      admission = await meter.admit(admitRequest);
    }
    return { now, admission, headers: rateLimitHeaders(principal.limits, admission.burst, admission.quota?.used ?? null, now) };
  }

  const rateLimited = (limits: PlanLimits, resetInMs: number, headers: Record<string, string | number>) =>
    new ApiError('rate_limited', `Over the burst limit of ${limits.perMinute} requests per minute.`, {
      ...headers,
      'retry-after': ceilSeconds(resetInMs),
    });

  /**
   * Errors the router raises before any hook: a malformed URL (bad percent-encoding) or an over-long path
   * parameter. Such a URL cannot be routed, but the contract's order still holds: steps 1 to 4 decide first
   * (a POST is 405, a request without a key 401, whatever its URL), and a request past step 4 counts toward
   * the burst ("Metering") like any other; only then is it a 400. Never counted against the quota.
   */
  async function answerFrameworkError(error: Error, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    reply.header('x-request-id', request.id);
    reply.header('cache-control', 'private, no-store');
    let apiError: ApiError;
    request.deadline = Date.now() + REQUEST_DEADLINE_MS;
    try {
      const principal = await settleBy(request.deadline, methodKeyAndPlan(request, true), 'the key lookup');
      let admitted = await admitNow(request, principal, false, request.deadline);
      if (admitted === STALE) admitted = await admitNow(request, await reauthenticate(request), false, request.deadline);
      if (admitted === STALE) throw new Error('pipeline: an admission without an access check came back stale');
      const { admission, headers } = admitted;
      if (!admission.burst.allowed) throw rateLimited(principal.limits, admission.burst.resetInMs, headers);
      reply.headers(headers);
      const code = (error as { code?: unknown }).code;
      apiError = badRequest(
        code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? 'A path parameter is too long to be valid.'
          : /url/i.test(error.message)
            ? 'The URL is malformed.'
            : 'The request is malformed.',
      );
    } catch (thrown) {
      apiError = toApiError(thrown, request, metrics);
    }
    void reply
      .code(apiError.status)
      .headers(apiError.headers)
      .type('application/json; charset=utf-8')
      .send(errorBody(apiError));
  }

  /**
   * Waits for the request's turn among its key's requests (key-gate.ts); false when its client left while it
   * waited: then it goes no further (nothing is read or counted for it). A long line is not an outage: the
   * request's deadline starts again when its turn comes. A line stuck behind a store, or emptied by a store
   * outage, refuses its waiting requests (KeyLineRefusedError: 503), so 503 within 2 seconds still holds.
   * The place is given back when the response closes, however the request ends; a 503 of a store tells the
   * gate that the requests waiting behind it would fare no better.
   */
  async function keyGateTurn(gateKey: string, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const releaseOnClose = (release: Release) =>
      reply.raw.once('close', () => release(request.failure?.code === 'service_unavailable'));
    const entered = keyGate.tryEnter(gateKey);
    if (entered !== null) {
      releaseOnClose(entered);
      return true;
    }
    // Gone: the connection closed, or the client ended its side of it (as nginx counts a 499): an HTTP client
    // that still wants its answer does not half-close.
    let gone = false;
    const onGone = () => {
      gone = true;
    };
    const socket = request.raw.socket;
    reply.raw.once('close', onGone);
    socket.once('end', onGone);
    try {
      const release = await keyGate.wait(gateKey);
      if (gone) {
        release();
        return false;
      }
      request.deadline = Date.now() + REQUEST_DEADLINE_MS;
      releaseOnClose(release);
      return true;
    } finally {
      reply.raw.off('close', onGone);
      socket.off('end', onGone);
    }
  }

  function install(app: App): void {
    app.addHook('preClose', async () => {
      draining = true;
    });

    app.setValidatorCompiler(paramValidatorCompiler);
    // Every endpoint is a GET: a request body is never read, whatever its content type.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null));

    app.decorateRequest('principal', null);
    app.decorateRequest('quotaCharge', null);
    app.decorateRequest('usage', null);
    app.decorateRequest('burst', null);
    app.decorateRequest('deadline', 0);
    app.decorateRequest('refusedKey', null);
    app.decorateRequest('failure', null);
    app.decorateRequest('dataVersion', null);
    app.decorateRequest('notifiedDataVersion', null);
    app.decorateRequest('heldAccessVersion', null);
    app.decorateRequest('readAccessVersion', null);

    app.addHook('onRequest', async (request, reply) => {
      // One deadline for the whole request: the key lookup, the meter and the handler share it.
      request.deadline = Date.now() + REQUEST_DEADLINE_MS;
      reply.header('x-request-id', request.id);
      // Before the pipeline: nothing about this request is decided yet, and nothing is counted.
      if (draining) {
        reply.header('cache-control', 'private, no-store');
        throw new ApiError('service_unavailable', 'The server is shutting down; retry the request.', {
          'retry-after': RETRY_AFTER_UNAVAILABLE_S,
          connection: 'close',
        });
      }
      const hostProblem = hostHeaderProblem(request.raw);
      if (hostProblem !== null) {
        reply.header('cache-control', 'private, no-store');
        throw badRequest(hostProblem);
      }
      if (request.routeOptions.config.public === true) return;
      reply.header('cache-control', 'private, no-store');
      const gateKey = gateKeyOf(request.raw.rawHeaders);
      // 499, nginx's "client closed request", for the metrics and the log: nobody reads the answer.
      if (gateKey !== null && !(await keyGateTurn(gateKey, request, reply))) return reply.code(499).send();
      try {
        request.principal = await settleBy(request.deadline, methodKeyAndPlan(request, true), 'the key lookup');
      } catch (error) {
        if (error instanceof RefusedKeyError) request.refusedKey = { keyId: error.keyId, accountId: error.accountId, refusal: error.refusal };
        throw error;
      }
    });

    /** Steps 5 to 9: one meter call, then the first failing step decides. */
    async function admit(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      // Read once: Fastify builds request.routeOptions anew on every read.
      const routeConfig = request.routeOptions.config;
      if (routeConfig.public === true) return;
      let principal = request.principal;
      if (principal === null) throw new Error('pipeline: admit before authenticate');
      const meta = routeConfig.meta;
      /** Steps 5 to 7 for the principal; decided again when the held one turns out stale. */
      const refusalFor = (p: Principal): ApiError | null => {
        // The OPTIONS twin of a route carries `preflight` and no `meta`: test it before treating a missing
        // `meta` as "no such route", or OPTIONS on an existing route would answer 404 instead of 204.
        if (request.is404) return notFound();
        if (routeConfig.preflight) return null;
        if (meta === undefined) return notFound();
        if (meta.scope !== null && !p.scopes.has(meta.scope)) {
          return new ApiError('insufficient_scope', `This endpoint needs the '${meta.scope}' scope, which the key does not have.`);
        }
        if (request.validationError) return badRequest(request.validationError.message);
        return null;
      };
      let refusal = refusalFor(principal);
      let quota = refusal === null && !routeConfig.preflight && meta !== undefined && meta.quota;
      let admitted = await admitNow(request, principal, quota, request.deadline);
      if (admitted === STALE) {
        principal = await reauthenticate(request);
        refusal = refusalFor(principal);
        quota = refusal === null && !routeConfig.preflight && meta !== undefined && meta.quota;
        admitted = await admitNow(request, principal, quota, request.deadline);
        if (admitted === STALE) throw new Error('pipeline: an admission without an access check came back stale');
      }
      const { now, admission, headers } = admitted;
      if (!admission.burst.allowed) {
        metrics.outcome('rate_limited');
        throw rateLimited(principal.limits, admission.burst.resetInMs, headers);
      }
      metrics.outcome('admitted');
      reply.headers(headers);
      if (refusal !== null) throw refusal;
      if (admission.quota !== null && !admission.quota.allowed) {
        metrics.outcome('quota_exceeded');
        throw new ApiError('quota_exceeded', `The monthly quota of ${principal.limits.monthly} requests is used up.`, {
          ...headers,
          'retry-after': ceilSeconds(monthBounds(now).reset - now),
        });
      }
      if (admission.quota !== null) request.usage = { period: admission.quota.period, used: admission.quota.used };
      request.burst = { state: admission.burst, now };
      if (quota) metrics.outcome('counted');
      if (quota && admission.quota !== null) request.quotaCharge = { period: admission.quota.period, day: dayOf(now) };
    }

    app.addHook('preHandler', admit);
    app.setNotFoundHandler(async () => {
      // Reached only when preHandler hooks did not answer (they throw not_found for every 404 route).
      throw notFound();
    });

    /**
     * Gives back the quota count of this request (a 5xx, or a 304 Not Modified) and restates the rate-limit
     * headers to match. The burst count stays: the request was still made.
     */
    async function giveBack(request: FastifyRequest, reply: FastifyReply, outcome: 'given_back' | 'not_modified'): Promise<void> {
      if (request.quotaCharge === null || request.principal === null) return;
      const { period, day } = request.quotaCharge;
      request.quotaCharge = null;
      const { accountId, keyId, limits } = request.principal;
      // The answer waits for the give-back a moment at most; past that it is retried in the background.
      const waitUntil = Math.max(request.deadline, Date.now()) + GIVE_BACK_WAIT_MS;
      if (!(await giveBackCounted(meter, { accountId, keyId, period, day, token: request.id }, waitUntil, request.log))) return;
      metrics.outcome(outcome);
      if (request.usage !== null && request.burst !== null) {
        request.usage = { ...request.usage, used: request.usage.used - 1 };
        reply.headers(rateLimitHeaders(limits, request.burst.state, request.usage.used, request.burst.now));
      }
    }

    app.setErrorHandler(async (error: unknown, request, reply) => {
      const apiError = toApiError(error, request, metrics);
      request.failure = { code: apiError.code, message: apiError.message };
      if (apiError.status >= 500) await giveBack(request, reply, 'given_back');
      reply.code(apiError.status).headers(apiError.headers).type('application/json; charset=utf-8');
      return errorBody(apiError);
    });

    /**
     * Every 200 carries a strong ETag (a route that streams sets its own before sending); a request whose
     * If-None-Match names it is answered 304 with no body, and its quota count is given back.
     */
    app.addHook('onSend', async (request, reply, payload) => {
      if (reply.statusCode !== 200 || request.routeOptions.config.public === true) return payload;
      let etag = reply.getHeader('etag');
      if (etag === undefined) {
        if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
        etag = strongEtag(payload);
        reply.header('etag', etag);
      }
      if (!ifNoneMatchMatches(request.headers['if-none-match'], String(etag))) return payload;
      await giveBack(request, reply, 'not_modified');
      reply.code(304).removeHeader('content-type').removeHeader('content-length').removeHeader('content-disposition');
      // Fastify's HEAD twin ends with an onSend handler of its own that reads the payload: it takes an empty
      // stream (sending nothing, announcing no length), where null would make it throw.
      return request.method === 'HEAD' ? Readable.from([]) : null;
    });

    app.addHook('onResponse', async (request, reply) => {
      const { config: routeConfig, url: routeUrl } = request.routeOptions;
      if (stats !== null && routeConfig.public !== true) {
        // An API route (its HEAD and OPTIONS twins included) by its path under the prefix; null for none.
        const endpoint = (routeConfig.meta !== undefined || routeConfig.preflight === true) && routeUrl !== undefined ? routeUrl.slice(API_PREFIX.length) : null;
        const record = usageRecord(request, reply.statusCode, clock.now(), reply.elapsedTime, endpoint);
        if (record !== null) stats.record(record);
      }
      const route = routeUrl ?? 'unknown';
      metrics.countRequest(route, request.method, reply.statusCode);
      metrics.duration.observe({ route }, reply.elapsedTime / 1000);
      // The line's fields (a URL scanned for keys among them) are built only when it is written.
      if (!logsRequests(request.log.level)) return;
      request.log.info(
        {
          method: request.method,
          url: redactSecrets(request.url),
          route: routeUrl ?? null,
          status: reply.statusCode,
          durationMs: Math.round(reply.elapsedTime * 100) / 100,
          accountId: request.principal?.accountId ?? null,
          keyId: request.principal?.keyId ?? null,
        },
        'request',
      );
    });
  }

  return {
    frameworkErrors: (error, request, reply) => {
      answerFrameworkError(error, request, reply).catch((err: unknown) => request.log.error({ err }, 'could not answer a framework error'));
    },
    install,
    dropHeldPrincipals: () => principals.clear(),
  };
}
