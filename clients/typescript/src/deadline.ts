/**
 * `timeout` bounds a whole call, not each read: a server (or proxy) sending a byte a second never lets a
 * per-read timeout fire. Each call gets a Deadline whose AbortSignal rides on its Request, so that fetch,
 * the body's reads and the waits between retries all end when it fires, with a ShelfTimeoutError as the
 * abort's reason (fetch and the body's reads reject with that very reason).
 */
import type { Middleware } from 'openapi-fetch';
import { ShelfConnectionError, ShelfError, ShelfTimeoutError } from './errors.js';
import type { Redact } from './redact.js';

/** The longest `setTimeout` Node keeps (2^31 - 1 ms); longer delays become 1 ms. */
export const MAX_TIMEOUT_SECONDS = 2_147_483;

export class Deadline {
  readonly #controller = new AbortController();
  #leftMs: number;
  #since = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly url: string,
    readonly timeoutSeconds: number,
  ) {
    this.#leftMs = timeoutSeconds * 1000;
    this.resume();
  }

  /** Aborted, with a ShelfTimeoutError as its reason, when the call's time is up. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get expired(): boolean {
    return this.#controller.signal.aborted;
  }

  leftMs(): number {
    return this.#timer === undefined ? this.#leftMs : this.#leftMs - (performance.now() - this.#since);
  }

  /** Stops the clock: the call is over, or the caller holds a chunk of the export (its time is its own). */
  pause(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#leftMs -= performance.now() - this.#since;
  }

  resume(): void {
    if (this.#timer !== undefined || this.expired) return;
    this.#since = performance.now();
    this.#timer = setTimeout(() => this.#controller.abort(new ShelfTimeoutError(this.url, this.timeoutSeconds)), Math.max(0, this.#leftMs));
    // A deadline alone never keeps the process alive.
    this.#timer.unref();
  }
}

const byRequest = new WeakMap<Request, Deadline>();
const byResponse = new WeakMap<Response, Deadline>();
const signalChains = new WeakMap<Request, readonly [Request, AbortSignal]>();

/** The deadline of the call that sent this request (the request as the middleware after this one see it). */
export function requestDeadline(request: Request): Deadline | undefined {
  return byRequest.get(request);
}

/** The deadline of the call that got this (final, 2xx) answer: its body is read under the same clock. */
export function responseDeadline(response: Response): Deadline | undefined {
  return byResponse.get(response);
}

function networkDetail(error: unknown): string {
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  const parts = [error instanceof Error ? error.message : String(error)];
  if (typeof cause?.code === 'string') parts.push(cause.code);
  else if (typeof cause?.message === 'string') parts.push(cause.message);
  return parts.join(': ');
}

/**
 * Starts each call's deadline, and turns a fetch that got no answer into a ShelfConnectionError (fetch's
 * own "TypeError: fetch failed" says neither what nor where). Register it before the retry middleware,
 * so that it sees the final answer.
 */
export function deadlineMiddleware(options: { timeoutSeconds: number; baseUrl: string; redact: Redact }): Middleware {
  const { timeoutSeconds, baseUrl, redact } = options;
  return {
    onRequest({ request }) {
      const deadline = new Deadline(redact(request.url), timeoutSeconds);
      const either = AbortSignal.any([request.signal, deadline.signal]);
      const bounded = new Request(request, { signal: either });
      byRequest.set(bounded, deadline);
      // The caller's abort reaches `bounded.signal` through links the runtime holds only weakly (a Request
      // follows its init's signal by a WeakRef to its own controller, which the Request holds; AbortSignal.any
      // holds its sources weakly): once openapi-fetch drops `request`, a garbage collection cut the chain and
      // an abort during a call or its wait before a retry went unheard. Held here for as long as `bounded`.
      signalChains.set(bounded, [request, either]);
      return bounded;
    },
    onResponse({ request, response }) {
      const deadline = byRequest.get(request);
      if (deadline) byResponse.set(response, deadline);
      return undefined;
    },
    onError({ request, error }) {
      byRequest.get(request)?.pause();
      // Ours (the deadline's reason), or the caller's own abort: as they are.
      if (error instanceof ShelfError || request.signal.aborted) return undefined;
      if (!(error instanceof TypeError)) return undefined;
      const url = redact(request.url);
      return new ShelfConnectionError(redact(`GET ${url}: no answer from the server (${networkDetail(error)}); is it running at ${baseUrl}?`), url);
    },
  };
}

/** An error whose text may come from the server (a CSV record quoted in it): the key removed, stack too. */
export function scrubbed(error: unknown, redact: Redact): unknown {
  if (error instanceof Error && !(error instanceof ShelfError)) {
    error.message = redact(error.message);
    if (error.stack !== undefined) error.stack = redact(error.stack);
  }
  return error;
}

/**
 * The next chunk, unless `signal` aborts first. The deadline's abort does not always reach the body: on
 * Node 20, after earlier calls on the same origin timed out, an export's body went on yielding a byte a
 * second past its deadline, then ended as if complete.
 */
function readBefore<T>(reader: ReadableStreamDefaultReader<T>, signal: AbortSignal): ReturnType<ReadableStreamDefaultReader<T>['read']> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    reader.read().then(
      (result) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) reject(signal.reason as Error);
        else resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}

/**
 * The export's bytes under the call's deadline, counting only the time spent waiting on the server: the
 * clock runs while a read is pending (highWaterMark 0: nothing is read ahead of the caller).
 */
export function boundedStream(stream: ReadableStream<Uint8Array>, deadline: Deadline | undefined): ReadableStream<Uint8Array> {
  if (deadline === undefined) return stream;
  deadline.pause();
  const reader = stream.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        deadline.resume();
        try {
          const { done, value } = await readBefore(reader, deadline.signal);
          deadline.pause();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (error) {
          deadline.pause();
          controller.error(error);
          reader.cancel(error).catch(() => undefined);
        }
      },
      cancel(reason) {
        deadline.pause();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
