// Conditional requests as a client polling prices sees them: a strong ETag on every 200 (JSON and the CSV
// export), 304 with no body when If-None-Match names the current tag, the quota count given back on a 304
// while the burst still counts, and a new tag once the data changes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { loadDataset } from '../../src/load/load-dataset.js';
import { holdsPrincipals, within } from '../helpers/held-principals.js';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

const STRONG_TAG = /^"[A-Za-z0-9_-]{16,}"$/;

function remaining(res: LightMyRequestResponse): number {
  return Number(res.headers['x-ratelimit-remaining']);
}

function burstLeft(res: LightMyRequestResponse): number {
  const match = /"burst";r=(\d+)/.exec(String(res.headers['ratelimit']));
  assert.ok(match, `RateLimit header: ${String(res.headers['ratelimit'])}`);
  return Number(match[1]);
}

async function used(ctx: TestContext, key = 'alice'): Promise<number> {
  const me = await ctx.get(`${V1}/me`, key);
  assert.equal(me.statusCode, 200, me.body);
  return (JSON.parse(me.body) as { usage: { used: number } }).usage.used;
}

const JSON_ROUTES = [
  '/catalogue', '/catalogue?search=zelda', '/catalogue/1', '/prices', '/prices/1', '/collection',
  '/collection/value', '/listings', '/offers', '/transactions', '/me',
];

