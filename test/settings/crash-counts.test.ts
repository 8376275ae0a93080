// A key's counted requests on its details page after the server is killed (issue 18, item 5): the meter
// loses nothing, while the per-key statistics hold their records a moment before writing them. The page's
// "Counted" series comes from the meter, so after a SIGKILL and a new start it shows what /me and
// `keys usage` show; the other outcomes may lose what was held (docs/operations.md, "The owners' statistics are not the quota").
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SCOPES } from '../../src/domain/scopes.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { migrateToLatest, openStore } from '../../src/store/database.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { freshPostgresSchema, TEST_REDIS_URL, TEST_STORE, testRedisPrefix } from '../helpers/test-app.js';

const REQUESTS = 300;

/** The "Counted" cell of today's row in the key page's table of numbers (the first series). */
function countedToday(html: string): number {
  const today = new Date().toISOString().slice(0, 10);
  const row = new RegExp(`<th scope="row">${today}</th><td>([0-9,]+)</td>`).exec(html);
  assert.ok(row, `the table has a row for ${today}`);
  return Number(row[1]!.replaceAll(',', ''));
}

describe('counted requests on the key page after a crash', () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  let server: ServerProcess | null = null;
  let key: string;
  let keyId: number;
  let accountId: number;

  before(async () => {
    let databaseUrl: string;
    if (TEST_STORE === 'postgres') {
      const pg = await freshPostgresSchema();
      databaseUrl = pg.url;
      env = { DATABASE_URL: pg.url, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: testRedisPrefix('crash-counts') };
      cleanup = pg.drop;
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'shelfapi-crash-'));
      databaseUrl = join(dir, 'store.sqlite');
      env = { DATABASE_URL: databaseUrl, EXPORT_DIR: join(dir, 'guide') };
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
    env.PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: 100_000, perMinute: 100_000 } });
    const store = openStore(/^postgres/.test(databaseUrl) ? { dialect: 'postgres', url: databaseUrl } : { dialect: 'sqlite', path: databaseUrl });
    await migrateToLatest(store);
    const loaded = await loadDataset(
      store,
      {
        accounts: [{ ref: 'a', email: 'a@example.com', plan: 'enthusiast' }],
        keys: [{ ref: 'a', account: 'a', name: 'crash', scopes: [...SCOPES] }],
        catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
      },
      { keyPrefix: 'shelf', now: Date.now() },
    );
    key = loaded.keys.a!;
    accountId = loaded.accounts.a!;
    keyId = Number((await store.db.selectFrom('api_keys').select('id').executeTakeFirstOrThrow()).id);
    await store.close();
  });

  after(async () => {
    await server?.stop('SIGKILL');
    await cleanup?.();
  });

  test('after requests and a SIGKILL, the page counts what the meter counted', async () => {
    server = await startServerProcess(env);
    const api = server.base;
    // A loaded machine may answer some with 503 (the request's deadline), which count nothing.
    let served = 0;
    for (let sent = 0; sent < REQUESTS; sent += 10) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => fetch(`${api}/catalogue/1`, { headers: { 'x-api-key': key } })));
      for (const res of answers) {
        assert.ok(res.status === 200 || res.status === 503, `${res.status}`);
        if (res.status === 200) served++;
        await res.arrayBuffer();
      }
    }
    assert.ok(served > REQUESTS / 2, `${served} of ${REQUESTS} served`);
    // Killed at once: no flush of whatever the statistics still hold.
    await server.stop('SIGKILL');
    server = await startServerProcess(env);

    const me = (await (await fetch(`${server.base}/me`, { headers: { 'x-api-key': key } })).json()) as { usage: { used: number } };
    assert.equal(me.usage.used, served, '/me: the meter lost nothing');

    const minted = await runCli(['accounts', 'sign-in-link', String(accountId), '--json'], { ...env, PORT: String(server.port) });
    assert.equal(minted.code, 0, minted.stderr);
    const link = new URL((JSON.parse(minted.stdout) as { url: string }).url);
    const origin = `http://127.0.0.1:${server.port}`;
    const signIn = await fetch(origin + link.pathname + link.search, { redirect: 'manual' });
    assert.equal(signIn.status, 303);
    const cookie = signIn.headers
      .getSetCookie()
      .map((line) => line.split(';')[0])
      .join('; ');
    const details = await fetch(`${origin}/settings/developer-api/keys/${keyId}`, { headers: { cookie } });
    assert.equal(details.status, 200);
    assert.equal(countedToday(await details.text()), served, "the page's counted requests are the meter's");
  });
});
