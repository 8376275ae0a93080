import type { Middleware } from 'openapi-fetch';
import { requestDeadline } from './deadline.js';
import { parseErrorBody, parseRetryAfter } from './errors.js';
import { noRedaction, type Redact } from './redact.js';

/** What `onRetry` is told before the client waits and asks again. */
export interface RetryEvent {
  /** The attempt that failed, counting from 1. */
  attempt: number;
  /** Retries allowed in all (`maxRetries`). */
  maxRetries: number;
  status: number;
  /** `rate_limited` or `service_unavailable` (or `unexpected_response` for a 503 without the API's body). */
  code: string;
  /** How long the client waits before the next attempt. */
  waitSeconds: number;
  requestId: string | null;
  url: string;
}

export interface RetryOptions {
  maxRetries: number;
  /** The longest `Retry-After` waited out, in seconds; a longer one ends the retries at once. */
  maxRetryWait: number;
  onRetry?: ((event: RetryEvent) => void) | undefined;
  /** Applied to every text of an event (the client's removes its key). */
  redact?: Redact;
}

/**
 * Used when a 503 or a `rate_limited` 429 carries no usable `Retry-After` (the API always sends one; a
 * proxy might not): short enough not to stall a script, long enough not to hammer a struggling server.
 */
const FALLBACK_WAIT_SECONDS = 1;

/**
 * Only these two answers are worth asking again: both say "the same request will work later" and say
 * when. `quota_exceeded` also says when, but that is the start of next month; every other 4xx is the
 * caller's mistake and would fail identically.
 */
async function retryVerdict(response: Response): Promise<{ code: string; waitSeconds: number } | null> {
  if (response.status !== 429 && response.status !== 503) return null;
  // A clone, so that the answer handed on when we stop retrying still has its body to read.
  const body = parseErrorBody(await response.clone().text().catch(() => ''));
  if (response.status === 429 && body?.error !== 'rate_limited') return null;
  const waitSeconds = parseRetryAfter(response.headers.get('retry-after')) ?? FALLBACK_WAIT_SECONDS;
  return { code: body?.error ?? 'unexpected_response', waitSeconds };
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Asks again, at most `maxRetries` times, after a `429 rate_limited` or a `503`, waiting what
 * `Retry-After` says each time. It works in `onResponse` so that the other middleware (the error one)
 * only ever sees the final answer. The API is read-only (GET and HEAD), so asking again is always safe.
 * A wait longer than `maxRetryWait`, or than what is left of the call's timeout, is not made: the answer
 * is handed on at once (thrown with its `retryAfterSeconds`), since waiting would not bring one in time.
 */
export function retryMiddleware(options: RetryOptions): Middleware {
  const redact = options.redact ?? noRedaction;
  return {
    async onResponse({ request, response, options: fetchOptions }) {
      let current = response;
      const deadline = requestDeadline(request);
      for (let attempt = 1; attempt <= options.maxRetries; attempt++) {
        const verdict = await retryVerdict(current);
        if (verdict === null) return current;
        if (verdict.waitSeconds > options.maxRetryWait) return current;
        if (deadline !== undefined && verdict.waitSeconds * 1000 >= deadline.leftMs()) return current;
        const requestId = current.headers.get('x-request-id');
        options.onRetry?.({
          attempt,
          maxRetries: options.maxRetries,
          status: current.status,
          code: redact(verdict.code),
          waitSeconds: verdict.waitSeconds,
          requestId: requestId === null ? null : redact(requestId),
          url: redact(request.url),
        });
        // Release the connection now rather than when the garbage collector gets to the body.
        await current.body?.cancel().catch(() => undefined);
        await sleep(verdict.waitSeconds * 1000, request.signal);
        current = await fetchOptions.fetch(request.clone());
      }
      return current;
    },
  };
}
