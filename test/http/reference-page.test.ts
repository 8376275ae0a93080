// The reference page at /developer/docs, without a browser: public (no key, never metered, no rate-limit
// headers), serving exactly the committed openapi.json and a fixed list of files, and leaving the
// Developer API's own rules untouched. The browser test beside this one checks what the page renders.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { CONTENT_SECURITY_POLICY, DOCS_PATH } from '../../src/http/api/reference-page.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';
import { ALLOW_HEADER, JSON_TYPE, assertError, burstLeft, keyOf, nextWindow, quotaUsed, raw, url } from '../helpers/pipeline-helpers.js';

const committed = readFileSync(new URL('../../openapi.json', import.meta.url));
const PER_MINUTE = 3;

let ctx: TestContext;

before(async () => {
  // A tiny burst limit: any request of the page that were counted would show at once.
  ctx = await createTestContext({
    env: { PLAN_LIMITS: JSON.stringify({ enthusiast: { perMinute: PER_MINUTE, monthly: 1000 } }) },
  });
});

after(async () => {
  await ctx.close();
});

beforeEach(() => {
  nextWindow(ctx);
});

/** The URLs the page's HTML loads, in order (its stylesheets, icons and scripts). */
function linkedUrls(html: string): string[] {
  return [...html.matchAll(/\b(?:href|src)="([^"]*)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));
}

async function pageUrls(): Promise<string[]> {
  const res = await raw(ctx, DOCS_PATH);
  assert.equal(res.statusCode, 200);
  return linkedUrls(res.body);
}

function assertNoRateLimitHeaders(res: LightMyRequestResponse): void {
  const names = Object.keys(res.headers).filter((h) => /^(x-ratelimit-|ratelimit|retry-after)/i.test(h));
  assert.deepEqual(names, [], `no rate-limit headers on ${res.statusCode}`);
}

function assertPublicOk(res: LightMyRequestResponse, type: string, cacheControl: string): void {
  assert.equal(res.statusCode, 200, res.body.slice(0, 200));
  assert.equal(res.headers['content-type'], type);
  assert.equal(res.headers['cache-control'], cacheControl);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(typeof res.headers['x-request-id'], 'string');
  assert.equal(res.headers['set-cookie'], undefined);
  assertNoRateLimitHeaders(res);
}

