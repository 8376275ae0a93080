// The owner's whole journey in a real browser (Debian's Chromium, driven by playwright-core) against a real
// `shelfapi serve` on SQLite: the sign-in link opened from a page on another site, create a key with two
// scopes, copy it, call the Data API with it, see its usage, last use and a 403 among rejected requests,
// roll with a one-hour overlap, revoke the new key, read the security log, sign out. axe-core runs on every
// page; the overview at 390 px has no horizontal scroll. Screenshots go to docs/ only with
// SHELFAPI_WRITE_SCREENSHOT=1 (so that `npm test` changes no file).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { launchChromium, reloadUntil, shoot } from '../helpers/chromium.js';
import { freePort, ROOT, runCli, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { openTestStore } from '../helpers/test-app.js';

const WRITE_SCREENSHOTS = process.env.SHELFAPI_WRITE_SCREENSHOT === '1';
const WAIT_MS = 60_000;
const AXE_SOURCE = readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown }>;
}

/** axe-core in the page (evaluated through the debugging protocol, which the page's CSP does not govern). */
async function assertAccessible(page: Page, what: string): Promise<void> {
  const loaded = await page.evaluate('typeof window.axe');
  if (loaded !== 'object') await page.evaluate(`${AXE_SOURCE}\n;void 0`);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then(function (r) { return r.violations.map(function (v) {
      return { id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(function (n) { return { target: n.target }; }) }; }); })`,
  )) as AxeViolation[];
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(serious, [], `${what}: axe-core finds no serious or critical violation`);
}

async function noHorizontalScroll(page: Page): Promise<{ scrollWidth: number; innerWidth: number }> {
  return (await page.evaluate('({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })')) as {
    scrollWidth: number;
    innerWidth: number;
  };
}

describe('the owner journey in Chromium', () => {
  let server: ServerProcess | undefined;
  let platform: Server | undefined;
  let browser: Browser | undefined;
  let closeStore: (() => Promise<void>) | undefined;
  let shotsDir = '';
  let origin = '';
  let platformOrigin = '';
  let link = '';
  const errors: string[] = [];

  before(async () => {
    const testStore = await openTestStore();
    closeStore = testStore.close;
    const loaded = await loadDataset(
      testStore.store,
      {
        accounts: [{ ref: 'owner', email: 'owner@example.com', plan: 'enthusiast' }],
        catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
      },
      { keyPrefix: 'shelf', now: Date.now() },
    );
    server = await startServerProcess({ DATABASE_URL: testStore.databaseUrl });
    origin = `http://127.0.0.1:${server.port}`;
    const minted = await runCli(['accounts', 'sign-in-link', String(loaded.accounts.owner), '--json'], {
      DATABASE_URL: testStore.databaseUrl,
      PORT: String(server.port),
    });
    assert.equal(minted.code, 0, minted.stderr);
    link = (JSON.parse(minted.stdout) as { url: string }).url;
    assert.ok(link.startsWith(`${origin}/settings/sign-in?token=`), link);
    // The platform: a page on another site (localhost is not the same site as 127.0.0.1) linking to the screen.
    const platformPort = await freePort();
    platform = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!DOCTYPE html><html lang="en"><head><title>Platform</title></head><body><a id="open" href="${link}">Settings → Developer API</a></body></html>`);
    });
    await new Promise<void>((resolve) => platform!.listen(platformPort, '127.0.0.1', resolve));
    platformOrigin = `http://localhost:${platformPort}`;
    shotsDir = WRITE_SCREENSHOTS ? join(ROOT, 'docs') : mkdtempSync(join(tmpdir(), 'shelfapi-settings-shots-'));
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => (platform ? platform.close(resolve) : resolve(undefined)));
    await server?.stop();
    await closeStore?.();
    if (!WRITE_SCREENSHOTS && shotsDir !== '') rmSync(shotsDir, { recursive: true, force: true });
  });

  const api = (key: string, path: string) => fetch(`${origin}/developer/v1${path}`, { headers: { 'x-api-key': key } });


  test('from the platform link to sign-out', async () => {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    page.on('console', (m) => {
      // A page answered 401 or 403 on purpose (a reused link, after sign-out) logs its status as an error.
      if (/Failed to load resource: the server responded with a status of 40[13]/.test(m.text())) return;
      if (m.type() === 'error' || m.type() === 'warning') errors.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('response', (r) => {
      const expected = /\/settings\/sign-in|\/settings\/developer-api$/.test(new URL(r.url()).pathname);
      if (r.status() >= 400 && !expected) errors.push(`${r.status()} for ${r.url()}`);
    });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.origin !== origin && u.origin !== platformOrigin) errors.push(`request to another host: ${r.url()}`);
    });
    await page.addInitScript({
      content: `document.addEventListener('securitypolicyviolation', function (e) { console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI); });`,
    });
    try {
      // 1. The platform's page, on another site, links to the sign-in URL.
      await page.goto(`${platformOrigin}/`);
      await page.click('#open');
      await page.waitForURL(`${origin}/settings/developer-api`);
      assert.ok(!page.url().includes('token='), 'the token is gone from the address bar');
      assert.equal(await page.locator('h1').innerText(), 'Developer API');
      assert.match(await page.locator('header').innerText(), /owner@example\.com/);
      await assertAccessible(page, 'overview (no keys)');
      // The link worked once: opening it again is refused.
      const reused = await context.newPage();
      const reusedResponse = await reused.goto(link);
      assert.equal(reusedResponse?.status(), 401);
      assert.match(await reused.locator('h1').innerText(), /expired or was already used/);
      await assertAccessible(reused, 'link refused page');
      await reused.close();

      // 2. Create a key with two scopes.
      await page.getByRole('link', { name: 'Create key' }).first().click();
      await page.waitForURL(`${origin}/settings/developer-api/keys/new`);
      await assertAccessible(page, 'create form');
      await page.getByLabel('Name', { exact: true }).fill('price sync');
      await page.getByLabel('catalogue:read').check();
      await page.getByLabel('prices:read').check();
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.waitForURL(`${origin}/settings/developer-api/keys/created`);
      const key = (await page.locator('#new-key').innerText()).trim();
      assert.match(key, KEY_PATTERN);
      await assertAccessible(page, 'new key page');
      // 3. Copy it (the comfort script), as an owner would.
      await page.getByRole('button', { name: 'Copy', exact: true }).click();
      await page.locator('#new-key-status', { hasText: 'Copied.' }).waitFor();
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), key);
      await shoot(shotsDir, page, 'settings-create.png');
      // Reload never shows the key again.
      await page.reload();
      assert.match(await page.locator('h1').innerText(), /no longer shown/);
      assert.equal((await page.content()).match(KEY_PATTERN), null);

      // 4. Call the Data API with it: one counted request, one 403 insufficient_scope.
      assert.equal((await api(key, '/catalogue')).status, 200);
      const refused = await api(key, '/collection');
      assert.equal(refused.status, 403);
      assert.equal(((await refused.json()) as { error: string }).error, 'insufficient_scope');

      // 5. The usage, the last use and the rejected request appear.
      await page.goto(`${origin}/settings/developer-api`);
      await page.getByRole('link', { name: 'price sync' }).click();
      const details = await reloadUntil(page, /insufficient_scope/);
      assert.match(details, /Last used\s+[^\n]*UTC[^\n]*from 127\.0\.0\.1/);
      assert.match(details, /2 requests last 30 days, per day/);
      assert.match(details, /GET \/developer\/v1\/collection\s+403\s+insufficient_scope/);
      const detailsUrl = page.url();
      await assertAccessible(page, 'key details');
      await page.goto(`${origin}/settings/developer-api`);
      assert.match(await page.locator('main').innerText(), /Last used/);
      await shoot(shotsDir, page, 'settings-overview.png');
      await page.setViewportSize({ width: 390, height: 844 });
      await page.reload();
      const widths = await noHorizontalScroll(page);
      assert.ok(widths.scrollWidth <= widths.innerWidth, `no horizontal scroll at 390 px: ${JSON.stringify(widths)}`);
      await assertAccessible(page, 'overview at 390 px');
      await shoot(shotsDir, page, 'settings-overview-390.png');
      await page.setViewportSize({ width: 1280, height: 900 });

      // 6. Roll with a one-hour overlap: both keys work.
      await page.goto(detailsUrl);
      await page.getByRole('link', { name: 'Roll' }).click();
      await assertAccessible(page, 'roll form');
      await page.getByLabel('In 1 hour').check();
      await page.getByRole('button', { name: 'Roll key' }).click();
      await page.waitForURL(`${origin}/settings/developer-api/keys/created`);
      const rolled = (await page.locator('#new-key').innerText()).trim();
      assert.notEqual(rolled, key);
      assert.match(await page.locator('main').innerText(), /keeps working until/);
      assert.equal((await api(key, '/catalogue')).status, 200, 'the old key works during the overlap');
      assert.equal((await api(rolled, '/catalogue')).status, 200, 'the new key works');

      // 7. Revoke the new one: 401 on the next request.
      await page.getByRole('link', { name: "See the key's details" }).click();
      await page.getByRole('link', { name: 'Revoke' }).click();
      await assertAccessible(page, 'revoke confirmation');
      assert.match(await page.locator('main').innerText(), /Revoke key price sync\?/);
      await page.getByRole('button', { name: 'Revoke key price sync' }).click();
      await page.waitForURL(/\/settings\/developer-api\/keys\/[0-9]+\?done=revoked$/);
      assert.match(await page.locator('main').innerText(), /Revoked/);
      assert.equal((await api(rolled, '/catalogue')).status, 401);

      // 8. The security log.
      await page.getByRole('link', { name: 'Security log' }).click();
      const log = await page.locator('main').innerText();
      for (const event of ['Signed in', 'Key created', 'Key rolled', 'Key revoked']) assert.match(log, new RegExp(event));
      await assertAccessible(page, 'security log');
      await shoot(shotsDir, page, 'settings-security-log.png');
      // The other pages at 390 px: wide tables scroll inside their card, the page itself does not.
      await page.setViewportSize({ width: 390, height: 844 });
      for (const url of [page.url(), detailsUrl, `${origin}/settings/developer-api/keys/new`]) {
        await page.goto(url);
        const narrow = await noHorizontalScroll(page);
        assert.ok(narrow.scrollWidth <= narrow.innerWidth, `no horizontal scroll at 390 px on ${url}: ${JSON.stringify(narrow)}`);
      }
      await page.setViewportSize({ width: 1280, height: 900 });

      // 9. Sign out: the session ends; the screen no longer answers for it.
      await page.getByRole('button', { name: 'Sign out' }).click();
      assert.match(await page.locator('h1').innerText(), /You are signed out/);
      await assertAccessible(page, 'signed out');
      const after = await page.goto(`${origin}/settings/developer-api`);
      assert.equal(after?.status(), 401);

      assert.deepEqual(errors, [], 'no console error, CSP violation, page error or request to another host');
    } finally {
      await context.close();
    }
  });
});
