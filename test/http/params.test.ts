// Step 8 of the request pipeline: every 400 of docs/contract.md, "Parameters", each naming the parameter at fault,
// the values at the edges that are accepted, and the rule that a 400 never counts against the quota.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ctx, useApiTestApp } from '../helpers/api-test-app.js';
import { assertError, nextWindow, quotaUsed, url } from '../helpers/pipeline-helpers.js';

useApiTestApp();

interface Page<T> {
  data: T[];
  pagination: { total: number; limit: number; offset: number; hasMore: boolean };
}

interface BadCase {
  label: string;
  /** Path and query under /developer/v1. */
  path: string;
  /** The parameter the message must name. */
  param: string;
}

/** A 400 bad_request whose message names the parameter, in quotes. */
async function assertBadParam(c: BadCase): Promise<void> {
  const res = await ctx.get(url(c.path));
  const body = assertError(res, 400, 'bad_request');
  assert.ok(body.message.includes(`'${c.param}'`), `the message names '${c.param}': ${body.message}`);
}

async function okPage<T = unknown>(path: string): Promise<Page<T>> {
  const res = await ctx.get(url(path));
  assert.equal(res.statusCode, 200, `${path}: ${res.body}`);
  return JSON.parse(res.body) as Page<T>;
}

const LIST_ROUTES = ['/catalogue', '/prices', '/collection', '/listings', '/offers', '/transactions'];
const ID_ROUTES: Array<[string, string]> = [
  ['/catalogue', 'id'],
  ['/prices', 'masterItemId'],
  ['/collection', 'id'],
];

const unknownCases: BadCase[] = [
  ...LIST_ROUTES.map((r) => ({ label: `unknown parameter on ${r}`, path: `${r}?foo=1`, param: 'foo' })),
  { label: 'unknown parameter on /me', path: '/me?foo=1', param: 'foo' },
  { label: 'unknown parameter on /collection/value', path: '/collection/value?foo=1', param: 'foo' },
  { label: 'unknown parameter on /catalogue/1', path: '/catalogue/1?foo=1', param: 'foo' },
  { label: 'unknown parameter on /prices/1', path: '/prices/1?foo=1', param: 'foo' },
  { label: 'unknown parameter on /collection/1', path: '/collection/1?foo=1', param: 'foo' },
  { label: 'unknown parameter next to valid ones', path: '/catalogue?limit=5&bogus=x', param: 'bogus' },
  { label: 'parameter names are case-sensitive (Limit)', path: '/catalogue?Limit=5', param: 'Limit' },
  { label: 'limit on /me', path: '/me?limit=5', param: 'limit' },
  { label: 'limit on /catalogue/1', path: '/catalogue/1?limit=5', param: 'limit' },
  { label: 'category on /prices (not listed there)', path: '/prices?category=game', param: 'category' },
  { label: 'search on /collection (not listed there)', path: '/collection?search=zelda', param: 'search' },
  { label: 'limit on /prices/export.csv', path: '/prices/export.csv?limit=5', param: 'limit' },
  { label: 'offset on /prices/export.csv', path: '/prices/export.csv?offset=0', param: 'offset' },
  { label: 'category on /prices/export.csv', path: '/prices/export.csv?category=game', param: 'category' },
  { label: 'a key in the query string of an authenticated request', path: '/catalogue?api_key=x', param: 'api_key' },
  // Names of Object.prototype members are unknown parameters like any other (they once passed as known).
  ...['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'].flatMap((name) => [
    { label: `${name} on /catalogue`, path: `/catalogue?${name}=1`, param: name },
    { label: `${name} on /me`, path: `/me?${name}=1`, param: name },
    { label: `${name} on /catalogue/1`, path: `/catalogue/1?${name}=1`, param: name },
  ]),
  { label: 'an empty name', path: '/catalogue?=5', param: '' },
];

const repeatedCases: BadCase[] = [
  { label: 'limit twice', path: '/catalogue?limit=5&limit=6', param: 'limit' },
  { label: 'limit twice, same value', path: '/collection?limit=5&limit=5', param: 'limit' },
  { label: 'search twice', path: '/catalogue?search=zelda&search=mario', param: 'search' },
  { label: 'platform twice', path: '/prices?platform=a&platform=b', param: 'platform' },
  { label: 'upc twice on the export', path: '/prices/export.csv?upc=045496870010&upc=045496870010', param: 'upc' },
];

const emptyCases: BadCase[] = [
  { label: 'platform=', path: '/catalogue?platform=', param: 'platform' },
  { label: 'category=', path: '/catalogue?category=', param: 'category' },
  { label: 'search=', path: '/catalogue?search=', param: 'search' },
  { label: 'upc=', path: '/prices?upc=', param: 'upc' },
  { label: 'limit=', path: '/listings?limit=', param: 'limit' },
  { label: 'offset=', path: '/offers?offset=', param: 'offset' },
  { label: 'a bare name (platform)', path: '/catalogue?platform', param: 'platform' },
  { label: 'platform= on the export', path: '/prices/export.csv?platform=', param: 'platform' },
];

