// The order of checks of docs/contract.md, "Request pipeline" (method, key, allowed addresses, access, burst, route, scope, parameters,
// quota, handler): step 1 (only GET, HEAD and OPTIONS), step 6 (routes), a URL the router cannot read, and steps 5 and 9 (burst and
// quota) in their place. Step 4 and metering are in pipeline-access-metering.test.ts, HEAD, OPTIONS and "Responses" in
// pipeline-responses.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { ctx, useApiTestApp } from '../helpers/api-test-app.js';
import {
  ALLOW_HEADER,
  assertCommonHeaders,
  assertError,
  burstLeft,
  keyOf,
  me,
  quotaUsed,
  raw,
  remaining,
  url,
} from '../helpers/pipeline-helpers.js';

const OTHER_METHODS = ['POST', 'PUT', 'DELETE', 'PATCH'] as const;

useApiTestApp();

function assertMethodNotAllowed(res: LightMyRequestResponse): void {
  assertError(res, 405, 'method_not_allowed');
  assert.equal(res.headers['allow'], ALLOW_HEADER);
}

describe('step 1: only GET, HEAD and OPTIONS', () => {
  const paths = [
    url('/catalogue'),
    url('/catalogue/1'),
    url('/me'),
    url('/prices/export.csv'),
    url('/collection/value'),
    url('/no-such-route'),
    url('/Catalogue'),
    '/developer/v2/me',
    '/',
    '/no/such/thing',
  ];

  for (const method of OTHER_METHODS) {
    test(`${method} answers 405 with Allow, before any key check, on existing and missing paths`, async () => {
      for (const path of paths) {
        assertMethodNotAllowed(await ctx.get(path, null, { method }));
      }
    });
  }

  test('405 wins over a bad, revoked or lapsed key, a bad parameter and a missing item', async () => {
    const cases: Array<[string, Record<string, string>]> = [
      [url('/catalogue'), { 'x-api-key': 'nonsense' }],
      [url('/catalogue'), { 'x-api-key': keyOf(ctx, 'alice-revoked') }],
      [url('/catalogue'), { 'x-api-key': keyOf(ctx, 'carol') }],
      [url('/catalogue'), { 'x-api-key': keyOf(ctx, 'dave') }],
      [url('/catalogue'), { authorization: 'Basic Zm9vOmJhcg==' }],
      [url('/catalogue?limit=0'), { 'x-api-key': keyOf(ctx, 'alice') }],
      [url('/catalogue/999'), { 'x-api-key': keyOf(ctx, 'alice') }],
      [url('/collection'), { 'x-api-key': keyOf(ctx, 'alice-noscope') }],
    ];
    for (const method of OTHER_METHODS) {
      for (const [path, headers] of cases) assertMethodNotAllowed(await raw(ctx, path, headers, method));
    }
  });

  test('a POST with a body is refused the same way, the body unread', async () => {
    const res = await ctx.app.inject({
      method: 'POST',
      url: url('/catalogue'),
      headers: { 'x-api-key': keyOf(ctx, 'alice'), 'content-type': 'application/json' },
      payload: '{"not json',
    });
    assertMethodNotAllowed(res);
  });

  test('405 is never metered: no quota, no burst slot, no rate-limit headers', async () => {
    const before = await me(ctx);
    const usedBefore = await quotaUsed(ctx, 'alice');
    for (const method of OTHER_METHODS) {
      const res = await ctx.get(url('/catalogue'), 'alice', { method });
      assertMethodNotAllowed(res);
      for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']) {
        assert.equal(res.headers[name], undefined, `405 carries no ${name}`);
      }
    }
    const afterMe = await me(ctx);
    assert.equal(await quotaUsed(ctx, 'alice'), usedBefore, 'quota unchanged');
    assert.equal(afterMe.used, before.used, '/me usage.used unchanged');
    assert.equal(remaining(afterMe.res), remaining(before.res), 'X-RateLimit-Remaining unchanged');
    assert.equal(burstLeft(afterMe.res), burstLeft(before.res) - 1, 'only the second /me took a burst slot');
  });
});

