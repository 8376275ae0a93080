/**
 * Redis or PostgreSQL going away under a running server: every request answers 503 service_unavailable
 * with Retry-After, promptly, nothing is served unmetered, and service resumes by itself when the store
 * returns. Each test runs its own private Redis or PostgreSQL server, never the machine's shared ones.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { SCOPES } from '../../src/domain/scopes.js';
import { migrateToLatest, openStore } from '../../src/store/database.js';
import { loadDataset } from '../../src/store/load/load-dataset.js';
import { startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateRedis } from '../helpers/private-services.js';
import { startServerProcess, waitFor, type ServerProcess } from '../helpers/server-process.js';
import { freshPostgresSchema, TEST_REDIS_URL } from '../helpers/test-app.js';

async function prepare(databaseUrl: string): Promise<string> {
  const store = openStore({ dialect: 'postgres', url: databaseUrl });
  await migrateToLatest(store);
  const loaded = await loadDataset(
    store,
    {
      accounts: [{ ref: 'a', email: 'a@example.com', plan: 'enthusiast' }],
      keys: [{ ref: 'a', account: 'a', name: 'a', scopes: [...SCOPES] }],
      catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
    },
    { keyPrefix: 'shelf', now: Date.now() },
  );
  await store.close();
  return loaded.keys.a!;
}

async function expectOutage(server: ServerProcess, key: string): Promise<void> {
  for (const path of ['/catalogue/1', '/me']) {
    const started = Date.now();
    const res = await fetch(server.base + path, { headers: { 'x-api-key': key } });
    const elapsed = Date.now() - started;
    assert.equal(res.status, 503, `${path} answered ${res.status}`);
    assert.deepEqual(Object.keys((await res.json()) as object).sort(), ['error', 'message']);
    assert.ok(Number(res.headers.get('retry-after')) >= 1);
    assert.ok(elapsed < 2000, `${path} took ${elapsed} ms to answer 503`);
  }
  const ready = await fetch(`http://127.0.0.1:${server.opsPort}/readyz`);
  assert.equal(ready.status, 503);
}

async function expectRecovery(server: ServerProcess, key: string): Promise<void> {
  await waitFor(async () => (await fetch(server.base + '/catalogue/1', { headers: { 'x-api-key': key } })).status === 200, 'service to resume');
  assert.equal((await fetch(`http://127.0.0.1:${server.opsPort}/readyz`)).status, 200);
}

describe('Redis goes away and comes back', () => {
  let redis: PrivateRedis;
  let server: ServerProcess;
  let key: string;
  let drop: () => Promise<void>;

  before(async () => {
    redis = await startPrivateRedis();
    const pg = await freshPostgresSchema();
    drop = pg.drop;
    key = await prepare(pg.url);
    server = await startServerProcess({ DATABASE_URL: pg.url, REDIS_URL: redis.url });
  });
  after(async () => {
    await server.stop('SIGKILL');
    await redis.stop();
    await drop();
  });

  test('503 with Retry-After within 2 s while Redis is down; service resumes without a restart', async () => {
    assert.equal((await fetch(server.base + '/catalogue/1', { headers: { 'x-api-key': key } })).status, 200);
    await redis.stop();
    await expectOutage(server, key);
    await redis.start();
    await expectRecovery(server, key);
  });
});

describe('PostgreSQL goes away and comes back', () => {
  let postgres: PrivatePostgres;
  let server: ServerProcess;
  let key: string;

  before(async () => {
    postgres = await startPrivatePostgres();
    key = await prepare(postgres.url);
    server = await startServerProcess({ DATABASE_URL: postgres.url, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `outage:${randomUUID()}:` });
  });
  after(async () => {
    await server.stop('SIGKILL');
    await postgres.destroy();
  });

  test('503 with Retry-After within 2 s while PostgreSQL is down; service resumes without a restart', async () => {
    assert.equal((await fetch(server.base + '/catalogue/1', { headers: { 'x-api-key': key } })).status, 200);
    await postgres.stop();
    await expectOutage(server, key);
    await postgres.start();
    await expectRecovery(server, key);
  });
});