describe('the page and its files answer without any key', () => {
  test('the page: HTML, not cached without revalidation, with a strict Content-Security-Policy', async () => {
    const res = await raw(ctx, DOCS_PATH);
    assertPublicOk(res, 'text/html; charset=utf-8', 'no-cache');
    assert.equal(res.headers['content-security-policy'], CONTENT_SECURITY_POLICY);
    const csp = new Map(CONTENT_SECURITY_POLICY.split('; ').map((d) => [d.split(' ')[0]!, d.split(' ').slice(1)]));
    assert.deepEqual(csp.get('default-src'), ["'self'"]);
    assert.deepEqual(csp.get('script-src'), ["'self'"], 'no inline script, no eval, no other host');
    assert.deepEqual(csp.get('connect-src'), ["'self'"], '"Try it out" can only call this server');
    assert.deepEqual(csp.get('img-src'), ["'self'", 'data:']);
    assert.match(res.body, /<div id="swagger-ui"><\/div>/);
    assert.doesNotMatch(res.body, /<script>|<script [^>]*>[^<]/, 'no inline script');
  });

  test('/developer/docs/ (trailing slash) is the same page', async () => {
    const [plain, slash] = await Promise.all([raw(ctx, DOCS_PATH), raw(ctx, `${DOCS_PATH}/`)]);
    assertPublicOk(slash, 'text/html; charset=utf-8', 'no-cache');
    assert.equal(slash.body, plain.body);
  });

  test('everything the page links to is one of our own files, and each answers 200 cacheable', async () => {
    const urls = await pageUrls();
    assert.ok(urls.length >= 4, `the page links its stylesheet, icons and scripts: ${urls.join(', ')}`);
    const types: Record<string, string> = {
      css: 'text/css; charset=utf-8',
      js: 'text/javascript; charset=utf-8',
      png: 'image/png',
    };
    for (const link of urls.filter((u) => u !== `${DOCS_PATH}/openapi.json`)) {
      assert.match(link, /^\/developer\/docs\/[a-z0-9-]+\.(css|js|png)\?h=[0-9a-f]{16}$/, 'a relative URL on this server, content-addressed');
      const res = await raw(ctx, link);
      assertPublicOk(res, types[/\.([a-z]+)\?/.exec(link)![1]!]!, 'public, max-age=86400');
      assert.ok(res.rawPayload.length > 0, `${link} is not empty`);
    }
    assert.ok(urls.some((u) => u.startsWith(`${DOCS_PATH}/swagger-ui-bundle.js?`)));
    assert.ok(urls.some((u) => u.startsWith(`${DOCS_PATH}/init.js?`)));
  });

  test('the init script configures Swagger UI never to contact another host', async () => {
    const initUrl = (await pageUrls()).find((u) => u.startsWith(`${DOCS_PATH}/init.js?`))!;
    const script = (await raw(ctx, initUrl)).body;
    assert.match(script, /validatorUrl: null/);
    assert.match(script, /queryConfigEnabled: false/);
    assert.doesNotMatch(script, /https?:\/\//, 'no absolute URL');
  });

  test('the document is the committed openapi.json, byte for byte', async () => {
    const res = await raw(ctx, `${DOCS_PATH}/openapi.json`);
    assertPublicOk(res, JSON_TYPE, 'no-cache');
    assert.ok(res.rawPayload.equals(committed), 'served bytes equal openapi.json');
  });

  test('HEAD answers as GET, without a body', async () => {
    for (const path of [DOCS_PATH, `${DOCS_PATH}/openapi.json`, ...(await pageUrls())]) {
      const [get, head] = await Promise.all([raw(ctx, path), raw(ctx, path, {}, 'HEAD')]);
      assert.equal(head.statusCode, 200, path);
      assert.equal(head.body, '');
      assert.equal(head.headers['content-type'], get.headers['content-type']);
      assert.equal(head.headers['content-length'], get.headers['content-length']);
      assertNoRateLimitHeaders(head);
    }
  });

  test('OPTIONS answers 204 with Allow, without a key', async () => {
    for (const path of [DOCS_PATH, `${DOCS_PATH}/openapi.json`]) {
      const res = await raw(ctx, path, {}, 'OPTIONS');
      assert.equal(res.statusCode, 204, path);
      assert.equal(res.headers['allow'], ALLOW_HEADER);
      assertNoRateLimitHeaders(res);
    }
  });

  test('a key, even a malformed one, is never read there', async () => {
    const attempts: Array<Record<string, string>> = [
      { 'x-api-key': 'nonsense' },
      { authorization: 'Basic Zm9vOmJhcg==' },
      { 'x-api-key': keyOf(ctx, 'carol') },
    ];
    for (const headers of attempts) {
      assertPublicOk(await raw(ctx, DOCS_PATH, headers), 'text/html; charset=utf-8', 'no-cache');
      assertPublicOk(await raw(ctx, `${DOCS_PATH}/openapi.json`, headers), JSON_TYPE, 'no-cache');
    }
  });
});

describe('only a fixed list of files is served', () => {
  const refused = [
    'nope',
    'package.json',
    'LICENSE',
    'index.html',
    'swagger-initializer.js',
    'swagger-ui-bundle.js.map',
    'oauth2-redirect.html',
    'OPENAPI.JSON',
    'a/b',
    '..%2Fpackage.json',
    '..%2F..%2F..%2Fpackage.json',
    '%2e%2e%2f%2e%2e%2fopenapi.json',
    '..%5c..%5cpackage.json',
    '%00swagger-ui.css',
  ];

  for (const name of refused) {
    test(`${DOCS_PATH}/${name} is refused 404 not_found, with or without a key, unmetered`, async () => {
      const attempts: Array<Record<string, string>> = [{}, { 'x-api-key': keyOf(ctx, 'alice') }];
      for (const headers of attempts) {
        const res = await raw(ctx, `${DOCS_PATH}/${name}`, headers);
        assert.equal(res.statusCode, 404, res.body);
        assert.equal(res.headers['content-type'], JSON_TYPE);
        assert.deepEqual(JSON.parse(res.body), { error: 'not_found', message: 'No such file of the API reference page.' });
        assert.equal(res.headers['cache-control'], 'no-store');
        assertNoRateLimitHeaders(res);
      }
    });
  }

  test('a path that normalizes out of /developer/docs is the Developer API pipeline again (401 without a key)', async () => {
    assertError(await raw(ctx, `${DOCS_PATH}/../../package.json`), 401, 'unauthorized');
    assertError(await raw(ctx, '/developer/docsx'), 401, 'unauthorized');
  });

  test('methods other than GET, HEAD and OPTIONS stay 405', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await raw(ctx, DOCS_PATH, {}, method);
      assertError(res, 405, 'method_not_allowed');
      assert.equal(res.headers['allow'], ALLOW_HEADER);
    }
  });
});

describe('the page is outside the Developer API', () => {
  test('reading the page and its files with a key counts toward neither the burst nor the quota', async () => {
    const key = { 'x-api-key': keyOf(ctx, 'alice') };
    const quotaBefore = await quotaUsed(ctx, 'alice');
    const paths = [DOCS_PATH, `${DOCS_PATH}/openapi.json`, ...(await pageUrls()), `${DOCS_PATH}/nope`];
    // Several times the burst limit: were any of them counted, /me below would be rate-limited.
    for (let round = 0; round < PER_MINUTE * 2; round++) {
      for (const path of paths) {
        assertNoRateLimitHeaders(await raw(ctx, path, key));
        assertNoRateLimitHeaders(await raw(ctx, path, key, 'HEAD'));
      }
    }
    assert.equal(await quotaUsed(ctx, 'alice'), quotaBefore, 'quota untouched');
    const me = await ctx.get(url('/me'), 'alice');
    assert.equal(me.statusCode, 200, me.body);
    assert.equal(burstLeft(me), PER_MINUTE - 1, '/me is the first request of the window');
    assert.equal(me.headers['x-ratelimit-remaining'] !== undefined, true);
  });

  test('the Developer API still needs a key', async () => {
    assertError(await ctx.get(url('/me'), null), 401, 'unauthorized');
    assertError(await ctx.get(url('/catalogue'), null), 401, 'unauthorized');
    assertError(await ctx.get(url('/docs'), null), 401, 'unauthorized');
    assertError(await ctx.get('/developer/v1/openapi.json', null), 401, 'unauthorized');
    const withKey = await ctx.get(url('/catalogue'), 'alice');
    assert.equal(withKey.statusCode, 200);
    assert.equal(withKey.headers['cache-control'], 'private, no-store');
    assert.ok(withKey.headers['x-ratelimit-remaining'] !== undefined);
  });

  test('the page is not part of the OpenAPI document', () => {
    const doc = ctx.app.swagger() as { paths: Record<string, unknown> };
    const paths = Object.keys(doc.paths);
    assert.ok(paths.length > 0);
    assert.deepEqual(paths.filter((p) => !p.startsWith('/developer/v1/')), []);
  });
});
