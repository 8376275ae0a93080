/**
 * What the client retries and what it does not, against a live server metering in a private Redis that
 * the test stops and starts: `quota_exceeded` is never retried; a `503` (Redis gone) is retried after
 * Retry-After, a bounded number of times, and succeeds once Redis is back.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startPrivateRedis, type PrivateRedis } from '../../../test/helpers/private-services.js';
import { createShelfClient, ShelfApiError, type RetryEvent } from '../src/index.js';
import { recordingFetch, startLiveServer, type LiveServer } from './live-server.js';

describe('retries against a server whose Redis goes away', () => {
  let redis: PrivateRedis;
  let live: LiveServer;

  before(async () => {
    redis = await startPrivateRedis();
    live = await startLiveServer({
      env: {
        REDIS_URL: redis.url,
        REDIS_KEY_PREFIX: `client:${randomUUID()}:`,
        // Two requests a month for the limited account, so that the third is quota_exceeded.
        PLAN_LIMITS: JSON.stringify({ addon: { monthly: 2 } }),
      },
    });
  });
  after(async () => {
    await live?.stop();
    await redis?.stop();
  });

  test('quota_exceeded is never retried, whatever maxRetries says', async () => {
    const { attempts, fetch } = recordingFetch();
    const retries: RetryEvent[] = [];
    const client = createShelfClient({ baseUrl: live.origin, apiKey: live.keys.limited!, maxRetries: 5, fetch, onRetry: (e) => retries.push(e) });
    await client.get('/catalogue/{id}', { path: { id: 1 } });
    await client.get('/catalogue/{id}', { path: { id: 2 } });
    await assert.rejects(client.get('/catalogue/{id}', { path: { id: 3 } }), (error: unknown) => {
      assert.ok(error instanceof ShelfApiError);
      assert.equal(error.status, 429);
      assert.equal(error.code, 'quota_exceeded');
      // Retry-After points at the start of next month: the caller decides what to do with that.
      assert.ok(error.retryAfterSeconds !== null && error.retryAfterSeconds >= 1);
      assert.equal(error.requestId, attempts.at(-1)!.requestId);
      return true;
    });
    assert.deepEqual(attempts.map((a) => a.status), [200, 200, 429]);
    assert.equal(retries.length, 0);
  });

  test('a 503 is retried after Retry-After, at most maxRetries times, then given up with the error', async () => {
    await redis.stop();
    const { attempts, fetch } = recordingFetch();
    const retries: RetryEvent[] = [];
    const client = createShelfClient({ baseUrl: live.origin, apiKey: live.keys.main!, maxRetries: 2, fetch, onRetry: (e) => retries.push(e) });
    await assert.rejects(client.get('/catalogue/{id}', { path: { id: 1 } }), (error: unknown) => {
      assert.ok(error instanceof ShelfApiError);
      assert.equal(error.status, 503);
      assert.equal(error.code, 'service_unavailable');
      assert.equal(error.requestId, attempts.at(-1)!.requestId);
      return true;
    });
    assert.deepEqual(attempts.map((a) => a.status), [503, 503, 503], 'the first try and 2 retries');
    assert.deepEqual(retries.map((e) => [e.attempt, e.code]), [[1, 'service_unavailable'], [2, 'service_unavailable']]);
    assert.ok(retries.every((e) => e.waitSeconds >= 1), 'waits what Retry-After says');
  });

  test("the caller's AbortSignal cuts short the wait before a retry", async () => {
    // Redis is still down from the previous test.
    const { attempts, fetch } = recordingFetch();
    const controller = new AbortController();
    const client = createShelfClient({ baseUrl: live.origin, apiKey: live.keys.main!, maxRetries: 5, fetch, onRetry: () => controller.abort() });
    await assert.rejects(client.get('/catalogue/{id}', { path: { id: 1 }, signal: controller.signal }), { name: 'AbortError' });
    assert.deepEqual(attempts.map((a) => a.status), [503]);
  });

  test('a 503 is retried until Redis is back, then the request succeeds', async () => {
    // Redis is still down from the previous test; it comes back while the client is waiting to retry.
    let restarted: Promise<void> | undefined;
    const { attempts, fetch } = recordingFetch();
    const client = createShelfClient({
      baseUrl: live.origin,
      apiKey: live.keys.main!,
      maxRetries: 60,
      fetch,
      onRetry: () => {
        restarted ??= redis.start();
      },
    });
    const one = await client.get('/catalogue/{id}', { path: { id: 1 } });
    assert.equal(one.data.masterItemId, 1);
    await restarted;
    assert.equal(attempts[0]!.status, 503);
    assert.equal(attempts.at(-1)!.status, 200);
    assert.ok(attempts.slice(0, -1).every((a) => a.status === 503));
  });
});
