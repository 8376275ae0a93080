/**
 * The client against a misbehaving server or proxy (issue 40, items 6-9), served by misbehaving-server.ts:
 * an absurd Retry-After is thrown at once rather than waited on; the key echoed back by a proxy appears in
 * no error or retry event; `timeout` bounds the whole call however slowly the bytes arrive; no answer at
 * all is the client's own error.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { inspect } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, test } from 'node:test';
import {
  createShelfClient,
  parseRetryAfter,
  RETRY_AFTER_CEILING,
  ShelfApiError,
  ShelfConnectionError,
  ShelfError,
  ShelfTimeoutError,
  type RetryEvent,
  type ShelfClientOptions,
} from '../src/index.js';
import { KEY, SECRET, startMisbehavingServer, type MisbehavingServer } from './misbehaving-server.js';

/** Slack for a loaded machine (the tests share two cores with other work), in ms. */
const SLACK = 2000;

function assertNoKey(...things: unknown[]): void {
  for (const thing of things) {
    const texts = [String(thing), inspect(thing, { depth: 5 }), JSON.stringify(thing) ?? ''];
    if (thing instanceof Error) texts.push(thing.stack ?? '', inspect(thing.cause));
    for (const text of texts) {
      assert.ok(!text.includes(KEY) && !text.includes(SECRET), text);
    }
  }
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected the call to throw');
}

describe('the client against a misbehaving server', () => {
  let server: MisbehavingServer;
  const client = (mode: string, options: Partial<ShelfClientOptions> = {}) =>
    createShelfClient({ baseUrl: `${server.origin}/${mode}`, apiKey: KEY, ...options });

  before(async () => {
    server = await startMisbehavingServer();
  });
  after(async () => {
    await server?.close();
  });

  test('Retry-After parsing gives a finite number or null, whatever the header holds', () => {
    assert.equal(parseRetryAfter('99999999'), 99_999_999);
    assert.equal(parseRetryAfter('9'.repeat(5000)), RETRY_AFTER_CEILING);
    const year9999 = parseRetryAfter('Fri, 31 Dec 9999 23:59:59 GMT');
    assert.ok(year9999 !== null && year9999 > 2e11 && year9999 <= RETRY_AFTER_CEILING);
    for (const nonsense of ['²', '-5', '1.5', '', 'soon']) assert.equal(parseRetryAfter(nonsense), null);
  });

  for (const [mode, status, seconds] of [
    ['huge-retry-after', 503, 99_999_999],
    ['date-retry-after', 429, null],
  ] as const) {
    test(`${mode}: thrown at once with its retryAfterSeconds, not waited on`, async () => {
      const started = performance.now();
      const error = await caught(client(mode).get('/me'));
      assert.ok(performance.now() - started < SLACK);
      assert.ok(error instanceof ShelfApiError);
      assert.equal(error.status, status);
      assert.ok(error.retryAfterSeconds !== null && error.retryAfterSeconds >= (seconds ?? 2e11));
      assert.equal(server.requests.get(mode), 1);
    });
  }

  test('maxRetryWait sets the longest wait; the waits count against timeout', async () => {
    const started = performance.now();
    const refused = await caught(client('retry-after-2', { maxRetryWait: 1 }).get('/me'));
    assert.ok(refused instanceof ShelfApiError && refused.retryAfterSeconds === 2);
    assert.equal(server.requests.get('retry-after-2'), 1);
    assert.ok(performance.now() - started < SLACK);
    // Retry-After: 2 each time; after the first wait about 1 s of the 3 is left, so the second is not made.
    const second = performance.now();
    const late = await caught(client('retry-after-2', { timeout: 3, maxRetries: 5 }).get('/me'));
    const elapsed = performance.now() - second;
    assert.ok(late instanceof ShelfApiError && late.status === 503);
    assert.equal(server.requests.get('retry-after-2'), 3);
    assert.ok(elapsed >= 2000 && elapsed < 3000, `${elapsed}`);
    assert.throws(() => client('x', { maxRetryWait: Number.POSITIVE_INFINITY }), TypeError);
  });

  for (const mode of ['trickle-body', 'trickle-headers']) {
    test(`${mode}: timeout: 3 ends the call within about 3 s, a byte a second notwithstanding`, async () => {
      const started = performance.now();
      const error = await caught(client(mode, { timeout: 3 }).get('/me'));
      const elapsed = performance.now() - started;
      assert.ok(error instanceof ShelfTimeoutError, String(error));
      assert.ok(error instanceof ShelfError);
      assert.equal(error.timeoutSeconds, 3);
      assert.ok(elapsed >= 2900 && elapsed < 3000 + SLACK, `${elapsed}`);
    });
  }

  test('the export is bounded too, and so is the caller-visible stream', async () => {
    const started = performance.now();
    const rows = client('trickle-body', { timeout: 2 }).exportPrices();
    const error = await caught((async () => {
      for await (const row of rows) void row;
    })());
    assert.ok(error instanceof ShelfTimeoutError, String(error));
    assert.ok(performance.now() - started < 2000 + SLACK);
  });

  test('a key echoed by a proxy is in no error or retry event', async () => {
    const events: RetryEvent[] = [];
    const echoed = await caught(client('echo', { maxRetries: 1, onRetry: (e) => events.push(e) }).get('/me'));
    assert.ok(echoed instanceof ShelfApiError);
    assert.match(echoed.message, /refused Bearer \[redacted API key\]/);
    assert.equal(events.length, 1);
    const notJson = await caught(client('echo-2xx').get('/me'));
    assert.ok(notJson instanceof ShelfApiError && notJson.code === 'unexpected_response', String(notJson));
    const badCsv = await caught((async () => {
      for await (const row of client('echo-csv').exportPrices()) void row;
    })());
    assert.ok(badCsv instanceof Error);
    assertNoKey(echoed, events[0], notJson, badCsv);
  });

  test("the caller's abort is heard after a garbage collection during the call", async () => {
    // A collection while the answer is awaited once cut the chain from the caller's signal to the request's
    // (the runtime holds its links weakly): the abort went unheard and every retry was made.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const unavailable = async () => {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 5));
      gc();
      return new Response(JSON.stringify({ error: 'service_unavailable', message: 'Try again.', requestId: 'r1' }), {
        status: 503,
        headers: { 'content-type': 'application/json', 'retry-after': '1' },
      });
    };
    const controller = new AbortController();
    const events: RetryEvent[] = [];
    const aborting = createShelfClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: KEY,
      maxRetries: 3,
      fetch: unavailable,
      onRetry: (event) => {
        events.push(event);
        controller.abort();
      },
    });
    await assert.rejects(aborting.get('/catalogue/{id}', { path: { id: 1 }, signal: controller.signal }), { name: 'AbortError' });
    assert.equal(events.length, 1, 'no retry after the abort');
  });

  test("a refused connection is the client's own error, saying where", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const origin = `http://127.0.0.1:${port}`;
    const error = await caught(createShelfClient({ baseUrl: origin, apiKey: KEY }).get('/me'));
    assert.ok(error instanceof ShelfConnectionError, String(error));
    assert.ok(!(error instanceof ShelfApiError));
    assert.match(error.message, /ECONNREFUSED/);
    assert.ok(error.message.includes(`is it running at ${origin}/developer/v1?`), error.message);
    assertNoKey(error);
  });
});