describe('ETag and If-None-Match', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000}}' } });
  });
  after(async () => {
    await ctx.close();
  });

  it('gives every JSON 200 a strong ETag that stays the same while the answer does', async () => {
    const tags = new Set<string>();
    for (const path of JSON_ROUTES) {
      const first = await ctx.get(`${V1}${path}`);
      assert.equal(first.statusCode, 200, `${path}: ${first.body}`);
      const tag = String(first.headers['etag']);
      assert.match(tag, STRONG_TAG, path);
      if (path !== '/me') {
        const again = await ctx.get(`${V1}${path}`);
        assert.equal(again.headers['etag'], tag, `${path} answered the same body with another tag`);
      }
      tags.add(tag);
    }
    assert.equal(tags.size, JSON_ROUTES.length, 'different answers carry different tags');
  });

  it('answers 304 with no body when If-None-Match names the tag, and gives the quota count back', async () => {
    const first = await ctx.get(`${V1}/prices/1`);
    const tag = String(first.headers['etag']);
    const usedBefore = await used(ctx);
    const res = await ctx.get(`${V1}/prices/1`, 'alice', { headers: { 'if-none-match': tag } });
    assert.equal(res.statusCode, 304);
    assert.equal(res.body, '');
    assert.equal(res.headers['etag'], tag);
    assert.equal(res.headers['content-type'], undefined);
    assert.equal(res.headers['cache-control'], 'private, no-store');
    assert.ok(res.headers['x-request-id']);
    assert.equal(remaining(res), remaining(first), 'X-RateLimit-Remaining shows the count given back');
    assert.equal(await used(ctx), usedBefore, '/me: the 304 did not count against the quota');
  });

  it('still counts a 304 toward the burst', async () => {
    const first = await ctx.get(`${V1}/catalogue/1`);
    const tag = String(first.headers['etag']);
    const a = await ctx.get(`${V1}/catalogue/1`, 'alice', { headers: { 'if-none-match': tag } });
    const b = await ctx.get(`${V1}/catalogue/1`, 'alice', { headers: { 'if-none-match': tag } });
    assert.equal(a.statusCode, 304);
    assert.equal(b.statusCode, 304);
    assert.equal(burstLeft(b), burstLeft(a) - 1);
  });

  it('answers 200, counted, when If-None-Match names another tag', async () => {
    const usedBefore = await used(ctx);
    const res = await ctx.get(`${V1}/prices/1`, 'alice', { headers: { 'if-none-match': '"not-the-tag"' } });
    assert.equal(res.statusCode, 200);
    assert.ok(res.body.length > 0);
    assert.equal(await used(ctx), usedBefore + 1);
  });

  it('compares weakly as RFC 9110 says: W/ ignored, lists and * accepted', async () => {
    const tag = String((await ctx.get(`${V1}/catalogue/2`)).headers['etag']);
    for (const header of [`W/${tag}`, `"other", ${tag}`, `"a",W/${tag} , "b"`, '*']) {
      const res = await ctx.get(`${V1}/catalogue/2`, 'alice', { headers: { 'if-none-match': header } });
      assert.equal(res.statusCode, 304, header);
    }
    const unquoted = tag.slice(1, -1);
    const res = await ctx.get(`${V1}/catalogue/2`, 'alice', { headers: { 'if-none-match': unquoted } });
    assert.equal(res.statusCode, 200, 'an unquoted tag is not a tag');
  });

  it('answers HEAD with the GET tag, and 304 to a HEAD that names it', async () => {
    const get = await ctx.get(`${V1}/catalogue/3`);
    const head = await ctx.get(`${V1}/catalogue/3`, 'alice', { method: 'HEAD' });
    assert.equal(head.statusCode, 200);
    assert.equal(head.headers['etag'], get.headers['etag']);
    const conditional = await ctx.get(`${V1}/catalogue/3`, 'alice', {
      method: 'HEAD',
      headers: { 'if-none-match': String(get.headers['etag']) },
    });
    assert.equal(conditional.statusCode, 304);
  });

  it('never tags an error, and a matching-looking If-None-Match does not turn an error into a 304', async () => {
    const missing = await ctx.get(`${V1}/catalogue/999999`, 'alice', { headers: { 'if-none-match': '*' } });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.headers['etag'], undefined);
    const bad = await ctx.get(`${V1}/catalogue?limit=0`, 'alice', { headers: { 'if-none-match': '*' } });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.headers['etag'], undefined);
    const noKey = await ctx.get(`${V1}/catalogue/1`, null, { headers: { 'if-none-match': '*' } });
    assert.equal(noKey.statusCode, 401);
  });

  it('gives other keys of the same data the same tag, and other owners other tags', async () => {
    const alice = await ctx.get(`${V1}/catalogue/1`, 'alice');
    const bob = await ctx.get(`${V1}/catalogue/1`, 'bob');
    assert.equal(alice.headers['etag'], bob.headers['etag'], 'public data: same bytes, same tag');
    const aliceCollection = await ctx.get(`${V1}/collection`, 'alice');
    const bobCollection = await ctx.get(`${V1}/collection`, 'bob');
    assert.notEqual(aliceCollection.headers['etag'], bobCollection.headers['etag']);
    const crossed = await ctx.get(`${V1}/collection`, 'bob', { headers: { 'if-none-match': String(aliceCollection.headers['etag']) } });
    assert.equal(crossed.statusCode, 200, "another owner's tag never gives a 304");
  });

  it('tags the CSV export by its data and filters, and answers 304 with the quota count given back', async () => {
    const first = await ctx.get(`${V1}/prices/export.csv`);
    assert.equal(first.statusCode, 200);
    const tag = String(first.headers['etag']);
    assert.match(tag, STRONG_TAG);
    const again = await ctx.get(`${V1}/prices/export.csv`);
    assert.equal(again.headers['etag'], tag);
    assert.equal(again.body, first.body);
    const filtered = await ctx.get(`${V1}/prices/export.csv?platform=PlayStation`);
    assert.notEqual(filtered.headers['etag'], tag, 'other filters, other file, other tag');

    const usedBefore = await used(ctx);
    const res = await ctx.get(`${V1}/prices/export.csv`, 'alice', { headers: { 'if-none-match': tag } });
    assert.equal(res.statusCode, 304);
    assert.equal(res.body, '');
    assert.equal(res.headers['content-disposition'], undefined);
    assert.equal(await used(ctx), usedBefore);
    const head = await ctx.get(`${V1}/prices/export.csv`, 'alice', { method: 'HEAD' });
    assert.equal(head.headers['etag'], tag);
  });

  it('changes the tags once the data changes, so an old tag gets the new answer', async () => {
    const price = await ctx.get(`${V1}/prices/1`);
    const exported = await ctx.get(`${V1}/prices/export.csv`);
    await loadDataset(
      ctx.store,
      { prices: [{ masterItemId: 1, upc: '045496870010', loose: 99, cib: 99, new: 999, scrapeDate: '2026-11-19T00:00:00.000Z' }] },
      { keyPrefix: ctx.config.keyPrefix, now: ctx.clock.now() },
    );
    // PostgreSQL + Redis: the server takes the data version from PostgreSQL's NOTIFY, within a second.
    if (holdsPrincipals(ctx.app)) await within(1000, 'the new price', async () => (await ctx.get(`${V1}/prices/1`)).body.includes('"loose":99'));
    const newPrice = await ctx.get(`${V1}/prices/1`, 'alice', { headers: { 'if-none-match': String(price.headers['etag']) } });
    assert.equal(newPrice.statusCode, 200);
    assert.notEqual(newPrice.headers['etag'], price.headers['etag']);
    assert.match(newPrice.body, /"loose":99/);
    const newExport = await ctx.get(`${V1}/prices/export.csv`, 'alice', { headers: { 'if-none-match': String(exported.headers['etag']) } });
    assert.equal(newExport.statusCode, 200);
    assert.notEqual(newExport.headers['etag'], exported.headers['etag']);
    assert.match(newExport.body, /\r\n1,[^\r]*,99,99,999,/);
  });
});

