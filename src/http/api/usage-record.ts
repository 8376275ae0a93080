/**
 * What the owner's per-key statistics keep of an answered API request (src/usage-stats/usage-stats.ts): built
 * in the onResponse hook from what the pipeline left on the request. Requests that reached no key (no key,
 * a malformed or unknown one) belong to nobody and are not kept. Every request of a key also carries its
 * call (method, URL, status, server time, address, request id, endpoint) for the request log and the usage
 * buckets; the URL is scanned for keys later, only for the lines the log keeps.
 */
import type { FastifyRequest } from 'fastify';
import { redactKeys } from '../../keys/api-key.js';
import { isoOf } from '../../metering/periods.js';
import { outcomeOf, type Rejection, type RequestRecord } from '../../usage-stats/usage-stats.js';

/** A path longer than this is kept cut short: enough to recognise a script's call. */
const PATH_KEPT = 300;

/**
 * The record of an answered request; `durationMs` is the server time (Fastify's elapsed time), `endpoint` the
 * API route matched, without the /developer/v1 prefix, or null for none.
 */
export function usageRecord(request: FastifyRequest, status: number, now: number, durationMs: number, endpoint: string | null): RequestRecord | null {
  const principal = request.principal;
  const key = principal ?? request.refusedKey;
  if (key === null) return null;
  const error = request.failure?.code ?? null;
  return {
    call: { method: request.method, url: request.url, status, error, durationMs, address: request.ip, requestId: request.id, endpoint },
    accountId: key.accountId,
    keyId: key.keyId,
    at: now,
    outcome: outcomeOf({ status, error, counted: request.quotaCharge !== null, keyRefused: principal === null ? (request.refusedKey?.refusal ?? null) : null }),
    used: principal !== null,
    address: principal !== null ? request.clientAddress : null,
    rejection: status >= 400 ? rejection(request, status, error, now) : null,
  };
}

/** What is kept of a rejected request; built only for those, since it scans the URL for keys. */
function rejection(request: FastifyRequest, status: number, error: string | null, now: number): Rejection {
  const query = request.url.indexOf('?');
  // However the key is written in the URL, percent-encoded (once or twice) included: the owner's screen shows
  // this path, and a key is never stored where it can be read back.
  const path = redactKeys(query === -1 ? request.url : request.url.slice(0, query));
  return {
    at: isoOf(now),
    method: request.method,
    path: path.length > PATH_KEPT ? `${path.slice(0, PATH_KEPT)}…` : path,
    status,
    error: error ?? String(status),
    // Messages can quote what the client sent (a parameter's name): never a key.
    message: redactKeys(request.failure?.message ?? ''),
    requestId: request.id,
  };
}