const BAD_LIMITS: Array<[string, string]> = [
  ['0', '0'],
  ['101', '101'],
  ['-1', '-1'],
  ['1.5', '1.5'],
  ['1e2', '1e2'],
  ['abc', 'abc'],
  ["' 5'", '%205'],
  ["'5 '", '5%20'],
  ["'+5'", '%2B5'],
  ['5.0', '5.0'],
  ['0x10', '0x10'],
  ['full-width digits', '%EF%BC%95'],
  ['Arabic-Indic digit', '%D9%A5'],
  ['a huge number', '99999999999999999999999'],
];

const BAD_OFFSETS: Array<[string, string]> = [
  ['-1', '-1'],
  ['1000000001', '1000000001'],
  ['1.5', '1.5'],
  ['1e2', '1e2'],
  ['abc', 'abc'],
  ["' 5'", '%205'],
  ["'+5'", '%2B5'],
];

const BAD_IDS: Array<[string, string]> = [
  ['0', '0'],
  ['-1', '-1'],
  ['abc', 'abc'],
  ['1.0', '1.0'],
  ['1e2', '1e2'],
  ["'+1'", '%2B1'],
  ["' 1'", '%201'],
  ['9007199254740992 (2^53)', '9007199254740992'],
  ['a huge number', '123456789012345678901234567890'],
];

const upcCases: BadCase[] = [
  { label: 'upc of 5 digits', path: '/catalogue?upc=12345', param: 'upc' },
  { label: 'upc of 15 digits', path: '/catalogue?upc=123456789012345', param: 'upc' },
  { label: 'upc with letters', path: '/catalogue?upc=04549687001A', param: 'upc' },
  { label: 'upc of letters only', path: '/prices?upc=abcdefgh', param: 'upc' },
  { label: 'upc with a space', path: '/prices?upc=045496%20870010', param: 'upc' },
  { label: 'upc with a sign', path: '/prices?upc=%2B45496870010', param: 'upc' },
  { label: 'upc with full-width digits', path: '/prices?upc=%EF%BC%91%EF%BC%92%EF%BC%93%EF%BC%94%EF%BC%95%EF%BC%96', param: 'upc' },
  { label: 'upc of 5 digits on the export', path: '/prices/export.csv?upc=12345', param: 'upc' },
];

const searchCases: BadCase[] = [
  { label: 'search of one space', path: '/catalogue?search=%20', param: 'search' },
  { label: 'search of only spaces', path: '/catalogue?search=%20%20%20', param: 'search' },
  { label: 'search of only spaces (plus-encoded)', path: '/prices?search=+++', param: 'search' },
  { label: 'search of only white space (tab, newline)', path: '/prices?search=%09%0A', param: 'search' },
  { label: 'search of only Unicode white space (NEL, no-break, ideographic space)', path: '/catalogue?search=%C2%85%C2%A0%E3%80%80', param: 'search' },
  { label: 'search of 201 characters', path: `/catalogue?search=${'a'.repeat(201)}`, param: 'search' },
  { label: 'search of 201 characters on the export', path: `/prices/export.csv?search=${'a'.repeat(201)}`, param: 'search' },
];

// Decoded values must be text: no control character (C0, DEL, C1) and nothing that is not UTF-8. A NUL once
// reached the stores (SQLite's FTS5 "unterminated string", PostgreSQL's "invalid byte sequence": 500s).
const characterCases: BadCase[] = [
  { label: 'a NUL inside search', path: '/catalogue?search=a%00b', param: 'search' },
  { label: 'search of only a NUL', path: '/catalogue?search=%00', param: 'search' },
  { label: 'a NUL at the end of platform', path: '/catalogue?platform=nes%00', param: 'platform' },
  { label: 'a NUL in category', path: '/catalogue?category=%00game', param: 'category' },
  { label: 'a NUL in platform on /prices', path: '/prices?platform=nes%00', param: 'platform' },
  { label: 'a NUL in search on the export', path: '/prices/export.csv?search=zelda%00', param: 'search' },
  { label: 'a NUL in upc', path: '/prices?upc=045496870010%00', param: 'upc' },
  { label: 'a NUL in limit', path: '/catalogue?limit=5%00', param: 'limit' },
  { label: 'a C0 control (U+0001) in search', path: '/catalogue?search=zelda%01', param: 'search' },
  { label: 'a vertical tab is white space, a U+0001 beside it is not', path: '/catalogue?search=zelda%0B%01', param: 'search' },
  { label: 'an escape (U+001B) in platform', path: '/catalogue?platform=%1B%5B31m', param: 'platform' },
  { label: 'DEL (U+007F) in category', path: '/catalogue?category=game%7F', param: 'category' },
  { label: 'a C1 control (U+0080) in search', path: '/prices?search=zelda%C2%80', param: 'search' },
  { label: 'a C1 control (U+009B) in search on the export', path: '/prices/export.csv?search=zelda%C2%9B', param: 'search' },
  { label: 'a tab in platform (white space only separates search terms)', path: '/catalogue?platform=nintendo%0964', param: 'platform' },
  { label: 'a byte that is not UTF-8 (%FF) in search', path: '/catalogue?search=%FF', param: 'search' },
  { label: 'a truncated UTF-8 sequence in platform', path: '/catalogue?platform=%E2%82', param: 'platform' },
  { label: 'an encoded lone surrogate (CESU-8) in search', path: '/catalogue?search=%ED%A0%80', param: 'search' },
  { label: 'an over-long encoding of "/" in category', path: '/catalogue?category=%C0%AF', param: 'category' },
  { label: 'a broken escape (%2) in search', path: '/catalogue?search=a%2', param: 'search' },
  { label: 'a NUL as a path id', path: '/catalogue/%00', param: 'id' },
  { label: 'a NUL after a path id', path: '/prices/1%00', param: 'masterItemId' },
];

