// docs/contract.md, "Request pipeline" and "Responses": OPTIONS (answered at step 6), HEAD (exactly GET without a body, metered
// alike), and the response rules: a request id of its own, cookies never read nor set, no CORS, the API under /developer/v1 only.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { ctx, useApiTestApp } from '../helpers/api-test-app.js';
import {
  ALLOW_HEADER,
  ENDPOINTS,
  JSON_TYPE,
  assertCommonHeaders,
  assertError,
  burstLeft,
  keyOf,
  me,
  nextWindow,
  quotaUsed,
  raw,
  remaining,
  url,
} from '../helpers/pipeline-helpers.js';

useApiTestApp();

describe('OPTIONS', () => {
  for (const endpoint of ENDPOINTS) {
    test(`OPTIONS ${endpoint.path}: 204, Allow, no body`, async () => {
      const res = await ctx.get(url(endpoint.path), 'alice', { method: 'OPTIONS' });
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.headers['allow'], ALLOW_HEADER);
      assert.equal(res.body, '');
      assert.equal(res.headers['content-type'], undefined, 'no content type without a body');
      assertCommonHeaders(res);
    });
  }

  test('OPTIONS on a missing route: 404 not_found', async () => {
    assertError(await ctx.get(url('/no-such-route'), 'alice', { method: 'OPTIONS' }), 404, 'not_found');
    assertError(await ctx.get(url('/Catalogue'), 'alice', { method: 'OPTIONS' }), 404, 'not_found');
  });

  test('OPTIONS needs a key and an active plan (steps 2 to 4 come before the route)', async () => {
    assertError(await ctx.get(url('/catalogue'), null, { method: 'OPTIONS' }), 401, 'unauthorized');
    assertError(await ctx.get(url('/catalogue'), 'alice-revoked', { method: 'OPTIONS' }), 401, 'unauthorized');
    assertError(await ctx.get(url('/catalogue'), 'carol', { method: 'OPTIONS' }), 403, 'forbidden');
  });

  test('OPTIONS is answered at step 6: before scope and parameters', async () => {
    const noScope = await ctx.get(url('/collection'), 'alice-noscope', { method: 'OPTIONS' });
    assert.equal(noScope.statusCode, 204, noScope.body);
    const badParams = await ctx.get(url('/catalogue?limit=0&bogus=1'), 'alice', { method: 'OPTIONS' });
    assert.equal(badParams.statusCode, 204, badParams.body);
    const badId = await ctx.get(url('/catalogue/abc'), 'alice', { method: 'OPTIONS' });
    assert.equal(badId.statusCode, 204, badId.body);
  });

  test('OPTIONS counts toward the burst but not the quota', async () => {
    const first = await me(ctx);
    const usedBefore = await quotaUsed(ctx, 'alice');
    const res = await ctx.get(url('/catalogue'), 'alice', { method: 'OPTIONS' });
    assert.equal(res.statusCode, 204);
    const second = await me(ctx);
    assert.equal(burstLeft(second.res), burstLeft(first.res) - 2);
    assert.equal(await quotaUsed(ctx, 'alice'), usedBefore);
  });
});

