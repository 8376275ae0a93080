// What an operator reads in the log: one JSON line per request with its id, account, key id, route, status
// and duration, the same id the client got in X-Request-Id; and never a key, wherever a client put it.
// (Every test context also scans its whole log for keys when it closes: see test/helpers/log-capture.ts.)
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { assertNoKeysLogged } from '../helpers/log-capture.js';

function requestLines(ctx: TestContext): Array<Record<string, unknown>> {
  return ctx.logs.lines().filter((line) => line.msg === 'request');
}

describe('request log', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' } });
  });
  after(async () => {
    await ctx.close();
  });

  it('writes one JSON line per request with request id, account, key id, route, status and duration', async () => {
    const res = await ctx.get(`${V1}/catalogue/1?`);
    const line = requestLines(ctx).find((l) => l.reqId === res.headers['x-request-id']);
    assert.ok(line, 'the line carries the X-Request-Id the client saw');
    const key = await ctx.store.db.selectFrom('api_keys').select(['id', 'account_id']).where('name', '=', 'all scopes').orderBy('id').executeTakeFirstOrThrow();
    assert.equal(line.accountId, key.account_id);
    assert.equal(line.keyId, key.id);
    assert.equal(line.route, '/developer/v1/catalogue/:id');
    assert.equal(line.method, 'GET');
    assert.equal(line.status, 200);
    assert.equal(typeof line.durationMs, 'number');
    assert.equal(line.level, 30, 'info');
    assert.equal(typeof line.time, 'number');
  });

  it('logs refused requests too, without an account when the key was not accepted', async () => {
    const res = await ctx.get(`${V1}/catalogue/1`, null);
    assert.equal(res.statusCode, 401);
    const line = requestLines(ctx).find((l) => l.reqId === res.headers['x-request-id']);
    assert.equal(line?.status, 401);
    assert.equal(line?.accountId, null);
    assert.equal(line?.keyId, null);
  });

  it('never writes a key, whether in a header, the query string, the path, or malformed', async () => {
    const key = ctx.loaded.keys.alice!;
    const revoked = ctx.loaded.keys['alice-revoked']!;
    const lookalike = `${key.slice(0, -6)}AAAAAA`;
    const before = ctx.logs.text().length;
    const answers = await Promise.all([
      ctx.get(`${V1}/catalogue?api_key=${key}`, null),
      ctx.get(`${V1}/catalogue?search=${key}`),
      ctx.get(`${V1}/catalogue/${key}`),
      ctx.get(`${V1}/${key}`),
      ctx.get(`${V1}/catalogue`, null, { headers: { authorization: `Bearer ${lookalike}` } }),
      ctx.get(`${V1}/catalogue`, null, { headers: { authorization: `Basic ${key}` } }),
      ctx.get(`${V1}/catalogue`, null, { headers: { authorization: `Bearer ${revoked}` } }),
      ctx.get(`${V1}/catalogue`, null, { headers: { 'x-api-key': key, authorization: `Bearer ${key}` } }),
      ctx.get(`${V1}/catalogue`, null, { method: 'POST', headers: { 'x-api-key': key } }),
      ctx.get(`${V1}/catalogue?%zz=${key}`),
    ]);
    assert.deepEqual(
      answers.map((r) => r.statusCode),
      [401, 200, 400, 404, 401, 401, 401, 401, 405, 400],
    );
    const written = ctx.logs.text().slice(before);
    assert.ok(written.split('\n').filter((l) => l.includes('"msg":"request"')).length >= answers.length);
    assertNoKeysLogged(written, [key, revoked, lookalike], 'request log');
    assert.match(written, /\[redacted\]/, 'the URL is logged with the key scrubbed out');
  });

  it('never writes a key that lost its prefix (live_<secret>), in the path, the query or a header', async () => {
    const key = ctx.loaded.keys.alice!;
    const bare = key.slice(key.indexOf('_') + 1);
    assert.match(bare, /^live_/);
    const before = ctx.logs.text().length;
    const answers = await Promise.all([
      ctx.get(`${V1}/catalogue/${bare}`),
      ctx.get(`${V1}/catalogue/_${bare}`),
      ctx.get(`${V1}/${bare}`),
      ctx.get(`${V1}/catalogue/${bare.replace('_', '%5F')}`),
      ctx.get(`${V1}/catalogue?search=${bare}`),
      ctx.get(`${V1}/catalogue`, null, { headers: { authorization: `Bearer ${bare}` } }),
    ]);
    assert.deepEqual(
      answers.map((r) => r.statusCode),
      [400, 400, 404, 400, 200, 401],
    );
    for (const answer of answers) assertNoKeysLogged(answer.body, [key], `answer ${answer.body}`);
    const written = ctx.logs.text().slice(before);
    assertNoKeysLogged(written, [key], 'request log');
    assert.ok(written.includes(`${V1}/catalogue/[redacted]`), 'the path is logged with the key scrubbed out');
  });

  it('never writes a key in the log or an answer, however it is percent-encoded', async () => {
    const key = ctx.loaded.keys.alice!;
    const partly = key.replaceAll('_', '%5F');
    const fully = [...key].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('');
    const twice = key.replaceAll('_', '%255F');
    const before = ctx.logs.text().length;
    const answers = await Promise.all([
      ctx.get(`${V1}/catalogue?search=${partly}`),
      ctx.get(`${V1}/catalogue?search=${fully}`),
      ctx.get(`${V1}/catalogue?search=${twice}`),
      ctx.get(`${V1}/catalogue/${partly}`),
      ctx.get(`${V1}/catalogue/${fully}`),
      ctx.get(`${V1}/catalogue/${key}`),
      ctx.get(`${V1}/catalogue?limit=${key}`),
      ctx.get(`${V1}/catalogue?offset=${fully}`),
      ctx.get(`${V1}/catalogue?${key}=1`),
      ctx.get(`${V1}/catalogue?${partly}%FF=1`),
      ctx.get(`${V1}/${fully}`),
    ]);
    assert.deepEqual(
      answers.map((r) => r.statusCode),
      [200, 200, 200, 400, 400, 400, 400, 400, 400, 400, 404],
    );
    for (const answer of answers) assertNoKeysLogged(answer.body, [key], `answer ${answer.body}`);
    assertNoKeysLogged(ctx.logs.text().slice(before), [key], 'request log');
  });
});

