// Run by test/store/test-databases.test.ts as a test file of its own, with TEST_STORE=postgres: a test app
// that serves and meters a request, and a key written under a file's own Redis prefix and never deleted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { createTestContext, TEST_REDIS_URL, testRedisPrefix, V1 } from './test-app.js';

test('a test app over PostgreSQL and Redis serves a metered request', async () => {
  const ctx = await createTestContext();
  try {
    assert.equal((await ctx.get(`${V1}/catalogue/1`)).statusCode, 200);
  } finally {
    await ctx.close();
  }
  const redis = new Redis(TEST_REDIS_URL);
  await redis.set(`${testRedisPrefix('left')}key`, '1');
  redis.disconnect();
});