describe('If-None-Match at the end of the quota', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000,"monthly":3}}' } });
  });
  after(async () => {
    await ctx.close();
  });

  it('lets a poller revalidate many times on a small quota, and refuses once the quota is truly used', async () => {
    const first = await ctx.get(`${V1}/prices/1`);
    assert.equal(remaining(first), 2);
    const tag = String(first.headers['etag']);
    for (let i = 0; i < 10; i++) {
      const res = await ctx.get(`${V1}/prices/1`, 'alice', { headers: { 'if-none-match': tag } });
      assert.equal(res.statusCode, 304, `revalidation ${i + 1}`);
      assert.equal(remaining(res), 2);
    }
    assert.equal((await ctx.get(`${V1}/prices/2`)).statusCode, 200);
    assert.equal((await ctx.get(`${V1}/prices/3`)).statusCode, 200);
    const over = await ctx.get(`${V1}/prices/1`, 'alice', { headers: { 'if-none-match': tag } });
    assert.equal(over.statusCode, 429, 'the quota check comes before the answer, 304 included');
    assert.equal(JSON.parse(over.body).error, 'quota_exceeded');
  });

  it('gives back exactly one count per 304 under concurrent revalidations', async () => {
    const fresh = await createTestContext({ env: { PLAN_LIMITS: '{"enthusiast":{"perMinute":100000,"monthly":5}}' } });
    try {
      const tag = String((await fresh.get(`${V1}/catalogue/1`)).headers['etag']);
      const answers = await Promise.all(
        Array.from({ length: 40 }, () => fresh.get(`${V1}/catalogue/1`, 'alice', { headers: { 'if-none-match': tag } })),
      );
      // With 4 requests left and 40 in flight, each one is admitted or refused by the quota at the moment it
      // arrives; every 304 gives its count back, so none is lost and the month ends where it started.
      for (const res of answers) assert.ok(res.statusCode === 304 || res.statusCode === 429, String(res.statusCode));
      assert.ok(answers.some((res) => res.statusCode === 304));
      assert.equal(await used(fresh), 1);
    } finally {
      await fresh.close();
    }
  });
});
