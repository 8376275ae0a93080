// A key found public (issue 42), in Chromium against a real `shelfapi serve` (SQLite; with
// TEST_STORE=postgres on PostgreSQL with the Redis meter): GitHub's signed report revokes the key (401 at
// once); the owner signs in and sees the banner on the overview and on the key's page, with where it was
// found; one click (a form with the session's form token: refused without it) makes the replacement with
// the same name, scopes and allowed addresses, shown once, which works; the banner is gone after. axe-core
// finds no violation on the pages with the banner.
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { OPERATOR } from '../../src/services/actor.js';
import { setAllowedAddresses } from '../../src/services/keys.service.js';
import { getKey, listKeys } from '../../src/store/repositories/api-key.repository.js';
import type { Store } from '../../src/store/database.js';
import { launchChromium } from '../helpers/chromium.js';
import { ROOT, runCli, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { openTestStore, TEST_REDIS_URL, TEST_STORE, testRedisPrefix } from '../helpers/test-app.js';

const WAIT_MS = 30_000;
const AXE_SOURCE = readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
const A_KEY = new RegExp(`^${KEY_PATTERN.source}$`);
const FOUND_AT = 'https://github.com/collector/price-scripts/blob/main/sync.py';

async function assertNoAxeViolation(page: Page, what: string): Promise<void> {
  const loaded = await page.evaluate('typeof window.axe');
  if (loaded !== 'object') await page.evaluate(`${AXE_SOURCE}\n;void 0`);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then(function (r) { return r.violations.map(function (v) { return { id: v.id, help: v.help }; }); })`,
  )) as Array<{ id: string; help: string }>;
  assert.deepEqual(violations, [], `${what}: axe-core finds no violation`);
}

describe('a leaked key, seen and replaced by its owner in Chromium', () => {
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  let store: Store;
  let closeStore: (() => Promise<void>) | undefined;
  let origin = '';
  let link = '';
  let leaked = '';
  let leakedId = 0;
  let env: Record<string, string> = {};
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-leak-browser-'));
  const github = generateKeyPairSync('ec', { namedCurve: 'P-256' });

  before(async () => {
    const testStore = await openTestStore();
    store = testStore.store;
    closeStore = testStore.close;
    const loaded = await loadDataset(
      store,
      {
        accounts: [{ ref: 'owner', email: 'owner@example.com', plan: 'enthusiast' }],
        keys: [{ ref: 'sync', account: 'owner', name: 'price sync', scopes: ['catalogue:read', 'prices:read'] }],
        catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
      },
      { keyPrefix: 'shelf', now: Date.now() },
    );
    leaked = loaded.keys.sync!;
    leakedId = (await listKeys(store.db, loaded.accounts.owner!))[0]!.id;
    await setAllowedAddresses(store, { keyId: leakedId, addresses: '127.0.0.0/8', now: Date.now(), keyPrefix: 'shelf', actor: OPERATOR });
    const keysFile = join(dir, 'keys.json');
    writeFileSync(
      keysFile,
      JSON.stringify({ public_keys: [{ key_identifier: 'test', key: github.publicKey.export({ type: 'spki', format: 'pem' }).toString(), is_current: true }] }),
    );
    const redis: Record<string, string> = TEST_STORE === 'postgres' ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: testRedisPrefix('leak') } : {};
    env = { DATABASE_URL: testStore.databaseUrl, ...redis };
    server = await startServerProcess({ ...env, SECRET_SCANNING_PUBLIC_KEYS: keysFile });
    origin = `http://127.0.0.1:${server.port}`;
    const minted = await runCli(['accounts', 'sign-in-link', String(loaded.accounts.owner), '--json'], { ...env, PORT: String(server.port) });
    assert.equal(minted.code, 0, minted.stderr);
    link = (JSON.parse(minted.stdout) as { url: string }).url;
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await closeStore?.();
    rmSync(dir, { recursive: true, force: true });
  });

  const api = (key: string) => fetch(`${origin}/developer/v1/me`, { headers: { 'x-api-key': key } });

  test('GitHub reports the key; the owner sees where, and makes its replacement in one click', async () => {
    assert.equal((await api(leaked)).status, 200);
    const body = JSON.stringify([{ token: leaked, type: 'shelfapi_api_key', url: FOUND_AT, source: 'content' }]);
    const report = await fetch(`${origin}/secret-scanning/github`, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'github-public-key-identifier': 'test',
        'github-public-key-signature': sign('sha256', Buffer.from(body), github.privateKey).toString('base64'),
      },
    });
    assert.equal(report.status, 200);
    assert.deepEqual(await report.json(), [{ token_raw: leaked, token_type: 'shelfapi_api_key', label: 'true_positive' }]);
    assert.equal((await api(leaked)).status, 401);

    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') errors.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    page.on('response', (r) => {
      if (r.status() >= 400) errors.push(`${r.status()} for ${r.url()}`);
    });
    try {
      await page.goto(link);
      await page.waitForURL(`${origin}/settings/developer-api`);
      const overview = await page.locator('main').innerText();
      assert.match(overview, /A key was found public and revoked at once/);
      assert.ok(overview.includes(`found public at ${FOUND_AT}; reported by GitHub secret scanning (content)`), overview.slice(0, 2000));
      await assertNoAxeViolation(page, 'overview with the leak banner');

      // The key's page says it too, and the replacement form is refused without its form token.
      await page.getByRole('link', { name: 'price sync' }).first().click();
      await page.waitForURL(`${origin}/settings/developer-api/keys/${leakedId}`);
      const details = await page.locator('main').innerText();
      assert.match(details, /This key was found public and revoked/);
      assert.ok(details.includes(FOUND_AT));
      await assertNoAxeViolation(page, 'key page with the leak banner');
      await page.goto(`${origin}/settings/developer-api/security-log`);
      assert.match(await page.locator('main').innerText(), /GitHub secret scanning/, 'the security log says who revoked it');
      await page.goto(`${origin}/settings/developer-api/keys/${leakedId}`);
      const forged = await page.request.post(`${origin}/settings/developer-api/keys/${leakedId}/replace-leaked`, {
        form: {},
        headers: { origin },
      });
      assert.equal(forged.status(), 403, 'no form token: refused');
      errors.splice(0);

      await page.getByRole('button', { name: 'Make a replacement for price sync' }).click();
      await page.waitForURL(`${origin}/settings/developer-api/keys/created`);
      const replacement = (await page.locator('#new-key').innerText()).trim();
      assert.match(replacement, A_KEY);
      assert.notEqual(replacement, leaked);
      assert.equal((await api(replacement)).status, 200, 'the replacement works');
      const old = await getKey(store.db, leakedId);
      assert.ok(old?.replacedBy !== null && old?.replacedBy !== undefined);
      const made = await getKey(store.db, old.replacedBy);
      assert.deepEqual({ name: made?.name, scopes: made?.scopes, addresses: made?.allowedAddresses }, {
        name: 'price sync',
        scopes: ['catalogue:read', 'prices:read'],
        addresses: ['127.0.0.0/8'],
      });

      // The banner is gone from the overview; the old key's page names its replacement.
      await page.goto(`${origin}/settings/developer-api`);
      assert.doesNotMatch(await page.locator('main').innerText(), /found public and revoked at once/);
      await page.goto(`${origin}/settings/developer-api/keys/${leakedId}`);
      assert.match(await page.locator('main').innerText(), /Replaced by price sync/);
      assert.equal(await page.getByRole('button', { name: /Make a replacement/ }).count(), 0);
      assert.deepEqual(errors, [], 'no console error, page error or failed response');
    } finally {
      await context.close();
    }

    // The notice for the platform, once.
    const listed = await runCli(['notices', '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    const leaks = (JSON.parse(listed.stdout) as { notices: Array<{ kind: string; detail: string }> }).notices.filter((n) => n.kind === 'key_leaked');
    assert.equal(leaks.length, 1);
    assert.ok(leaks[0]!.detail.includes(FOUND_AT));
  });
});