describe('HEAD behaves exactly like GET, without a body', () => {
  // Two stores in the same state: GET on one, HEAD on the other, in the same order. Every header but the
  // request id and the date must then be equal, rate-limit numbers included.
  let getCtx: TestContext;
  let headCtx: TestContext;

  before(async () => {
    getCtx = await createTestContext();
    headCtx = await createTestContext();
  });

  after(async () => {
    await getCtx.close();
    await headCtx.close();
  });

  const IGNORED = new Set(['x-request-id', 'date']);
  // The export is streamed on GET (chunked, no length) and answered without a stream on HEAD: the framing
  // headers differ by nature and are checked on their own below.
  const FRAMING = new Set(['content-length', 'transfer-encoding']);

  const cases: Array<{ label: string; path: string; key: string | null }> = [
    ...ENDPOINTS.map((e) => ({ label: e.path, path: e.path, key: 'alice' })),
    { label: 'a missing catalogue item (404)', path: '/catalogue/999', key: 'alice' },
    { label: 'a missing price (404)', path: '/prices/999', key: 'alice' },
    { label: "another owner's collection item (404)", path: '/collection/6', key: 'alice' },
    { label: 'an invalid parameter (400)', path: '/catalogue?limit=0', key: 'alice' },
    { label: 'an unknown route (404)', path: '/no-such-route', key: 'alice' },
    { label: 'a missing scope (403)', path: '/catalogue', key: 'alice-noscope' },
    { label: 'a lapsed plan (403)', path: '/catalogue', key: 'carol' },
    { label: 'no key (401)', path: '/catalogue', key: null },
  ];

  for (const c of cases) {
    test(`HEAD ${c.label}: same status, same headers, same metering, empty body`, async () => {
      nextWindow(getCtx);
      nextWindow(headCtx);
      const got = await getCtx.get(url(c.path), c.key);
      const head = await headCtx.get(url(c.path), c.key, { method: 'HEAD' });
      assert.equal(head.statusCode, got.statusCode, `status (GET body: ${got.body})`);
      assert.equal(head.body, '', 'HEAD has no body');
      assert.equal(head.rawPayload.length, 0);
      const csv = c.path.startsWith('/prices/export.csv');
      const names = (res: LightMyRequestResponse) =>
        Object.keys(res.headers).filter((n) => !IGNORED.has(n) && !(csv && FRAMING.has(n))).sort();
      assert.deepEqual(names(head), names(got), 'the same header names');
      for (const name of names(got)) assert.equal(head.headers[name], got.headers[name], `header ${name}`);
      assertCommonHeaders(head);
      assert.equal(await quotaUsed(headCtx, 'alice'), await quotaUsed(getCtx, 'alice'), 'the same quota use');
    });
  }

  // RFC 9110 section 8.6: a HEAD may omit Content-Length, but must not announce one the GET would not send
  // (it once sent Content-Length: 0, i.e. an empty file, while the GET streams the export).
  test('HEAD /prices/export.csv does not announce a Content-Length the GET would not have', async () => {
    const got = await ctx.get(url('/prices/export.csv'));
    const head = await ctx.get(url('/prices/export.csv'), 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 200);
    const length = head.headers['content-length'];
    if (length !== undefined) assert.equal(Number(length), got.rawPayload.length);
  });

  test('HEAD is metered exactly like GET: one request against the quota', async () => {
    const start = await quotaUsed(ctx, 'alice');
    const head = await ctx.get(url('/catalogue/1'), 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 200);
    assert.equal(await quotaUsed(ctx, 'alice'), start + 1);
    assert.equal(remaining(head), 50_000 - (start + 1));
    const got = await ctx.get(url('/catalogue/1'));
    assert.equal(remaining(got), remaining(head) - 1);
    assert.equal(await quotaUsed(ctx, 'alice'), start + 2);
  });

  test('HEAD /me is not counted against the quota, like GET /me', async () => {
    const start = await quotaUsed(ctx, 'alice');
    const head = await ctx.get(url('/me'), 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
    assert.equal(await quotaUsed(ctx, 'alice'), start);
  });

  test('HEAD of a missing item: 404 with no body, and metered', async () => {
    const start = await quotaUsed(ctx, 'alice');
    const head = await ctx.get(url('/catalogue/999'), 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 404);
    assert.equal(head.body, '');
    assert.equal(head.headers['content-type'], JSON_TYPE);
    assertCommonHeaders(head);
    assert.equal(await quotaUsed(ctx, 'alice'), start + 1);
  });
});

describe('responses', () => {
  test('every response has its own X-Request-Id', async () => {
    const responses: LightMyRequestResponse[] = [];
    for (let i = 0; i < 5; i++) {
      responses.push(await ctx.get(url('/catalogue/1')));
      responses.push(await ctx.get(url('/me')));
      responses.push(await ctx.get(url('/catalogue/1'), null));
      responses.push(await ctx.get(url('/catalogue'), 'alice', { method: 'POST' }));
      responses.push(await ctx.get(url('/no-such-route')));
      responses.push(await ctx.get(url('/catalogue/999')));
      responses.push(await ctx.get(url('/catalogue?limit=0')));
      responses.push(await ctx.get(url('/catalogue'), 'alice', { method: 'HEAD' }));
      responses.push(await ctx.get(url('/catalogue'), 'alice', { method: 'OPTIONS' }));
      responses.push(await ctx.get(url('/catalogue'), 'carol'));
    }
    const ids = responses.map((r) => r.headers['x-request-id']);
    for (const id of ids) assert.ok(typeof id === 'string' && id.length > 0);
    assert.equal(new Set(ids).size, ids.length, 'all distinct');
  });

  test('a client-sent X-Request-Id does not make two responses share an id', async () => {
    const a = await ctx.get(url('/me'), 'alice', { headers: { 'x-request-id': 'client-chosen' } });
    const b = await ctx.get(url('/me'), 'alice', { headers: { 'x-request-id': 'client-chosen' } });
    assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
  });

  test('cookies are never read: a key in a Cookie header is 401', async () => {
    const key = keyOf(ctx, 'alice');
    for (const cookie of [`api_key=${key}`, `x-api-key=${key}`, `key=${key}; session=abc`, `authorization=Bearer%20${key}`]) {
      const res = await raw(ctx, url('/catalogue'), { cookie });
      assertError(res, 401, 'unauthorized');
      assert.ok(!res.body.includes(key));
    }
  });

  test('cookies are ignored, not refused, next to a valid key; nothing sets a cookie', async () => {
    const res = await raw(ctx, url('/catalogue'), { cookie: 'x-api-key=garbage; session=abc', 'x-api-key': keyOf(ctx, 'alice') });
    assert.equal(res.statusCode, 200, res.body);
    assertCommonHeaders(res);
  });

  test('a browser Origin gets no CORS allowance', async () => {
    const res = await raw(ctx, url('/catalogue'), { origin: 'https://evil.example.com', 'x-api-key': keyOf(ctx, 'alice') });
    assert.equal(res.statusCode, 200);
    assertCommonHeaders(res);
    const preflight = await raw(
      ctx,
      url('/catalogue'),
      { origin: 'https://evil.example.com', 'access-control-request-method': 'GET' },
      'OPTIONS',
    );
    assertError(preflight, 401, 'unauthorized');
  });

  test('the API lives under /developer/v1 only', async () => {
    assertError(await ctx.get('/me'), 404, 'not_found');
    assertError(await ctx.get('/catalogue/1'), 404, 'not_found');
    assert.equal((await ctx.get(`${V1}/me`)).statusCode, 200);
  });
});
