// The order of checks of docs/contract.md, "Request pipeline" (method, key, allowed addresses, access, burst, route, scope, parameters,
// quota, handler), HEAD and OPTIONS, what is metered and what is not, and the response rules of "Responses".
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { changePlan } from '../../src/services/accounts.service.js';
import { OPERATOR } from '../../src/services/actor.js';
import { revokeKey } from '../../src/services/keys.service.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import {
  ALLOW_HEADER,
  ENDPOINTS,
  JSON_TYPE,
  assertCommonHeaders,
  assertError,
  burstLeft,
  keyIdOf,
  keyOf,
  me,
  nextWindow,
  quotaUsed,
  raw,
  remaining,
  url,
} from '../helpers/pipeline-helpers.js';

const OTHER_METHODS = ['POST', 'PUT', 'DELETE', 'PATCH'] as const;

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext();
});

after(async () => {
  await ctx.close();
});

// Every test starts with an empty burst window (the clock is manual), so burst counts can be compared exactly.
beforeEach(() => {
  nextWindow(ctx);
});

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

describe('metering of each outcome', () => {
  test('/me does not count against the quota but counts toward the burst', async () => {
    const usedBefore = await quotaUsed(ctx, 'alice');
    const first = await me(ctx);
    const second = await me(ctx);
    const third = await me(ctx, 'alice-second');
    assert.equal(burstLeft(second.res), burstLeft(first.res) - 1);
    assert.equal(burstLeft(third.res), burstLeft(first.res) - 2, "the account's keys share one window");
    assert.equal(await quotaUsed(ctx, 'alice'), usedBefore);
    assert.equal(second.used, first.used);
    assert.equal(remaining(second.res), remaining(first.res));
  });

  test('a 400 and a 403 insufficient_scope do not consume quota; a 404 for a missing item does', async () => {
    const start = await quotaUsed(ctx, 'alice');
    const bad = await ctx.get(url('/catalogue?limit=0'));
    assertError(bad, 400, 'bad_request');
    assertError(await ctx.get(url('/catalogue/abc')), 400, 'bad_request');
    assertError(await ctx.get(url('/catalogue'), 'alice-noscope'), 403, 'insufficient_scope');
    assertError(await ctx.get(url('/prices/export.csv'), 'alice-noscope'), 403, 'insufficient_scope');
    assert.equal(await quotaUsed(ctx, 'alice'), start, 'no quota used by 400 and 403');

    const missing = await ctx.get(url('/catalogue/999'));
    assertError(missing, 404, 'not_found');
    assert.equal(await quotaUsed(ctx, 'alice'), start + 1, 'the missing item counted');
    assert.equal(remaining(missing), 50_000 - (start + 1), 'and carries the rate-limit headers of a metered response');
    assert.equal(missing.headers['x-ratelimit-limit'], '50000');

    assertError(await ctx.get(url('/collection/6')), 404, 'not_found');
    assertError(await ctx.get(url('/prices/5')), 404, 'not_found');
    assert.equal(await quotaUsed(ctx, 'alice'), start + 3, "another owner's item and an unpublished price count too");
  });

  test('401 and 403 forbidden are not metered for the account', async () => {
    const first = await me(ctx);
    const start = await quotaUsed(ctx, 'alice');
    assertError(await ctx.get(url('/catalogue'), 'alice-revoked'), 401, 'unauthorized');
    assertError(await ctx.get(url('/catalogue'), 'alice-expired'), 401, 'unauthorized');
    assert.equal(await quotaUsed(ctx, 'alice'), start);
    const second = await me(ctx);
    assert.equal(burstLeft(second.res), burstLeft(first.res) - 1, 'refused keys take no burst slot of the account');

    const carolStart = await quotaUsed(ctx, 'carol');
    assertError(await ctx.get(url('/catalogue'), 'carol'), 403, 'forbidden');
    assert.equal(await quotaUsed(ctx, 'carol'), carolStart);
  });

  test('a successful GET counts once and X-RateLimit-Remaining follows', async () => {
    const start = await quotaUsed(ctx, 'alice');
    const res = await ctx.get(url('/listings'));
    assert.equal(res.statusCode, 200);
    assert.equal(await quotaUsed(ctx, 'alice'), start + 1);
    assert.equal(remaining(res), 50_000 - (start + 1));
    const after = await me(ctx);
    assert.equal(after.used, start + 1);
  });
});

