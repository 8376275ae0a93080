import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { priceRows } from './csv.js';
import { boundedStream, deadlineMiddleware, MAX_TIMEOUT_SECONDS, requestDeadline, responseDeadline, scrubbed } from './deadline.js';
import { ShelfApiError } from './errors.js';
import { redactor, type Redact } from './redact.js';
import { retryMiddleware, type RetryEvent } from './retry.js';
import {
  API_PREFIX,
  type ItemOf,
  type JsonPath,
  type ListPath,
  type PathParamsOf,
  type PriceRow,
  type QueryOf,
  type ResponseOf,
  type ShelfPaths,
} from './types.js';

/** A 2xx without the JSON body the API always sends with it (a proxy in the way, say). */
function withoutBody(response: Response, redact: Redact): ShelfApiError {
  const requestId = response.headers.get('x-request-id');
  return new ShelfApiError({
    status: response.status,
    code: 'unexpected_response',
    message: `HTTP ${response.status} without the JSON body the API sends`,
    requestId: requestId === null ? null : redact(requestId),
    retryAfterSeconds: null,
    url: redact(response.url),
  });
}

/**
 * Seconds for a whole call: connecting, the answer and its body, every retry and wait between them. Room
 * for one whole burst wait (a `rate_limited` Retry-After is at most 60 s) and the requests around it: a
 * shorter default would turn the retries of the burst limit off. Lower it to give up sooner on a silent server.
 */
const DEFAULT_TIMEOUT_SECONDS = 120;
/**
 * The longest `Retry-After` waited out (a burst wait is at most 60 s); a longer one is thrown at once
 * with its `retryAfterSeconds`: a proxy's "99999999" or a date in the year 9999 must not hang a script.
 */
const DEFAULT_MAX_RETRY_WAIT_SECONDS = 60;

function seconds(name: string, value: number, allowZero: boolean): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (value === 0 && !allowZero)) {
    throw new TypeError(`createShelfClient: ${name} must be a finite number of seconds ${allowZero ? '>= 0' : '> 0'}`);
  }
  return value;
}

export interface ShelfClientOptions {
  /** The server, e.g. `http://127.0.0.1:8080`; a trailing `/developer/v1` is accepted too. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` on every request. */
  apiKey: string;
  /** Retries of a `429 rate_limited` or a `503`, each after `Retry-After` (default 3; 0 turns retrying off). */
  maxRetries?: number;
  /**
   * Seconds a whole call may take (default 120): connecting, the answer and its body, retries and the
   * waits between them; past it the call throws a `ShelfTimeoutError`. For the CSV export, the time your
   * code spends between reads of the stream is not counted.
   */
  timeout?: number;
  /** The longest `Retry-After` waited out, in seconds (default 60); a longer one is thrown at once. */
  maxRetryWait?: number;
  /** A `fetch` to use instead of the global one (to log, to add a proxy agent, in tests to count calls). */
  fetch?: (request: Request) => Promise<Response>;
  /** Told before every wait, e.g. to print "rate limited, waiting 42 s". */
  onRetry?: (event: RetryEvent) => void;
}

export interface RequestOptions {
  /** Aborts the request, including a wait before a retry. */
  signal?: AbortSignal;
}

/** `path` is required exactly when the path has parameters (`/catalogue/{id}`), `query` when it takes one. */
export type GetOptions<P extends JsonPath> = ([PathParamsOf<P>] extends [never] ? { path?: undefined } : { path: PathParamsOf<P> }) &
  ([QueryOf<P>] extends [never] ? { query?: undefined } : { query?: QueryOf<P> }) &
  RequestOptions;

type GetArgs<P extends JsonPath> = [PathParamsOf<P>] extends [never] ? [options?: GetOptions<P>] : [options: GetOptions<P>];

export interface ShelfClient {
  /** `<server>/developer/v1`, what every path is relative to. */
  readonly baseUrl: string;
  /**
   * The underlying openapi-fetch client, with the key, retries and errors already wired in: use it when
   * you need the `Response` itself (headers such as `X-RateLimit-Remaining` or `ETag`). A `304` to your
   * own `If-None-Match` comes back as `{ response }` with `response.status === 304`, not as an error.
   */
  readonly openapiFetch: Client<ShelfPaths>;
  /** One JSON endpoint; resolves to its `200` body, typed from openapi.json, or throws `ShelfApiError`. */
  get<P extends JsonPath>(path: P, ...options: GetArgs<P>): Promise<ResponseOf<P>>;
  /** Every page of a list endpoint, from `query.offset` (default 0), `query.limit` rows at a time. */
  pages<P extends ListPath>(path: P, query?: QueryOf<P>, options?: RequestOptions): AsyncGenerator<ResponseOf<P>, void, undefined>;
  /** Every item of every page of a list endpoint, in the API's order. */
  paginate<P extends ListPath>(path: P, query?: QueryOf<P>, options?: RequestOptions): AsyncGenerator<ItemOf<P>, void, undefined>;
  /**
   * `/prices/export.csv` as the bytes the server sends (header row first, CRLF line ends): one request
   * for every row. Pipe it to a file, or read rows with `exportPrices()`. Cancel it to stop early.
   */
  exportPricesCsv(query?: QueryOf<'/prices/export.csv'>, options?: RequestOptions): Promise<ReadableStream<Uint8Array>>;
  /** The same export, as the row objects `/prices` returns, read as they arrive. */
  exportPrices(query?: QueryOf<'/prices/export.csv'>, options?: RequestOptions): AsyncGenerator<PriceRow, void, undefined>;
}

/**
 * A loose view of openapi-fetch's GET: its precise signature cannot be satisfied from inside a function
 * generic over the path, so the calls below go through this one, and the public methods above restore
 * the precise types.
 */
