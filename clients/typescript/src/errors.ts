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

/** Every non-2xx answer (except a `304` to the caller's own `If-None-Match`) becomes one of these. */
export class ShelfApiError extends Error {
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

  /** Reads the response body (it must not have been read yet). */
  static async fromResponse(response: Response, url: string): Promise<ShelfApiError> {
    const text = await response.text().catch(() => '');
    const body = parseErrorBody(text);
    return new ShelfApiError({
      status: response.status,
      code: body?.error ?? 'unexpected_response',
      message: body?.message ?? `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`,
      requestId: response.headers.get('x-request-id'),
      retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after')),
      url,
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
 * `Retry-After` in seconds: the API sends whole seconds, but HTTP also allows a date, which a proxy in
 * front of it might send instead.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}