describe('step 6: routes', () => {
  const missing = ['/no-such-route', '/catalogue/1/extra', '/prices/1/history', '/collection/value/1', '/me/x', '/catalogues'];

  test('an unknown route with a valid key: 404 not_found', async () => {
    for (const path of missing) assertError(await ctx.get(url(path)), 404, 'not_found');
    for (const path of ['/developer/v2/me', '/developer/v1', '/', '/developer']) {
      assertError(await ctx.get(path), 404, 'not_found');
    }
  });

  test('an unknown route with no key or a bad key: 401 (the key is step 2, the route step 6)', async () => {
    for (const path of missing) {
      assertError(await ctx.get(url(path), null), 401, 'unauthorized');
      assertError(await raw(ctx, url(path), { 'x-api-key': 'shelf_live_nope' }), 401, 'unauthorized');
    }
  });

  test('an unknown route with a lapsed or planless account: 403 forbidden (step 4)', async () => {
    assertError(await ctx.get(url('/no-such-route'), 'carol'), 403, 'forbidden');
    assertError(await ctx.get(url('/no-such-route'), 'dave'), 403, 'forbidden');
  });

  test('an unknown route wins over scope and parameters (404, not 403 or 400)', async () => {
    assertError(await ctx.get(url('/no-such-route'), 'alice-noscope'), 404, 'not_found');
    assertError(await ctx.get(url('/no-such-route?limit=0&bogus=1'), 'alice'), 404, 'not_found');
  });

  test('an unknown route counts toward the burst but not the quota', async () => {
    const first = await me(ctx);
    const usedBefore = await quotaUsed(ctx, 'alice');
    const res = await ctx.get(url('/no-such-route'));
    assertError(res, 404, 'not_found');
    assert.equal(burstLeft(res), burstLeft(first.res) - 1, 'the 404 took a burst slot');
    const second = await me(ctx);
    assert.equal(burstLeft(second.res), burstLeft(first.res) - 2);
    assert.equal(await quotaUsed(ctx, 'alice'), usedBefore, 'the quota is unchanged');
    assert.equal(second.used, first.used);
  });

  test('a trailing slash is tolerated', async () => {
    for (const path of ['/catalogue', '/catalogue/1', '/me', '/prices', '/prices/1', '/collection/value', '/collection/1', '/offers']) {
      const plain = await ctx.get(url(path));
      const slashed = await ctx.get(url(`${path}/`));
      assert.equal(plain.statusCode, 200, `${path}: ${plain.body}`);
      assert.equal(slashed.statusCode, 200, `${path}/: ${slashed.body}`);
      if (path !== '/me') assert.deepEqual(JSON.parse(slashed.body), JSON.parse(plain.body), `${path}/ is ${path}`);
    }
    const csv = await ctx.get(url('/prices/export.csv/'));
    assert.equal(csv.statusCode, 200);
    assert.equal(csv.headers['content-type'], 'text/csv; charset=utf-8');
  });

  test('a trailing slash keeps the query string working', async () => {
    const res = await ctx.get(url('/catalogue/?limit=2'));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((JSON.parse(res.body) as { pagination: { limit: number } }).pagination.limit, 2);
  });

  test('paths are case-sensitive', async () => {
    for (const path of [url('/Catalogue'), url('/CATALOGUE/1'), url('/Me'), url('/ME'), url('/Collection/value'), '/Developer/v1/me', '/developer/V1/me']) {
      assertError(await ctx.get(path), 404, 'not_found');
    }
  });

  test('/prices/Export.csv is not the export: it is the :masterItemId route with an invalid id (400)', async () => {
    const body = assertError(await ctx.get(url('/prices/Export.csv')), 400, 'bad_request');
    assert.ok(body.message.includes("'masterItemId'"), body.message);
  });

  test('/collection/value takes precedence over /collection/:id, /prices/export.csv over /prices/:masterItemId', async () => {
    const value = await ctx.get(url('/collection/value'));
    assert.equal(value.statusCode, 200);
    assert.deepEqual(Object.keys((JSON.parse(value.body) as { data: object }).data).sort(), ['estimatedValue', 'ownedItems']);
    const csv = await ctx.get(url('/prices/export.csv'));
    assert.equal(csv.statusCode, 200);
    assert.equal(csv.headers['content-type'], 'text/csv; charset=utf-8');
  });
});

