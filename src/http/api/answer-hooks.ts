/**
 * How the pipeline's answers leave: the error handler (the contract's body; a 5xx gives back its quota
 * count), the strong ETag of every 200 and the 304 of a matching If-None-Match (its count given back too),
 * and once the response is sent, the owner's per-key statistics, the metrics and the one log line.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../../clock.js';
import { AuthError } from '../../errors/auth-error.js';
import { MeterUnavailableError, type Meter } from '../../metering/meter.js';
import { giveBackCounted } from '../../metering/give-back.js';
import type { UsageStats } from '../../usage-stats/usage-stats.js';
import type { Metrics } from '../../observability/metrics.js';
import type { App } from '../app-types.js';
import { ApiError, errorBody } from '../errors.js';
import { redactSecrets } from '../log-redaction.js';
import { isOutage, isStoreDown, RETRY_AFTER_UNAVAILABLE_S } from '../store-unavailable.js';
import { ifNoneMatchMatches, strongEtag } from './conditional.js';
import { rateLimitHeaders } from './rate-limit-headers.js';
import { API_PREFIX } from './api-prefix.js';
import { usageRecord } from './usage-record.js';

/** Whether a logger at this level writes the per-request line (info); false for Fastify's silent logger. */
const logsRequests = (level: string | undefined): boolean => level === 'info' || level === 'debug' || level === 'trace';

/** A give-back (refund) may hold a 5xx past the request's deadline this long at most, then goes on alone. */
const GIVE_BACK_WAIT_MS = 200;

/** The contract's error for anything thrown while answering: 503 for an unreachable store or meter. */
export function toApiError(error: unknown, request: FastifyRequest, metrics: Metrics): ApiError {
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

/** What the answers read and where they are recorded. */
export interface AnswerHooksDeps {
  meter: Meter;
  metrics: Metrics;
  clock: Clock;
  /** The owners' per-key statistics; null when requests are not recorded for them. */
  stats: UsageStats | null;
}

/** Adds the error handler, the onSend (ETag, 304) and onResponse (statistics, metrics, log) hooks. */
export function installAnswerHooks(app: App, deps: AnswerHooksDeps): void {
  const { meter, metrics, clock, stats } = deps;

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
    request.failure = { code: apiError.code, message: apiError.message, storeDown: apiError.code === 'service_unavailable' && isStoreDown(error) };
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
