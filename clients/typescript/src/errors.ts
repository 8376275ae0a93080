import { noRedaction, type Redact } from './redact.js';
import type { ShelfErrorCode } from './types.js';

/**
 * `(string & {})` keeps editor completion for the documented codes while still admitting a code a newer
 * server may send, or `unexpected_response` when the body is not the API's error shape (a proxy's HTML
 * page, for instance).
 */
export type ShelfApiErrorCode = ShelfErrorCode | 'unexpected_response' | (string & {});

export interface ShelfApiErrorInit {
  status: number;
  code: ShelfApiErrorCode;
  message: string;
  requestId: string | null;
  retryAfterSeconds: number | null;
  url: string;
}

/**
 * Everything a call of the client throws about the API: `ShelfApiError` (an answer other than 2xx),
 * `ShelfConnectionError` (no answer at all), `ShelfTimeoutError` (no whole answer within `timeout`).
 */
export class ShelfError extends Error {
  override readonly name: string = 'ShelfError';
}

/**
 * No answer at all: the connection was refused or broke (a wrong `baseUrl`, the server not running, a
 * network fault). The message says what happened and where.
 */
export class ShelfConnectionError extends ShelfError {
  override readonly name = 'ShelfConnectionError';
  constructor(
    message: string,
    /** The URL requested. */
    readonly url: string,
  ) {
    super(message);
  }
}

/** No whole answer within the call's `timeout`: connecting, the body, retries and their waits included. */
export class ShelfTimeoutError extends ShelfError {
  override readonly name = 'ShelfTimeoutError';
  constructor(
    /** The URL requested. */
    readonly url: string,
    /** The client's `timeout`, in seconds. */
    readonly timeoutSeconds: number,
  ) {
    super(`GET ${url}: no whole answer within timeout: ${timeoutSeconds} s`);
  }
}

/** Every non-2xx answer (except a `304` to the caller's own `If-None-Match`) becomes one of these. */
export class ShelfApiError extends ShelfError {
  override readonly name = 'ShelfApiError';
  /** HTTP status, e.g. 404. */
  readonly status: number;
  /** The body's `error` field, e.g. `not_found`, `quota_exceeded`. */
  readonly code: ShelfApiErrorCode;
  /** The `X-Request-Id` of the answer: quote it when asking for support. */
  readonly requestId: string | null;
  /** `Retry-After` in seconds when the answer had one (every 429 and 503 does). */
  readonly retryAfterSeconds: number | null;
  /** The URL that was requested (the key is never part of it). */
  readonly url: string;

  constructor(init: ShelfApiErrorInit) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.url = init.url;
  }

  /**
   * Reads the response body (it must not have been read yet). Every text taken from the answer goes
   * through `redact` (the client's removes its key): a proxy may echo the request back.
   */
  static async fromResponse(response: Response, url: string, redact: Redact = noRedaction): Promise<ShelfApiError> {
    const text = await response.text().catch(() => '');
    const body = parseErrorBody(text);
    const requestId = response.headers.get('x-request-id');
    return new ShelfApiError({
      status: response.status,
      code: redact(body?.error ?? 'unexpected_response'),
      message: redact(body?.message ?? `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`),
      requestId: requestId === null ? null : redact(requestId),
      retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after')),
      url: redact(url),
    });
  }
}

/** The API's error shape, `{ "error": "<code>", "message": "<text>" }`, or null for anything else. */
export function parseErrorBody(text: string): { error: string; message: string } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const { error, message } = parsed as Record<string, unknown>;
  return typeof error === 'string' && typeof message === 'string' ? { error, message } : null;
}

/**
 * `Retry-After` values are capped here (about 31,700 years): far past any wait the client makes, and a
 * finite number (`Number('9'.repeat(400))` is Infinity, and `setTimeout` turns any delay past 2^31 ms
 * into 1 ms: a "wait for ever" became "ask again at once").
 */
export const RETRY_AFTER_CEILING = 1e12;

/**
 * `Retry-After` in seconds: the API sends whole seconds, but HTTP also allows a date, which a proxy in
 * front of it might send instead. Always null or a whole number in 0..RETRY_AFTER_CEILING.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed), RETRY_AFTER_CEILING);
  // Only what looks like an HTTP date (a day or month name, a time): Date.parse reads "-5" as a year.
  if (!/^[A-Za-z]{3}.*\d{1,2}:\d{2}:\d{2}/.test(trimmed)) return null;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.min(RETRY_AFTER_CEILING, Math.max(0, Math.ceil((date - now) / 1000)));
}
