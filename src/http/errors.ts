/**
 * The error codes of the contract, their statuses and default messages: one table that the error handler
 * and the OpenAPI document both read, so the two cannot drift apart. Errors raised below the surfaces
 * (src/errors: a refused key or plan) carry a code from this table and no status: the pipeline turns them
 * into an ApiError, which takes its status from here.
 */
import { redactKeys } from '../keys/api-key.js';
export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  insufficient_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  rate_limited: 429,
  quota_exceeded: 429,
  headers_too_large: 431,
  server_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const ERROR_DESCRIPTION: Record<ErrorCode, string> = {
  bad_request:
    'An invalid query or path parameter: unknown, repeated, empty, out of range, or holding a control character (in search, white space is allowed and separates terms) or bytes that are not UTF-8.',
  unauthorized:
    'Missing, malformed, unknown, revoked or expired key, another auth scheme, both key headers, or one given twice; or a key used from an address it is not allowed ("This key may not be used from 203.0.113.7.").',
  forbidden: "Developer API access is not active on the key's account (no plan, or a lapsed one).",
  insufficient_scope: 'The key is valid but lacks the scope this endpoint needs.',
  not_found: 'No such item, or no such route.',
  method_not_allowed: 'Only GET, HEAD and OPTIONS are accepted.',
  request_timeout: 'The request line and headers did not all arrive within the time allowed.',
  headers_too_large: 'The request line and headers exceed 16 KB.',
  rate_limited: 'Over the per-minute burst limit; retry after Retry-After seconds.',
  quota_exceeded: 'The monthly quota is used up; it resets at X-RateLimit-Reset.',
  server_error: 'An unexpected error; the request was not counted.',
  service_unavailable: 'Usage metering or the data store is temporarily unreachable or too busy (or one key has sent more than its server answers within 10 seconds), or the server is shutting down; retry after Retry-After seconds.',
};

/**
 * The contract's answer to a request, thrown through the hooks: an expected outcome, not a fault, so it
 * carries no stack. V8 takes 8-12 µs to capture one at a hook's depth (measured apart), and a client over its
 * limits or calling with a bad key can ask for thousands of these a second.
 */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string | number> = {},
  ) {
    const stackLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackLimit;
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
  }
}

export const badRequest = (message: string) => new ApiError('bad_request', message);

/** How much of a client's text (a value, a parameter's name, a method) a message quotes back: enough to recognise it. */
const ECHOED = 16;

/**
 * A client's text as a message quotes it: its first 16 characters, then `…`. A long value is never shown
 * back whole, whatever it holds (a key's secret pasted into the wrong place: issue 40).
 */
export function echoed(text: string): string {
  if (text.length <= ECHOED) return text;
  // Characters, not UTF-16 units (an emoji is not cut in half); 16 of them fit in the first 32 units.
  const head = [...text.slice(0, 2 * ECHOED)].slice(0, ECHOED).join('');
  return head.length < text.length ? `${head}…` : text;
}
export const notFound = (message = 'No such route.') => new ApiError('not_found', message);

/**
 * The contract's error body. A message may quote what the client sent (a parameter's name or value), so
 * any key in it is cut out, however it was encoded: a key pasted into the wrong place is never echoed.
 */
export function errorBody(error: ApiError): { error: ErrorCode; message: string } {
  return { error: error.code, message: redactKeys(error.message) };
}
