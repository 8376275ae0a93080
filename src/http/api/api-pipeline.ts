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
 * On SQLite and on PostgreSQL + Redis a key's principal held by this server is used at step 2 without reading
 * the database, and the meter's admission checks it: it compares the held principal's access version with the
 * account's (SQLite: in the admission's transaction; Redis: in its script) and counts nothing when they differ
 * ("stale"); the pipeline then reads the key from the database, decides steps 2 and 3 again (a revoked key is
 * 401 then) and admits again, without the check. So a request whose principal is current makes one round trip,
 * to Redis, or one transaction on SQLite (docs/performance.md). A held row
 * that would be refused is never trusted either: it is read again first.
 *
 * The hooks sit on the root instance, not in an encapsulated plugin under /developer/v1: a URL that matches
 * no route (anywhere on the port), a router error (framework errors) and a request while the server drains
 * all go through steps 1 to 5 before they are answered. The other surfaces (the reference page, the
 * settings screen) mark their routes `public`, and the pipeline steps aside for them.
 *
 * This file holds the order; the steps live beside it: principal-admission.ts (steps 1 to 4 and the meter
 * call, held principals), answer-hooks.ts (the error handler, ETag and 304, statistics, metrics, the log
 * line), request-decorations.ts (what each request carries through the steps).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RefusedKeyError, type Principal } from '../../auth/authenticate.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { REQUEST_DEADLINE_MS, settleBy } from '../../deadline.js';
import type { PlanLimits } from '../../domain/scopes.js';
import type { Meter } from '../../metering/meter.js';
import { STALE } from '../../metering/meter.js';
import { ceilSeconds, dayOf, monthBounds } from '../../metering/periods.js';
import type { UsageStats } from '../../usage-stats/usage-stats.js';
import type { Metrics } from '../../observability/metrics.js';
import type { HotQueries } from '../../store/hot-queries.js';
import type { App } from '../app-types.js';
import { hostHeaderProblem } from '../connection-errors.js';
import { ApiError, badRequest, errorBody, notFound } from '../errors.js';
import { installAnswerHooks, toApiError } from './answer-hooks.js';
import { paramValidatorCompiler } from './param-validator.js';
import { principalAdmission, type HeldPrincipalsDeps } from './principal-admission.js';
import { decorateApiRequests } from './request-decorations.js';
import { RETRY_AFTER_UNAVAILABLE_S } from '../store-unavailable.js';
import { gateKeyOf, KeyGate, type Ending, type Release } from './key-gate.js';

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
   * SQLite and PostgreSQL + Redis: the meter that checks held principals' access versions, and whether the server may
   * use held principals now (its LISTEN connection, version-listener.ts); null elsewhere.
   */
  heldPrincipals?: HeldPrincipalsDeps | null;
}

export interface ApiPipeline {
  /** Fastify's `frameworkErrors` option: the router's own errors, answered after steps 1 to 5. */
  frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => void;
  /** Adds the request decorations, hooks, not-found and error handlers to the root instance. */
  install(app: App): void;
  /** Drops every principal this server holds (its LISTEN connection listens again: see version-listener.ts). */
  dropHeldPrincipals(): void;
}

export function apiPipeline(deps: ApiPipelineDeps): ApiPipeline {
  const { config, meter, clock, queries, metrics, stats } = deps;
  const held = deps.heldPrincipals ?? null;
  let draining = false;
  const { methodKeyAndPlan, reauthenticate, admitNow, dropHeldPrincipals } = principalAdmission({ config, meter, clock, queries, held });
  const keyGate = new KeyGate();

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
   * request's deadline starts again when its turn comes (unless the place came from a request that ran out
   * of time: see key-gate.ts). A line stuck behind a store, or emptied by a store outage, refuses its
   * waiting requests (KeyLineRefusedError: 503), so 503 within 2 seconds still holds.
   * The place is given back when the response closes, however the request ends; a 503 a store caused tells
   * the gate that the requests waiting behind it would fare no better, one that only ran out of time does not.
   */
  async function keyGateTurn(gateKey: string, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const endingOf = (failure: FastifyRequest['failure']): Ending =>
      failure?.code !== 'service_unavailable' ? 'answered' : failure.storeDown === true ? 'outage' : 'late';
    const releaseOnClose = (release: Release) => reply.raw.once('close', () => release(endingOf(request.failure)));
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
      const { release, deadline } = await keyGate.wait(gateKey);
      if (gone) {
        release('unused');
        return false;
      }
      request.deadline = deadline;
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

    decorateApiRequests(app);

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

    installAnswerHooks(app, { meter, metrics, clock, stats });
  }

  return {
    frameworkErrors: (error, request, reply) => {
      answerFrameworkError(error, request, reply).catch((err: unknown) => request.log.error({ err }, 'could not answer a framework error'));
    },
    install,
    dropHeldPrincipals,
  };
}