describe('step 4 is checked against the store on every request', () => {
  describe('revocation', () => {
    // Its own store: the keys revoked here stay revoked.
    let revokeCtx: TestContext;
    before(async () => {
      revokeCtx = await createTestContext();
    });
    after(async () => {
      await revokeCtx.close();
    });

    test('a revoke takes effect on the very next request', async () => {
      const ok = await revokeCtx.get(url('/catalogue'), 'alice-second');
      assert.equal(ok.statusCode, 200);
      await revokeKey(revokeCtx.store, { keyId: await keyIdOf(revokeCtx, 'alice-second'), now: revokeCtx.clock.now(), keyPrefix: revokeCtx.config.keyPrefix, actor: OPERATOR });
      const body = assertError(await revokeCtx.get(url('/catalogue'), 'alice-second'), 401, 'unauthorized');
      assert.match(body.message, /revoked/i);
      assertError(await revokeCtx.get(url('/me'), 'alice-second'), 401, 'unauthorized');
      assert.equal((await revokeCtx.get(url('/catalogue'), 'alice')).statusCode, 200, "the account's other keys still work");
    });

    test('a revoked key is 401 even on a lapsed account: the key (step 2) is checked before the plan (step 4)', async () => {
      assertError(await revokeCtx.get(url('/catalogue'), 'carol'), 403, 'forbidden');
      await revokeKey(revokeCtx.store, { keyId: await keyIdOf(revokeCtx, 'carol'), now: revokeCtx.clock.now(), keyPrefix: revokeCtx.config.keyPrefix, actor: OPERATOR });
      assertError(await revokeCtx.get(url('/catalogue'), 'carol'), 401, 'unauthorized');
    });
  });

  test('scope (step 7) is checked before parameters (step 8)', async () => {
    assertError(await ctx.get(url('/catalogue?limit=0&bogus=1'), 'alice-noscope'), 403, 'insufficient_scope');
    assertError(await ctx.get(url('/catalogue/abc'), 'alice-noscope'), 403, 'insufficient_scope');
  });

  describe('expiry', () => {
    let expiryCtx: TestContext;
    before(async () => {
      expiryCtx = await createTestContext({ now: '2026-12-31T23:59:59.999Z' });
    });
    after(async () => {
      await expiryCtx.close();
    });

    test('a key expires at the instant of its expiry (alice-expiring, 2027-01-01T00:00:00.000Z)', async () => {
      assert.equal((await expiryCtx.get(url('/me'), 'alice-expiring')).statusCode, 200);
      expiryCtx.clock.set('2027-01-01T00:00:00.000Z');
      const body = assertError(await expiryCtx.get(url('/me'), 'alice-expiring'), 401, 'unauthorized');
      assert.match(body.message, /expired/i);
      assert.equal((await expiryCtx.get(url('/me'), 'alice')).statusCode, 200, 'keys without an expiry still work');
    });
  });

  describe('plan changes', () => {
    let planCtx: TestContext;
    before(async () => {
      planCtx = await createTestContext();
    });
    after(async () => {
      await planCtx.close();
    });

    test('a lapse takes effect on the next request; a plan change keeps the month usage', async () => {
      const alice = planCtx.loaded.accounts.alice!;
      for (let i = 0; i < 3; i++) assert.equal((await planCtx.get(url('/catalogue'))).statusCode, 200);
      const before = await planCtx.get(url('/catalogue/1'));
      assert.equal(before.headers['x-ratelimit-limit'], '50000');
      assert.equal(remaining(before), 50_000 - 4);

      // enthusiast -> addon: the addon quota, the same month's count.
      await changePlan(planCtx.store, { accountId: alice, plan: 'addon' });
      const addon = await planCtx.get(url('/catalogue/1'));
      assert.equal(addon.statusCode, 200);
      assert.equal(addon.headers['x-ratelimit-limit'], '10000');
      assert.equal(remaining(addon), 10_000 - 5, 'the used count is kept');
      const meAddon = JSON.parse((await planCtx.get(url('/me'))).body) as {
        plan: string;
        limits: { monthly: number; perMinute: number };
        usage: { used: number; remaining: number };
      };
      assert.equal(meAddon.plan, 'addon');
      assert.deepEqual(meAddon.limits, { monthly: 10_000, perMinute: 60 });
      assert.equal(meAddon.usage.used, 5);
      assert.equal(meAddon.usage.remaining, 10_000 - 5);

      // A lapse: refused on the next request, for every key of the account, /me included.
      await changePlan(planCtx.store, { accountId: alice, plan: 'addon', planStatus: 'lapsed' });
      assertError(await planCtx.get(url('/catalogue/1')), 403, 'forbidden');
      assertError(await planCtx.get(url('/catalogue/1'), 'alice-second'), 403, 'forbidden');
      assertError(await planCtx.get(url('/me')), 403, 'forbidden');
      assert.equal(await quotaUsed(planCtx, 'alice'), 5, 'refused requests are not counted');

      // No plan at all: refused the same way.
      await changePlan(planCtx.store, { accountId: alice, plan: 'none' });
      assertError(await planCtx.get(url('/catalogue/1')), 403, 'forbidden');

      // Back to enthusiast: served again, still the same month's count.
      await changePlan(planCtx.store, { accountId: alice, plan: 'enthusiast' });
      const back = await planCtx.get(url('/catalogue/1'));
      assert.equal(back.statusCode, 200);
      assert.equal(back.headers['x-ratelimit-limit'], '50000');
      assert.equal(remaining(back), 50_000 - 6);
    });
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