describe('a URL the router cannot read still follows the order of checks', () => {
  // Bad percent-encoding, or a path parameter longer than the router accepts: answered outside the routes,
  // but a POST is still 405, a missing key still 401, a lapsed plan still 403, before the 400.
  const malformed = [url('/catalogue/%zz'), url('/no-such-route%E0%A4%A'), url(`/catalogue/${'1'.repeat(150)}`)];

  test('405 before anything, for every method but GET, HEAD and OPTIONS', async () => {
    for (const path of malformed) {
      for (const method of OTHER_METHODS) assertMethodNotAllowed(await ctx.get(path, null, { method }));
    }
  });

  test('401 without a valid key, 403 forbidden for a lapsed plan', async () => {
    for (const path of malformed) {
      assertError(await ctx.get(path, null), 401, 'unauthorized');
      assertError(await ctx.get(path, 'alice-revoked'), 401, 'unauthorized');
      assertError(await ctx.get(path, 'carol'), 403, 'forbidden');
    }
  });

  test('with a valid key: 400 bad_request, counted toward the burst, not the quota; HEAD has no body', async () => {
    const first = await me(ctx);
    const usedBefore = await quotaUsed(ctx, 'alice');
    for (const path of malformed) assertError(await ctx.get(path), 400, 'bad_request');
    const head = await ctx.get(malformed[0]!, 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 400);
    assert.equal(head.body, '');
    assertCommonHeaders(head);
    const second = await me(ctx);
    assert.equal(burstLeft(second.res), burstLeft(first.res) - (malformed.length + 2));
    assert.equal(await quotaUsed(ctx, 'alice'), usedBefore);
  });
});

describe('steps 5 and 9 in their place', () => {
  describe('burst exhausted', () => {
    let burstCtx: TestContext;
    before(async () => {
      burstCtx = await createTestContext({ env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":3}}' } });
    });
    after(async () => {
      await burstCtx.close();
    });

    test('after the burst: 429 before route, scope and parameters; 405, 401 and 403 forbidden still first', async () => {
      for (let i = 0; i < 3; i++) assert.equal((await burstCtx.get(url('/me'))).statusCode, 200);
      const limited = await burstCtx.get(url('/catalogue'));
      assertError(limited, 429, 'rate_limited');
      assert.ok(Number(limited.headers['retry-after']) >= 1);
      assertError(await burstCtx.get(url('/no-such-route')), 429, 'rate_limited');
      assertError(await burstCtx.get(url('/catalogue'), 'alice-noscope'), 429, 'rate_limited');
      assertError(await burstCtx.get(url('/catalogue?limit=0')), 429, 'rate_limited');
      assertError(await burstCtx.get(url('/catalogue/%zz')), 429, 'rate_limited');
      const head = await burstCtx.get(url('/catalogue'), 'alice', { method: 'HEAD' });
      assert.equal(head.statusCode, 429);
      assert.equal(head.body, '');
      assert.ok(Number(head.headers['retry-after']) >= 1);
      assertError(await burstCtx.get(url('/catalogue'), 'alice', { method: 'OPTIONS' }), 429, 'rate_limited');
      assertMethodNotAllowed(await burstCtx.get(url('/catalogue'), 'alice', { method: 'POST' }));
      assertError(await burstCtx.get(url('/catalogue'), null), 401, 'unauthorized');
      assertError(await burstCtx.get(url('/catalogue'), 'carol'), 403, 'forbidden');
      assert.equal(await quotaUsed(burstCtx, 'alice'), 0, 'nothing counted against the quota');
    });
  });

  describe('quota exhausted', () => {
    let quotaCtx: TestContext;
    before(async () => {
      quotaCtx = await createTestContext({ env: { PLAN_LIMITS: '{"enthusiast":{"monthly":2}}' } });
    });
    after(async () => {
      await quotaCtx.close();
    });

    test('after the quota: 429 quota_exceeded only where step 9 is reached', async () => {
      assert.equal((await quotaCtx.get(url('/catalogue'))).statusCode, 200);
      assert.equal((await quotaCtx.get(url('/catalogue/1'))).statusCode, 200);
      const over = await quotaCtx.get(url('/prices'));
      assertError(over, 429, 'quota_exceeded');
      assert.equal(over.headers['x-ratelimit-limit'], '2');
      assert.equal(over.headers['x-ratelimit-remaining'], '0');
      assert.ok(Number(over.headers['retry-after']) >= 1);
      assertError(await quotaCtx.get(url('/catalogue/999')), 429, 'quota_exceeded');
      // Earlier steps still decide.
      assertError(await quotaCtx.get(url('/catalogue?limit=0')), 400, 'bad_request');
      assertError(await quotaCtx.get(url('/catalogue'), 'alice-noscope'), 403, 'insufficient_scope');
      assertError(await quotaCtx.get(url('/no-such-route')), 404, 'not_found');
      assert.equal((await quotaCtx.get(url('/catalogue'), 'alice', { method: 'OPTIONS' })).statusCode, 204);
      const meRes = await quotaCtx.get(url('/me'));
      assert.equal(meRes.statusCode, 200, '/me never counts, so it is still served');
      assert.deepEqual((JSON.parse(meRes.body) as { usage: unknown }).usage, { period: '2026-11', used: 2, remaining: 0 });
      assert.equal(await quotaUsed(quotaCtx, 'alice'), 2);
    });
  });
});