function limitCases(): BadCase[] {
  const out: BadCase[] = [];
  for (const [label, value] of BAD_LIMITS) {
    for (const route of LIST_ROUTES) out.push({ label: `limit ${label} on ${route}`, path: `${route}?limit=${value}`, param: 'limit' });
  }
  return out;
}

function offsetCases(): BadCase[] {
  const out: BadCase[] = [];
  for (const [label, value] of BAD_OFFSETS) {
    for (const route of LIST_ROUTES) out.push({ label: `offset ${label} on ${route}`, path: `${route}?offset=${value}`, param: 'offset' });
  }
  return out;
}

function idCases(): BadCase[] {
  const out: BadCase[] = [];
  for (const [label, value] of BAD_IDS) {
    for (const [route, param] of ID_ROUTES) out.push({ label: `${route}/${label}`, path: `${route}/${value}`, param });
  }
  return out;
}

const groups: Array<[string, BadCase[]]> = [
  ['unknown query parameters', unknownCases],
  ['a parameter given twice', repeatedCases],
  ['an empty value', emptyCases],
  ['limit outside 1..100 or not ASCII digits', limitCases()],
  ['offset outside 0..1000000000 or not ASCII digits', offsetCases()],
  ['path ids outside 1..9007199254740991 or not ASCII digits', idCases()],
  ['upc other than 6..14 ASCII digits', upcCases],
  ['search empty of non-space or longer than 200', searchCases],
  ['control characters or bytes that are not UTF-8', characterCases],
];

describe('400 bad_request, naming the parameter', () => {
  for (const [name, cases] of groups) {
    describe(name, () => {
      for (const c of cases) {
        test(c.label, async () => {
          await assertBadParam(c);
        });
      }
    });
  }
});