type LooseGet = (
  path: string,
  init: { params: { path?: object; query?: object }; signal?: AbortSignal; parseAs?: 'json' | 'text' | 'stream' },
) => Promise<{ data?: unknown; response: Response }>;

interface LoosePage {
  data: unknown[];
  pagination: { hasMore: boolean };
}

function apiBase(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith(API_PREFIX) ? trimmed : trimmed + API_PREFIX;
}

export function createShelfClient(options: ShelfClientOptions): ShelfClient {
  const { apiKey, maxRetries = 3, onRetry } = options;
  if (typeof apiKey !== 'string' || apiKey.trim() === '') throw new TypeError('createShelfClient: apiKey is required');
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) throw new TypeError('createShelfClient: maxRetries must be a whole number >= 0');
  const timeoutSeconds = seconds('timeout', options.timeout ?? DEFAULT_TIMEOUT_SECONDS, false);
  if (timeoutSeconds > MAX_TIMEOUT_SECONDS) throw new TypeError(`createShelfClient: timeout must be at most ${MAX_TIMEOUT_SECONDS} s`);
  const maxRetryWait = seconds('maxRetryWait', options.maxRetryWait ?? DEFAULT_MAX_RETRY_WAIT_SECONDS, true);
  const baseUrl = apiBase(options.baseUrl);
  // Removes the key from every text the client makes from an answer: a proxy may echo the request.
  const redact = redactor(apiKey);

  const openapiFetch = createClient<ShelfPaths>({ baseUrl, ...(options.fetch ? { fetch: options.fetch } : {}) });

  // A middleware rather than a default header, so the key is set on the very Request that retries resend.
  const auth: Middleware = {
    onRequest({ request }) {
      request.headers.set('authorization', `Bearer ${apiKey}`);
      return request;
    },
  };
  const errors: Middleware = {
    async onResponse({ request, response }) {
      if (response.ok || response.status === 304) return undefined;
      const error = await ShelfApiError.fromResponse(response, request.url, redact);
      const deadline = requestDeadline(request);
      // A body trickled past the deadline reads as empty: the timeout is the truth, not "HTTP 503".
      if (deadline?.expired) throw deadline.signal.reason;
      deadline?.pause();
      throw error;
    },
  };
  // onResponse handlers run last-registered first: retries settle on a final answer before `errors` sees
  // it, and the deadline's sees only the final 2xx.
  openapiFetch.use(
    auth,
    deadlineMiddleware({ timeoutSeconds, baseUrl, redact }),
    errors,
    retryMiddleware({ maxRetries, maxRetryWait, onRetry, redact }),
  );

  const looseGet = openapiFetch.GET as unknown as LooseGet;

  async function getJson(path: string, params: { path?: object; query?: object }, signal?: AbortSignal): Promise<unknown> {
    // Read as text and parsed here: openapi-fetch's own JSON.parse would throw a SyntaxError quoting the
    // body of a 2xx that is not JSON (a proxy's page, which may echo the key).
    const { data, response } = await looseGet(path, { params, parseAs: 'text', ...(signal ? { signal } : {}) });
    responseDeadline(response)?.pause();
    // `errors` has thrown for every non-2xx; a 2xx without a JSON body is not something the API sends.
    if (typeof data !== 'string') throw withoutBody(response, redact);
    try {
      return JSON.parse(data) as unknown;
    } catch {
      throw withoutBody(response, redact);
    }
  }

  async function* loosePages(path: string, query: Record<string, unknown> | undefined, signal?: AbortSignal): AsyncGenerator<LoosePage> {
    let offset = typeof query?.offset === 'number' ? query.offset : 0;
    for (;;) {
      const page = (await getJson(path, { query: { ...query, offset } }, signal)) as LoosePage;
      yield page;
      if (!page.pagination.hasMore) return;
      // The API promises hasMore = offset + data.length < total; an empty page claiming more would loop forever.
      if (page.data.length === 0) throw new Error(`${path}: an empty page at offset ${offset} says hasMore`);
      offset += page.data.length;
    }
  }

  const client: ShelfClient = {
    baseUrl,
    openapiFetch,
    get<P extends JsonPath>(path: P, ...args: GetArgs<P>): Promise<ResponseOf<P>> {
      const options = (args[0] ?? {}) as { path?: object; query?: object; signal?: AbortSignal };
      return getJson(path, { path: options.path, query: options.query }, options.signal) as Promise<ResponseOf<P>>;
    },
    pages<P extends ListPath>(path: P, query?: QueryOf<P>, options?: RequestOptions) {
      return loosePages(path, query as Record<string, unknown> | undefined, options?.signal) as AsyncGenerator<ResponseOf<P>, void, undefined>;
    },
    async *paginate<P extends ListPath>(path: P, query?: QueryOf<P>, options?: RequestOptions) {
      for await (const page of loosePages(path, query as Record<string, unknown> | undefined, options?.signal)) {
        yield* page.data as Array<ItemOf<P>>;
      }
    },
    async exportPricesCsv(query, options) {
      const { data, response } = await looseGet('/prices/export.csv', {
        params: { query },
        parseAs: 'stream',
        ...(options?.signal ? { signal: options.signal } : {}),
      });
      if (!(data instanceof ReadableStream)) {
        throw withoutBody(response, redact);
      }
      return boundedStream(data as ReadableStream<Uint8Array>, responseDeadline(response));
    },
    async *exportPrices(query, options) {
      try {
        yield* priceRows(await client.exportPricesCsv(query, options));
      } catch (error) {
        // A bad record or header is quoted in the message: it came from the server, so it may hold the key.
        throw scrubbed(error, redact);
      }
    },
  };
  return client;
}
