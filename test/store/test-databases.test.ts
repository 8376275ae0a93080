// `npm test` on a machine whose PostgreSQL has no database but its own: each test file makes its database
// from TEST_POSTGRES_URL and its Redis keys from TEST_REDIS_URL, and leaves neither behind, even for a key
// a test forgot to delete. Run on private servers, so that what is left can be counted.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { Redis } from 'ioredis';
import { startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateRedis } from '../helpers/private-services.js';
import { ROOT } from '../helpers/server-process.js';

let postgres: PrivatePostgres;
let redis: PrivateRedis;

before(async () => {
  postgres = await startPrivatePostgres();
  redis = await startPrivateRedis();
});
after(async () => {
  await postgres?.destroy();
  await redis?.stop();
});

async function databases(): Promise<string[]> {
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    const result = await client.query<{ datname: string }>('select datname from pg_database order by datname');
    return result.rows.map((row) => row.datname);
  } finally {
    await client.end();
  }
}

test('a PostgreSQL test file runs with no test database, and leaves no database and no Redis key', async () => {
  const before = await databases();
  assert.deepEqual(before, ['postgres', 'template0', 'template1'], 'a fresh server: no database named test');
  // Without the runner's marker of a child it reports to, the fixture runs as `npm test` would run it, and
  // reports TAP as npm test's runners do (the default on Node 20 when piped; on 24 the default is spec).
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const run = await new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-reporter=tap', 'test/helpers/leave-nothing.fixture.ts'],
      { cwd: ROOT, env: { ...env, TEST_STORE: 'postgres', TEST_POSTGRES_URL: postgres.url, TEST_REDIS_URL: redis.url, TEST_REDIS_CLUSTER_URLS: '' } },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : 1, output: stdout + stderr }),
    );
  });
  assert.equal(run.code, 0, run.output);
  assert.match(run.output, /# pass 1/);
  assert.deepEqual(await databases(), before, 'the file dropped the database it made');
  const client = new Redis(redis.url);
  try {
    assert.deepEqual(await client.keys('*'), [], 'no Redis key left');
  } finally {
    client.disconnect();
  }
});
