// Steps 2 to 4 of the request pipeline (docs/contract.md, "Request pipeline") and the error shape of "Responses", as one
// battery that every one of the 12 endpoints must pass: how a key is presented, which keys are refused
// with 401, which accounts with 403, and what every refusal looks like.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKey, isWellFormedKey } from '../../src/keys/api-key.js';
import { ctx, useApiTestApp } from '../helpers/api-test-app.js';
import {
  ENDPOINTS,
  JSON_TYPE,
  assertCommonHeaders,
  assertError,
  assertNoKeyLeak,
  flipLastChar,
  keyOf,
  raw,
  url,
} from '../helpers/pipeline-helpers.js';

useApiTestApp();

describe('the key battery holds for every endpoint', () => {
  test('the list covers the 12 endpoints of the specification', () => {
    assert.equal(ENDPOINTS.length, 12);
    assert.equal(new Set(ENDPOINTS.map((e) => e.path)).size, 12);
  });

  for (const endpoint of ENDPOINTS) {
    const path = url(endpoint.path);

    describe(`GET ${endpoint.path}`, () => {
      /** A refusal: the exact error body, the common headers, and the key nowhere in the response. */
      async function refused(headers: Record<string, string | string[]>, status: number, code: string, key?: string, target = path) {
        const res = await raw(ctx, target, headers);
        const body = assertError(res, status, code);
        if (key !== undefined) assertNoKeyLeak(res, key);
        return body;
      }

      test('a valid key in X-API-Key: 200', async () => {
        const res = await raw(ctx, path, { 'x-api-key': keyOf(ctx, 'alice') });
        assert.equal(res.statusCode, 200, res.body);
        assertCommonHeaders(res);
        assert.equal(res.headers['content-type'], endpoint.csv ? 'text/csv; charset=utf-8' : JSON_TYPE);
      });

      for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
        test(`Authorization: ${scheme} <key> works (the scheme is case-insensitive)`, async () => {
          const res = await raw(ctx, path, { authorization: `${scheme} ${keyOf(ctx, 'alice')}` });
          assert.equal(res.statusCode, 200, res.body);
          assertCommonHeaders(res);
        });
      }

      test('no key at all: 401 unauthorized', async () => {
        await refused({}, 401, 'unauthorized');
      });

      test('HEAD without a key: 401 with no body', async () => {
        const res = await raw(ctx, path, {}, 'HEAD');
        assert.equal(res.statusCode, 401);
        assertCommonHeaders(res);
        assert.equal(res.body, '');
      });

      for (const [label, value] of [
        ['an empty X-API-Key', ''],
        ['a word', 'hello'],
        ['the prefix alone', 'shelf_live_'],
        ['a key of another prefix (its checksum holds)', generateKey('other')],
        ['a key of the test environment form', generateKey('shelf').replace('_live_', '_test_')],
        ['a key one character short', generateKey('shelf').slice(0, -1)],
        ['a key one character long', `${generateKey('shelf')}0`],
        ['a key with a non-base62 character', generateKey('shelf').replace(/_live_(.)/, '_live_-')],
      ] as const) {
        test(`a malformed key (${label}): 401 unauthorized`, async () => {
          await refused({ 'x-api-key': value }, 401, 'unauthorized', value.length > 0 ? value : undefined);
          if (value !== '') await refused({ authorization: `Bearer ${value}` }, 401, 'unauthorized', value);
        });
      }

      test('a well-formed key with a valid checksum that is not in the store: 401', async () => {
        const unknown = generateKey(ctx.config.keyPrefix);
        assert.ok(isWellFormedKey(unknown, ctx.config.keyPrefix), 'the generated key passes the checksum');
        await refused({ 'x-api-key': unknown }, 401, 'unauthorized', unknown);
        await refused({ authorization: `Bearer ${unknown}` }, 401, 'unauthorized', unknown);
      });

      test('a real key with its last character changed (wrong checksum): 401', async () => {
        const real = keyOf(ctx, 'alice');
        const flipped = flipLastChar(real);
        assert.notEqual(flipped, real);
        await refused({ 'x-api-key': flipped }, 401, 'unauthorized', flipped);
        const res = await raw(ctx, path, { 'x-api-key': flipped });
        assertNoKeyLeak(res, real);
      });

      test('both headers at once, even with the same valid key: 401', async () => {
        const key = keyOf(ctx, 'alice');
        await refused({ 'x-api-key': key, authorization: `Bearer ${key}` }, 401, 'unauthorized', key);
        await refused({ 'x-api-key': key, authorization: `Bearer ${keyOf(ctx, 'alice-second')}` }, 401, 'unauthorized', key);
      });

      test('a key header given twice, even with the same valid key: 401', async () => {
        const key = keyOf(ctx, 'alice');
        const second = keyOf(ctx, 'alice-second');
        await refused({ authorization: [`Bearer ${key}`, `Bearer ${key}`] }, 401, 'unauthorized', key);
        await refused({ authorization: [`Bearer ${key}`, `Bearer ${second}`] }, 401, 'unauthorized', key);
        await refused({ authorization: [`Bearer ${key}`, 'Basic eDp5'] }, 401, 'unauthorized', key);
        await refused({ 'x-api-key': [key, key] }, 401, 'unauthorized', key);
      });

      for (const scheme of ['Basic', 'Token', 'Digest', 'ApiKey']) {
        test(`Authorization with the ${scheme} scheme: 401`, async () => {
          const key = keyOf(ctx, 'alice');
          const credentials = scheme === 'Basic' ? Buffer.from(`${key}:`).toString('base64') : key;
          await refused({ authorization: `${scheme} ${credentials}` }, 401, 'unauthorized', key);
        });
      }

      test('Authorization: Bearer without a key, or with two words: 401', async () => {
        const key = keyOf(ctx, 'alice');
        await refused({ authorization: 'Bearer' }, 401, 'unauthorized');
        await refused({ authorization: 'Bearer ' }, 401, 'unauthorized');
        await refused({ authorization: `Bearer ${key} ${key}` }, 401, 'unauthorized', key);
        await refused({ authorization: key }, 401, 'unauthorized', key);
      });

      test('a key in the query string is not read: 401, not 400 (the key is checked before parameters)', async () => {
        const key = keyOf(ctx, 'alice');
        for (const name of ['api_key', 'key', 'apiKey', 'access_token']) {
          await refused({}, 401, 'unauthorized', key, `${path}?${name}=${encodeURIComponent(key)}`);
        }
      });

      test('a revoked key: 401', async () => {
        const body = await refused({ 'x-api-key': keyOf(ctx, 'alice-revoked') }, 401, 'unauthorized', keyOf(ctx, 'alice-revoked'));
        assert.match(body.message, /revoked/i);
      });

      test('an expired key: 401', async () => {
        const body = await refused({ 'x-api-key': keyOf(ctx, 'alice-expired') }, 401, 'unauthorized', keyOf(ctx, 'alice-expired'));
        assert.match(body.message, /expired/i);
      });

      test('a key that expires later still works', async () => {
        const res = await raw(ctx, path, { 'x-api-key': keyOf(ctx, 'alice-expiring') });
        assert.equal(res.statusCode, 200, res.body);
      });

      test('a lapsed plan (carol): 403 forbidden', async () => {
        await refused({ 'x-api-key': keyOf(ctx, 'carol') }, 403, 'forbidden', keyOf(ctx, 'carol'));
        await refused({ authorization: `Bearer ${keyOf(ctx, 'carol')}` }, 403, 'forbidden', keyOf(ctx, 'carol'));
      });

      test('no plan (dave): 403 forbidden', async () => {
        await refused({ 'x-api-key': keyOf(ctx, 'dave') }, 403, 'forbidden', keyOf(ctx, 'dave'));
      });

      if (endpoint.scope === null) {
        test('a key with no scopes (alice-noscope): 200, /me needs none', async () => {
          const res = await raw(ctx, path, { 'x-api-key': keyOf(ctx, 'alice-noscope') });
          assert.equal(res.statusCode, 200, res.body);
          assert.deepEqual((JSON.parse(res.body) as { scopes: string[] }).scopes, []);
        });
      } else {
        const scope = endpoint.scope;
        test(`a key without ${scope} (alice-noscope): 403 insufficient_scope naming the scope`, async () => {
          const body = await refused(
            { 'x-api-key': keyOf(ctx, 'alice-noscope') },
            403,
            'insufficient_scope',
            keyOf(ctx, 'alice-noscope'),
          );
          assert.ok(body.message.includes(scope), `the message names ${scope}: ${body.message}`);
        });
      }
    });
  }
});
