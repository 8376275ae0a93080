import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(() => ctx.close());

test('smoke', async () => {
  for (const path of ['/me', '/catalogue', '/catalogue/1', '/prices', '/prices/1', '/prices/export.csv', '/collection', '/collection/value', '/collection/1', '/listings', '/offers', '/transactions', '/nope', '/catalogue?search=pokemon', '/catalogue?limit=+5']) {
    const res = await ctx.get(V1 + path);
    console.log(path, res.statusCode, JSON.stringify(res.headers).slice(0, 400), res.body.slice(0, 400));
  }
  const res = await ctx.get(V1 + '/me', 'alice', { method: 'POST' });
  console.log(res.statusCode, res.headers, res.body);
  assert.ok(true);
});
