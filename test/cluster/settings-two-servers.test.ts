/**
 * The settings screen on two `shelfapi serve` processes over one PostgreSQL and one Redis: sessions, form
 * tokens, the one-time key slot and the handover secret live in the store, so any step of any flow works on
 * either server. Sign in on A, create on A, call the Data API on B, revoke on B's screen, refused on A;
 * sign out on B, signed out on A.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { migrateToLatest, openStore } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { freshPostgresSchema, TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-app.js';

/** A cookie jar shared by both servers, as a browser's is for one host (cookies do not depend on the port). */
class Jar {
  private cookies = new Map<string, string>();
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /Max-Age=0|Expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
}

const originOf = (server: ServerProcess) => `http://127.0.0.1:${server.port}`;

async function page(jar: Jar, server: ServerProcess, path: string): Promise<{ status: number; body: string; location: string | null }> {
  const res = await fetch(originOf(server) + path, { headers: { cookie: jar.header() }, redirect: 'manual' });
  jar.take(res);
  return { status: res.status, body: await res.text(), location: res.headers.get('location') };
}

async function post(jar: Jar, server: ServerProcess, path: string, form: Record<string, string | string[]>) {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
  const res = await fetch(originOf(server) + path, {
    method: 'POST',
    headers: { cookie: jar.header(), origin: originOf(server), 'content-type': 'application/x-www-form-urlencoded' },
    body,
    redirect: 'manual',
  });
  jar.take(res);
  return { status: res.status, body: await res.text(), location: res.headers.get('location') };
}

const field = (html: string, name: string) => {
  const match = new RegExp(`name="${name}" value="([^"]+)"`).exec(html);
  assert.ok(match, `the page has ${name}`);
  return match[1]!;
};

describe('the settings screen on two servers over PostgreSQL and Redis', () => {
  let a: ServerProcess;
  let b: ServerProcess;
  let env: Record<string, string>;
  let accountId: number;
  let dropSchema: () => Promise<void>;

  before(async () => {
    const pg = await freshPostgresSchema();
    dropSchema = pg.drop;
    env = { DATABASE_URL: pg.url, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: testRedisPrefix('settings-cluster') };
    const store = openStore({ dialect: 'postgres', url: pg.url });
    await migrateToLatest(store);
    const loaded = await loadDataset(
      store,
      {
        accounts: [{ ref: 'owner', email: 'owner@example.com', plan: 'enthusiast' }],
        catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
      },
      { keyPrefix: 'shelf', now: Date.now() },
    );
    await store.close();
    accountId = loaded.accounts.owner!;
    [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
  });

  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await dropSchema?.();
  });

  test('sign in on A, create on A, use on B, revoke on B, refused on A; sign out on B ends the session on A', async () => {
    const minted = await runCli(['accounts', 'sign-in-link', String(accountId), '--json'], { ...env, PORT: String(a.port) });
    assert.equal(minted.code, 0, minted.stderr);
    const link = new URL((JSON.parse(minted.stdout) as { url: string }).url);
    const jar = new Jar();
    const signIn = await page(jar, a, link.pathname + link.search);
    assert.equal(signIn.status, 303);
    assert.equal((await page(new Jar(), b, link.pathname + link.search)).status, 401, 'the link is spent on B too');

    // Create on A (the form read from B: its token and nonce are valid on A).
    const form = await page(jar, b, '/settings/developer-api/keys/new');
    assert.equal(form.status, 200);
    const created = await post(jar, a, '/settings/developer-api/keys', {
      _csrf: field(form.body, '_csrf'),
      nonce: field(form.body, 'nonce'),
      name: 'cluster key',
      scopes: ['catalogue:read', 'prices:read'],
      expiry: '30d',
    });
    assert.equal(created.status, 303, created.body);
    // The key waits in the store: B shows it, once.
    const shown = await page(jar, b, '/settings/developer-api/keys/created');
    const key = shown.body.match(KEY_PATTERN)?.[0];
    assert.ok(key, 'B shows the key made on A');
    assert.doesNotMatch((await page(jar, a, '/settings/developer-api/keys/created')).body, KEY_PATTERN, 'and never again, on A either');
    const keyId = Number(/\/settings\/developer-api\/keys\/([0-9]+)"/.exec(shown.body)?.[1]);

    // The Data API on B accepts it.
    const api = (server: ServerProcess) => fetch(`${server.base}/catalogue/1`, { headers: { 'x-api-key': key } });
    assert.equal((await api(b)).status, 200);

    // Revoke on B's screen; A refuses the key on its next request.
    const confirm = await page(jar, b, `/settings/developer-api/keys/${keyId}/revoke`);
    assert.equal(confirm.status, 200);
    const revoked = await post(jar, b, `/settings/developer-api/keys/${keyId}/revoke`, { _csrf: field(confirm.body, '_csrf') });
    assert.equal(revoked.status, 303, revoked.body);
    assert.equal((await api(a)).status, 401);
    assert.equal((await api(b)).status, 401);

    // Sign out on B: A no longer knows the session.
    assert.equal((await page(jar, a, '/settings/developer-api')).status, 200);
    const token = field((await page(jar, a, '/settings/developer-api')).body, '_csrf');
    const saved = jar.header();
    assert.equal((await post(jar, b, '/settings/sign-out', { _csrf: token })).status, 200);
    const stale = new Jar();
    stale.take(new Response(null, { headers: saved.split('; ').map((c) => ['set-cookie', c] as [string, string]) }));
    assert.equal((await page(stale, a, '/settings/developer-api')).status, 401, 'the old cookie is refused on A');
  });
});