describe('values at the edges that are accepted', () => {
  test('limit with leading zeros is decimal: 05 is 5', async () => {
    const page = await okPage('/catalogue?limit=05');
    assert.equal(page.pagination.limit, 5);
    assert.equal(page.data.length, 5);
    assert.equal((await okPage('/catalogue?limit=0100')).pagination.limit, 100);
  });

  test('limit 1 and 100 are accepted, default 50', async () => {
    assert.equal((await okPage('/catalogue?limit=1')).data.length, 1);
    assert.equal((await okPage('/catalogue?limit=100')).pagination.limit, 100);
    assert.equal((await okPage('/catalogue')).pagination.limit, 50);
    assert.equal((await okPage('/catalogue')).pagination.offset, 0);
  });

  test('offset 0 and 1000000000 are accepted; 007 is 7', async () => {
    assert.equal((await okPage('/catalogue?offset=0')).pagination.offset, 0);
    const max = await okPage('/catalogue?offset=1000000000');
    assert.equal(max.pagination.offset, 1_000_000_000);
    assert.deepEqual(max.data, []);
    assert.equal(max.pagination.hasMore, false);
    assert.equal((await okPage('/catalogue?offset=007')).pagination.offset, 7);
  });

  test('an offset past the end: 200, data [], hasMore false, on every list route', async () => {
    for (const route of LIST_ROUTES) {
      const page = await okPage(`${route}?offset=1000`);
      assert.deepEqual(page.data, [], route);
      assert.equal(page.pagination.hasMore, false, route);
      assert.equal(page.pagination.offset, 1000, route);
      assert.ok(page.pagination.total < 1000, route);
    }
  });

  test('path id 9007199254740991 is valid but missing: 404 not_found', async () => {
    for (const [route] of ID_ROUTES) assertError(await ctx.get(url(`${route}/9007199254740991`)), 404, 'not_found');
  });

  test('path ids with leading zeros are decimal: /catalogue/01 is item 1', async () => {
    const res = await ctx.get(url('/catalogue/01'));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((JSON.parse(res.body) as { data: { masterItemId: number } }).data.masterItemId, 1);
    assert.equal((await ctx.get(url('/prices/0001'))).statusCode, 200);
    assert.equal((await ctx.get(url('/collection/01'))).statusCode, 200);
  });

  test('search of exactly 200 characters: 200', async () => {
    const page = await okPage(`/catalogue?search=${'a'.repeat(200)}`);
    assert.deepEqual(page.data, []);
    const prices = await ctx.get(url(`/prices/export.csv?search=${'a'.repeat(200)}`));
    assert.equal(prices.statusCode, 200);
  });

  test('search counts characters, not bytes: 200 accented letters pass, 201 do not', async () => {
    const e = encodeURIComponent('é');
    assert.equal((await ctx.get(url(`/catalogue?search=${e.repeat(200)}`))).statusCode, 200);
    await assertBadParam({ label: '201 é', path: `/catalogue?search=${e.repeat(201)}`, param: 'search' });
  });

  test('search with spaces around a term is accepted', async () => {
    const page = await okPage<{ masterItemId: number }>('/catalogue?search=%20mario%20');
    assert.deepEqual(page.data.map((i) => i.masterItemId), [3]);
  });

  test('any white space separates search terms: tab, line breaks and the other Unicode white space', async () => {
    // docs/contract.md, "Parameters": the same terms as a space would give, on every route that searches.
    const separators = ['%09', '%0A', '%0D%0A', '%0B', '%0C', '%C2%85', '%C2%A0', '%E2%80%83', '%E2%80%A8', '%E3%80%80', '%09%20%0A'];
    for (const separator of separators) {
      const page = await okPage<{ masterItemId: number }>(`/catalogue?search=super${separator}mario`);
      assert.deepEqual(page.data.map((i) => i.masterItemId), [3], separator);
      const prices = await okPage<{ masterItemId: number }>(`/prices?search=${separator}mario${separator}64${separator}`);
      assert.deepEqual(prices.data.map((r) => r.masterItemId), [3], separator);
      const csv = await ctx.get(url(`/prices/export.csv?search=ocarina${separator}zelda`));
      assert.equal(csv.statusCode, 200, `${separator}: ${csv.body}`);
      assert.equal(csv.body.trim().split('\n').length, 2, `${separator}: the header and Zelda's row`);
    }
    // A term is not split on what is not white space (a zero-width no-break space stays inside the term).
    assert.deepEqual((await okPage('/catalogue?search=super%EF%BB%BFmario')).data, []);
  });

  test('upc of 6 and 14 digits is accepted', async () => {
    assert.deepEqual((await okPage('/catalogue?upc=123456')).data, []);
    assert.deepEqual((await okPage('/prices?upc=12345678901234')).data, []);
    const hit = await okPage<{ masterItemId: number }>('/prices?upc=045496870010');
    assert.deepEqual(hit.data.map((r) => r.masterItemId), [1]);
  });

  test('every listed parameter together is accepted', async () => {
    await okPage('/catalogue?search=zelda&platform=nintendo%2064&category=GAME&upc=045496870010&limit=10&offset=0');
    await okPage('/prices?search=zelda&platform=nintendo%2064&upc=045496870010&limit=10&offset=0');
    const csv = await ctx.get(url('/prices/export.csv?search=zelda&platform=nintendo%2064&upc=045496870010'));
    assert.equal(csv.statusCode, 200);
  });
});

describe('a 400 never counts against the quota', () => {
  test('every 400 case above leaves the quota untouched', async () => {
    const start = await quotaUsed(ctx, 'alice');
    const all = groups.flatMap(([, cases]) => cases);
    let n = 0;
    for (const c of all) {
      // Keep under the burst limit (120 per minute): the test is about the quota.
      if (++n % 100 === 0) nextWindow(ctx);
      const res = await ctx.get(url(c.path));
      assert.equal(res.statusCode, 400, `${c.label}: ${res.body}`);
    }
    assert.equal(await quotaUsed(ctx, 'alice'), start);
    const me = await ctx.get(url('/me'));
    assert.equal((JSON.parse(me.body) as { usage: { used: number } }).usage.used, start);
  });

  test('HEAD with a bad parameter: 400, no body, not counted', async () => {
    const start = await quotaUsed(ctx, 'alice');
    const res = await ctx.get(url('/catalogue?limit=0'), 'alice', { method: 'HEAD' });
    assert.equal(res.statusCode, 400);
    assert.equal(res.body, '');
    assert.equal(await quotaUsed(ctx, 'alice'), start);
  });
});
