/**
 * The client against a live `shelfapi serve` over SQLite: typed pages, the page iterator, errors, a
 * conditional request, the CSV export, and retrying a `429 rate_limited` after Retry-After.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseCsv } from '../../../src/csv/csv.js';
import { createShelfClient, PRICE_CSV_COLUMNS, ShelfApiError, type ItemOf, type RetryEvent, type ShelfClient } from '../src/index.js';
import { PRICED_IDS, PUBLISHED_IDS, recordingFetch, startLiveServer, TRICKY_NAME, type LiveServer } from './live-server.js';

/** Runs `call`, which must fail with a ShelfApiError, and returns that error. */
async function apiError(call: () => Promise<unknown>): Promise<ShelfApiError> {
  try {
    await call();
  } catch (error) {
    assert.ok(error instanceof ShelfApiError, `a ShelfApiError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a ShelfApiError');
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('the client against a live server', () => {
  let live: LiveServer;
  let shelf: ShelfClient;

  before(async () => {
    live = await startLiveServer({
      // The burst limit of `addon` is tiny so that a 429 rate_limited is one request away; `enthusiast`
      // has room for every other test.
      env: { PLAN_LIMITS: JSON.stringify({ enthusiast: { monthly: 1_000_000, perMinute: 1_000_000 }, addon: { perMinute: 2 } }) },
    });
    shelf = createShelfClient({ baseUrl: live.origin, apiKey: live.keys.main! });
  });
  after(async () => {
    await live?.stop();
  });

  test('a catalogue page, typed from openapi.json, in order, with its pagination', async () => {
    const page = await shelf.get('/catalogue', { query: { limit: 10 } });
    assert.deepEqual(page.data.map((item) => item.masterItemId), PUBLISHED_IDS.slice(0, 10));
    assert.deepEqual(page.pagination, { total: PUBLISHED_IDS.length, limit: 10, offset: 0, hasMore: true });
    const third = page.data.find((item) => item.masterItemId === 3)!;
    // Typed fields: these assignments only compile because the generated types say so.
    const name: string = third.name;
    const releaseYear: number | null = third.releaseYear;
    assert.equal(name, TRICKY_NAME);
    assert.equal(releaseYear, 1983);
    assert.equal(page.data.find((item) => item.masterItemId === 4)!.releaseYear, null);

    const one = await shelf.get('/catalogue/{id}', { path: { id: 3 } });
    assert.deepEqual(one.data, third);
    const me = await shelf.get('/me');
    assert.equal(me.plan, 'enthusiast');
    assert.equal(me.usage.remaining, me.limits.monthly - me.usage.used);
    // A base URL given with the /developer/v1 prefix and a trailing slash reaches the same API.
    const prefixed = createShelfClient({ baseUrl: `${live.origin}/developer/v1/`, apiKey: live.keys.main! });
    assert.equal(prefixed.baseUrl, shelf.baseUrl);
    assert.deepEqual((await prefixed.get('/catalogue/{id}', { path: { id: 3 } })).data, third);
  });

  test('the types refuse what the API would refuse (checked by tsc, never run)', () => {
    const typeChecks = async (): Promise<void> => {
      // @ts-expect-error `/catalogue/{id}` needs its path parameter.
      await shelf.get('/catalogue/{id}');
      // @ts-expect-error `/catalogue` has no `sort` parameter.
      await shelf.get('/catalogue', { query: { sort: 'name' } });
      // @ts-expect-error `limit` is a number.
      await shelf.get('/catalogue', { query: { limit: '10' } });
      // @ts-expect-error the CSV export is not JSON: `exportPricesCsv()` reads it.
      await shelf.get('/prices/export.csv');
      // @ts-expect-error `/collection/value` is not a list.
      shelf.paginate('/collection/value');
      // @ts-expect-error no such path.
      await shelf.get('/catalog');
    };
    assert.equal(typeof typeChecks, 'function');
  });

  test('paginate() yields every item of every page exactly once', async () => {
    const { attempts, fetch } = recordingFetch();
    const counted = createShelfClient({ baseUrl: live.origin, apiKey: live.keys.main!, fetch });
    const items: Array<ItemOf<'/catalogue'>> = await collect(counted.paginate('/catalogue', { limit: 4 }));
    assert.deepEqual(items.map((item) => item.masterItemId), PUBLISHED_IDS);
    assert.equal(attempts.length, Math.ceil(PUBLISHED_IDS.length / 4), 'one request per page');
    assert.deepEqual(attempts.map((a) => new URL(a.url).searchParams.get('offset')), ['0', '4', '8', '12', '16', '20', '24']);

    // Filters are kept on every page; a starting offset is honoured.
    const nes = await collect(shelf.paginate('/catalogue', { platform: 'nes', limit: 3 }));
    assert.deepEqual(nes.map((item) => item.masterItemId), PUBLISHED_IDS.filter((id) => id % 2 === 0));
    const tail = await collect(shelf.paginate('/prices', { offset: 20, limit: 2 }));
    assert.deepEqual(tail.map((row) => row.masterItemId), PRICED_IDS.slice(20));
    // Other list endpoints: the account's own collection.
    const owned = await collect(shelf.paginate('/collection', { limit: 2 }));
    assert.deepEqual(owned.map((item) => item.id), [1, 2, 3, 4, 5]);

    const pages = await collect(shelf.pages('/catalogue', { limit: 10 }));
    assert.deepEqual(pages.map((p) => [p.pagination.offset, p.data.length, p.pagination.hasMore]), [[0, 10, true], [10, 10, true], [20, 5, false]]);
  });

  test('every non-2xx is a ShelfApiError with status, code, message and the request id; none is retried', async () => {
    const { attempts, fetch } = recordingFetch();
    const client = (apiKey: string) => createShelfClient({ baseUrl: live.origin, apiKey, fetch, maxRetries: 5 });
    const cases: Array<[string, () => Promise<unknown>, number, string]> = [
      ['missing item', () => client(live.keys.main!).get('/catalogue/{id}', { path: { id: 9999 } }), 404, 'not_found'],
      ['unpublished item', () => client(live.keys.main!).get('/catalogue/{id}', { path: { id: 5 } }), 404, 'not_found'],
      ['limit out of range', () => client(live.keys.main!).get('/catalogue', { query: { limit: 101 } }), 400, 'bad_request'],
      ['unknown key', () => client('shelf_live_notakey').get('/catalogue'), 401, 'unauthorized'],
      ['lapsed plan', () => client(live.keys.lapsed!).get('/catalogue'), 403, 'forbidden'],
      ['missing scope', () => client(live.keys['catalogue-only']!).get('/prices'), 403, 'insufficient_scope'],
      ['missing scope, export', () => client(live.keys['catalogue-only']!).exportPricesCsv(), 403, 'insufficient_scope'],
    ];
    for (const [what, call, status, code] of cases) {
      attempts.length = 0;
      const error = await apiError(call);
      assert.equal(error.status, status, what);
      assert.equal(error.code, code, what);
      assert.ok(error.message.length > 0 && error.message !== code, `${what}: the server's message`);
      assert.equal(attempts.length, 1, `${what}: not retried`);
      assert.ok(error.requestId, `${what}: a request id`);
      assert.equal(error.requestId, attempts[0]!.requestId, `${what}: the X-Request-Id of the answer`);
      assert.equal(error.name, 'ShelfApiError');
      assert.ok(error instanceof Error);
      assert.ok(!error.url.includes(live.keys.main!), 'the key is never in the URL');
    }
  });

  test("a 304 to the caller's own If-None-Match is an answer, not an error", async (t) => {
    const first = await shelf.openapiFetch.GET('/catalogue/{id}', { params: { path: { id: 1 } } });
    assert.equal(first.response.status, 200);
    assert.equal(first.data?.data.masterItemId, 1);
    const etag = first.response.headers.get('etag');
    if (etag === null) {
      t.skip('this server sends no ETag');
      return;
    }
    const again = await shelf.openapiFetch.GET('/catalogue/{id}', { params: { path: { id: 1 } }, headers: { 'If-None-Match': etag } });
    assert.equal(again.response.status, 304);
    assert.equal(again.data, undefined);
  });

  test('the CSV export as a stream: the header, then every row of /prices', async () => {
    const stream = await shelf.exportPricesCsv();
    assert.ok(stream instanceof ReadableStream);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(Buffer.from(chunk));
    const text = Buffer.concat(chunks).toString('utf8');
    // Parsed by the server's own CSV reader, independently of the client's.
    const records = await collect(parseCsv([text]));
    assert.deepEqual(records[0]!.fields, [...PRICE_CSV_COLUMNS]);
    assert.deepEqual(records.slice(1).map((r) => Number(r.fields[0])), PRICED_IDS);
    assert.equal(records.find((r) => r.fields[0] === '3')!.fields[1], TRICKY_NAME);

    // The same export as typed rows equals /prices page by page, field for field.
    const rows = await collect(shelf.exportPrices());
    const listed = await collect(shelf.paginate('/prices', { limit: 7 }));
    assert.deepEqual(rows, listed);
    const nes = await collect(shelf.exportPrices({ platform: 'NES' }));
    assert.deepEqual(nes.map((r) => r.masterItemId), PRICED_IDS.filter((id) => id % 2 === 0));

    // Stopping early cancels the download instead of hanging on the rest.
    let seen = 0;
    for await (const _row of shelf.exportPrices()) if (++seen === 2) break;
    assert.equal(seen, 2);
  });

  describe('429 rate_limited (the limited account allows 2 requests a minute)', () => {
    // Fill the window: the next request is refused until the first of these is 60 s old.
    before(async () => {
      const limited = createShelfClient({ baseUrl: live.origin, apiKey: live.keys.limited!, maxRetries: 0 });
      await limited.get('/catalogue/{id}', { path: { id: 1 } });
      await limited.get('/catalogue/{id}', { path: { id: 1 } });
    });

    test('with maxRetries 0 the client gives up at once with the error and its Retry-After', async () => {
      const { attempts, fetch } = recordingFetch();
      const client = createShelfClient({ baseUrl: live.origin, apiKey: live.keys.limited!, maxRetries: 0, fetch });
      const error = await apiError(() => client.get('/catalogue/{id}', { path: { id: 1 } }));
      assert.equal(error.status, 429);
      assert.equal(error.code, 'rate_limited');
      assert.ok(error.retryAfterSeconds !== null && error.retryAfterSeconds >= 1);
      assert.equal(error.requestId, attempts[0]!.requestId);
      assert.equal(attempts.length, 1);
    });

    test('is retried after Retry-After, then succeeds', async () => {
      const { attempts, fetch } = recordingFetch();
      const retries: RetryEvent[] = [];
      const client = createShelfClient({ baseUrl: live.origin, apiKey: live.keys.limited!, maxRetries: 2, fetch, onRetry: (e) => retries.push(e) });
      const one = await client.get('/catalogue/{id}', { path: { id: 1 } });
      assert.equal(one.data.masterItemId, 1);
      assert.deepEqual(attempts.map((a) => a.status), [429, 200]);
      assert.equal(retries.length, 1);
      assert.equal(retries[0]!.code, 'rate_limited');
      assert.equal(retries[0]!.attempt, 1);
      assert.equal(retries[0]!.requestId, attempts[0]!.requestId);
      assert.ok(retries[0]!.waitSeconds >= 1, 'waits what Retry-After says');
    });
  });
});
