// The owner's screen beyond the first journey (issue 19), in Chromium against a real `shelfapi serve` (SQLite;
// with TEST_STORE=postgres on PostgreSQL with the Redis meter and statistics): create a key expiring on a
// date of the owner's choice, limit it to 127.0.0.2/32 past the lock-out warning, see this process's request
// (from 127.0.0.1) refused with the address in the request log, widen the list to 127.0.0.0/8 and see a 200
// with its request id, download the key's usage CSV and the security log's CSV, roll with a date of the
// owner's choice, and hide the expiry banner that names the new key. axe-core finds no violation and the
// page does not scroll sideways at 390 px on each new or changed page. Screenshots go to docs/ only with
// SHELFAPI_WRITE_SCREENSHOT=1 (npm run docs:screenshot).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { launchChromium, reloadUntil, shoot } from '../helpers/chromium.js';
import { ROOT, runCli, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { openTestStore, TEST_REDIS_URL, TEST_STORE, testRedisPrefix } from '../helpers/test-app.js';

const WRITE_SCREENSHOTS = process.env.SHELFAPI_WRITE_SCREENSHOT === '1';
const WAIT_MS = 30_000;
const AXE_SOURCE = readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
const DAY_MS = 86_400_000;
/** A whole key (KEY_PATTERN is global: its lastIndex would carry from one match to the next). */
const A_KEY = new RegExp(`^${KEY_PATTERN.source}$`);

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown }>;
}

/** axe-core in the page (evaluated through the debugging protocol, which the page's CSP does not govern): no violation at all. */
async function assertNoAxeViolation(page: Page, what: string): Promise<void> {
  const loaded = await page.evaluate('typeof window.axe');
  if (loaded !== 'object') await page.evaluate(`${AXE_SOURCE}\n;void 0`);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then(function (r) { return r.violations.map(function (v) {
      return { id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(function (n) { return { target: n.target }; }) }; }); })`,
  )) as AxeViolation[];
  assert.deepEqual(violations, [], `${what}: axe-core finds no violation`);
}

/** The page at 390 px: no horizontal scroll (wide tables scroll inside their card); then back to 1280 px. */
async function assertNarrowFits(page: Page, what: string, shot?: () => Promise<void>): Promise<void> {
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    const scrollWidth = (await page.evaluate('document.documentElement.scrollWidth')) as number;
    assert.ok(scrollWidth <= 390, `${what}: no horizontal scroll at 390 px (scrollWidth ${scrollWidth})`);
    await assertNoAxeViolation(page, `${what} at 390 px`);
    await shot?.();
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
}

/** YYYY-MM-DD, `days` UTC days from now. */
const utcDate = (days: number) => new Date(Date.now() + days * DAY_MS).toISOString().slice(0, 10);

describe("the owner's screen beyond the first journey, in Chromium", () => {
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  let closeStore: (() => Promise<void>) | undefined;
  let shotsDir = '';
  let origin = '';
  let link = '';
  let signInLink: () => Promise<string> = () => Promise.reject(new Error('not started'));
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
    // On PostgreSQL the server meters and keeps its statistics in Redis, under this file's own prefix.
    const redis: Record<string, string> = TEST_STORE === 'postgres' ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: testRedisPrefix('beyond') } : {};
    server = await startServerProcess({ DATABASE_URL: testStore.databaseUrl, ...redis });
    origin = `http://127.0.0.1:${server.port}`;
    const port = String(server.port);
    // A link works once: each test signs in with one of its own.
    signInLink = async () => {
      const minted = await runCli(['accounts', 'sign-in-link', String(loaded.accounts.owner), '--json'], { DATABASE_URL: testStore.databaseUrl, PORT: port });
      assert.equal(minted.code, 0, minted.stderr);
      return (JSON.parse(minted.stdout) as { url: string }).url;
    };
    link = await signInLink();
    shotsDir = WRITE_SCREENSHOTS ? join(ROOT, 'docs') : mkdtempSync(join(tmpdir(), 'shelfapi-beyond-shots-'));
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await closeStore?.();
    if (!WRITE_SCREENSHOTS && shotsDir !== '') rmSync(shotsDir, { recursive: true, force: true });
  });

  const api = (key: string, path: string) => fetch(`${origin}/developer/v1${path}`, { headers: { 'x-api-key': key } });


  /**
   * Clicks a download link: the file's name and text (Playwright's download event), and the Content-Type of
   * the same URL fetched with the page's cookies (a download fires no response event in Chromium).
   */
  async function download(page: Page, click: () => Promise<void>): Promise<{ name: string; text: string; contentType: string }> {
    const [file] = await Promise.all([page.waitForEvent('download'), click()]);
    const text = readFileSync(await file.path(), 'utf8');
    const again = await page.request.get(file.url());
    assert.equal(again.status(), 200);
    assert.equal((await again.text()).split('\n')[0], text.split('\n')[0], 'the same file');
    return { name: file.suggestedFilename(), text, contentType: again.headers()['content-type'] ?? '' };
  }

  test('allowed addresses, the request log, the CSV downloads and a custom expiry', async () => {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block', acceptDownloads: true });
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') errors.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('response', (r) => {
      if (r.status() >= 400) errors.push(`${r.status()} for ${r.url()}`);
    });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    page.on('request', (r) => {
      if (new URL(r.url()).origin !== origin) errors.push(`request to another host: ${r.url()}`);
    });
    await page.addInitScript({
      content: `document.addEventListener('securitypolicyviolation', function (e) { console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI); });`,
    });
    try {
      await page.goto(link);
      await page.waitForURL(`${origin}/settings/developer-api`);

      // 1. Create a key expiring on a date of the owner's choice, 30 days away.
      await page.goto(`${origin}/settings/developer-api/keys/new`);
      await assertNoAxeViolation(page, 'create form');
      await assertNarrowFits(page, 'create form');
      await page.getByLabel('Name', { exact: true }).fill('nightly sync');
      await page.getByLabel('catalogue:read').check();
      const createDate = utcDate(30);
      await page.getByLabel('Date', { exact: true }).fill(createDate);
      // Typing the date checks "On a date of your choice" (comfort script; without it the owner checks it).
      assert.ok(await page.getByLabel('On a date of your choice').isChecked(), 'the date checks its choice');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.waitForURL(`${origin}/settings/developer-api/keys/created`);
      const key = (await page.locator('#new-key').innerText()).trim();
      assert.match(key, A_KEY);
      await page.getByRole('link', { name: "See the key's details" }).click();
      await page.waitForURL(/\/settings\/developer-api\/keys\/[0-9]+$/);
      const detailsUrl = page.url();
      const keyId = Number(new URL(detailsUrl).pathname.split('/').pop());
      assert.match(await page.locator('main').innerText(), new RegExp(`Expires\\s+[^\\n]*${createDate}`));

      // 2. Limit it to 127.0.0.2/32: the owner, on 127.0.0.1, is warned first, then saves anyway.
      const addresses = page.getByLabel('Allowed addresses');
      const openChanges = () => page.getByText('Rename, allowed addresses, scopes').click();
      await openChanges();
      await addresses.fill('127.0.0.2/32');
      await page.getByRole('button', { name: 'Save addresses' }).click();
      await page.getByRole('button', { name: 'Save anyway' }).waitFor();
      const warning = await page.locator('#addresses-warning').innerText();
      assert.match(warning, /127\.0\.0\.1/, 'the warning names the address the owner is using');
      assert.match(await page.locator('main').innerText(), /Allowed addresses\s+Any address/, 'nothing saved before "Save anyway"');
      await assertNoAxeViolation(page, 'key details with the lock-out warning');
      await page.getByRole('button', { name: 'Save anyway' }).click();
      await page.waitForURL(/\/settings\/developer-api\/keys\/[0-9]+(\?.*)?$/);
      // Saved in canonical form: a /32 is the address itself.
      assert.match(await page.locator('main').innerText(), /Allowed addresses\s+127\.0\.0\.2\s+Created/);

      // 3. This process calls from 127.0.0.1: refused, naming the address.
      const refused = await api(key, '/catalogue');
      assert.equal(refused.status, 401);
      const refusal = (await refused.json()) as { error: string; message: string };
      assert.equal(refusal.error, 'unauthorized');
      assert.equal(refusal.message, 'This key may not be used from 127.0.0.1.');
      const refusedId = refused.headers.get('x-request-id') ?? '';
      assert.notEqual(refusedId, '');

      // 4. Key details: the refusal in the request log, with the address and request id, and the filter.
      await page.goto(detailsUrl);
      const withRefusal = await reloadUntil(page, new RegExp(refusedId));
      assert.match(withRefusal, new RegExp(`GET /developer/v1/catalogue\\s+401\\s+unauthorized\\s+[0-9.]+ ms\\s+127\\.0\\.0\\.1\\s+${refusedId}`));
      await page.getByLabel('Show', { exact: true }).selectOption({ label: 'Refused address (401)' });
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/outcome=refused_address/);
      const filtered = await page.locator('#request-log-heading').locator('..').innerText();
      assert.match(filtered, new RegExp(refusedId));
      assert.match(filtered, /This key may not be used from 127\.0\.0\.1\./, 'a filtered log: what the client was told');
      await page.getByLabel('Show', { exact: true }).selectOption({ label: 'Counted' });
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/outcome=counted/);
      assert.match(await page.locator('#request-log-heading').locator('..').innerText(), /No request with this outcome/);

      // 5. Widen the list to 127.0.0.0/8 (no warning: it holds the owner's address): a 200.
      await page.goto(detailsUrl);
      await openChanges();
      await addresses.fill('127.0.0.0/8');
      await page.getByRole('button', { name: 'Save addresses' }).click();
      await page.waitForURL(/\/settings\/developer-api\/keys\/[0-9]+(\?.*)?$/);
      assert.match(await page.locator('main').innerText(), /Allowed addresses\s+127\.0\.0\.0\/8\s+Created/);
      const allowed = await api(key, '/catalogue');
      assert.equal(allowed.status, 200);
      const allowedId = allowed.headers.get('x-request-id') ?? '';
      assert.notEqual(allowedId, '');

      // 6. Key details: the 200 with its request id, server time p95, and the usage CSV.
      await page.goto(detailsUrl);
      const details = await reloadUntil(page, new RegExp(`GET /developer/v1/catalogue\\s+200\\s+–\\s+[0-9.]+ ms\\s+127\\.0\\.0\\.1\\s+${allowedId}`));
      assert.match(details, /p95\s+[0-9.]+ ms/);
      assert.match(details, /2 requests last 30 days, per day/);
      // The range picker: plain links; the chart, the endpoints and the CSV follow it.
      await page.getByRole('navigation', { name: 'Range' }).getByRole('link', { name: '24 hours' }).click();
      await page.waitForURL(/\?range=24h#usage-heading$/);
      assert.match(await page.locator('main').innerText(), /2 requests last 24 hours, per hour/);
      await assertNoAxeViolation(page, 'key details with allowed addresses, usage in depth and the request log');
      await shoot(shotsDir, page, 'settings-key-limited.png');
      await assertNarrowFits(page, 'key details', () => shoot(shotsDir, page, 'settings-key-limited-390.png'));
      const usage = await download(page, () => page.getByRole('link', { name: 'Download CSV' }).click());
      assert.match(usage.contentType, /^text\/csv/);
      assert.match(usage.name, new RegExp(`^key-${keyId}-usage-24h-[0-9]{4}-[0-9]{2}-[0-9]{2}\\.csv$`));
      const usageLines = usage.text.trimEnd().split(/\r?\n/);
      assert.match(usageLines[0]!, /^hour_utc,counted,.*refused_address,outcomes_total,.*p50_ms,p95_ms,p99_ms$/);
      assert.match(usageLines.at(-1)!, /^total,1,/, 'the range row counts the one counted request');

      // 7. The security log: both changes of the addresses, filtered by kind and key; its CSV.
      await page.goto(`${origin}/settings/developer-api/security-log`);
      await page.getByLabel('Event', { exact: true }).selectOption({ label: 'Allowed addresses changed' });
      await page.getByLabel('Key', { exact: true }).selectOption({ value: String(keyId) });
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(new RegExp(`kind=key_addresses_changed&key=${keyId}`));
      const events = page.getByRole('region', { name: 'Security events' });
      assert.equal(await events.locator('tbody tr').count(), 2, 'the two changes of the addresses, nothing else');
      const log = await events.innerText();
      assert.match(log, /allowed addresses from 127\.0\.0\.2 to 127\.0\.0\.0\/8[\s\S]*allowed addresses from any address to 127\.0\.0\.2/);
      await assertNoAxeViolation(page, 'security log, filtered');
      await assertNarrowFits(page, 'security log');
      const securityCsv = await download(page, () => page.getByRole('link', { name: 'Download CSV' }).click());
      assert.match(securityCsv.contentType, /^text\/csv/);
      const securityLines = securityCsv.text.trimEnd().split(/\r?\n/);
      assert.equal(securityLines[0], 'time,event,key_id,key_name,key_hint,actor,address,detail');
      assert.equal(securityLines.length, 3, 'the filtered log: the header and the two changes');
      for (const line of securityLines.slice(1)) assert.match(line, new RegExp(`,key_addresses_changed,${keyId},nightly sync,`));

      // 8. Roll with a date of the owner's choice, 3 days away; the old key stops in an hour.
      await page.goto(detailsUrl);
      await page.getByRole('link', { name: 'Roll' }).click();
      await assertNoAxeViolation(page, 'roll form');
      await assertNarrowFits(page, 'roll form');
      await page.getByLabel('In 1 hour').check();
      const rollDate = utcDate(3);
      await page.getByLabel('On a date of your choice').check();
      await page.getByLabel('Date', { exact: true }).fill(rollDate);
      await page.getByRole('button', { name: 'Roll key' }).click();
      await page.waitForURL(`${origin}/settings/developer-api/keys/created`);
      const rolled = (await page.locator('#new-key').innerText()).trim();
      assert.match(rolled, A_KEY);
      assert.equal((await api(rolled, '/catalogue')).status, 200, 'the new key keeps the allowed addresses and works from 127.0.0.1');

      // 9. The overview's banner names the new key expiring in 3 days; hidden until tomorrow, it is gone.
      await page.goto(`${origin}/settings/developer-api`);
      const banner = page.locator('.reminders');
      assert.match(await banner.innerText(), new RegExp(`nightly sync expires [^\\n]*${rollDate}`));
      assert.equal(await banner.locator('li').count(), 1, 'only the new key: the old one is on its way out');
      await assertNoAxeViolation(page, 'overview with the expiry banner');
      await assertNarrowFits(page, 'overview with the expiry banner');
      await page.getByRole('button', { name: /Hide until tomorrow/ }).click();
      await page.waitForURL(/\/settings\/developer-api(\?.*)?$/);
      assert.equal(await page.locator('.reminders').count(), 0, 'the banner is hidden');
      assert.match(await page.locator('main').innerText(), /Usage in depth/);

      assert.deepEqual(errors, [], 'no console error, CSP violation, page error, failed response or request to another host');
    } finally {
      await context.close();
    }
  });

  test('one chart with a range picker, one request log with a filter and 20-line pages; the page heights at 1280 px', async (t) => {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    try {
      await page.goto(await signInLink());
      await page.waitForURL(`${origin}/settings/developer-api`);
      await page.goto(`${origin}/settings/developer-api/keys/new`);
      await page.getByLabel('Name', { exact: true }).fill('price sync');
      await page.getByLabel('catalogue:read').check();
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.waitForURL(`${origin}/settings/developer-api/keys/created`);
      const key = (await page.locator('#new-key').innerText()).trim();
      await page.getByRole('link', { name: "See the key's details" }).click();
      await page.waitForURL(/\/settings\/developer-api\/keys\/[0-9]+$/);
      const detailsUrl = page.url();

      // A script's morning, as the demo's: 36 counted, 4 bad requests, 3 without the scope, 2 calls of /me.
      const paths = [...Array<string>(36).fill('/catalogue/1'), ...Array<string>(4).fill('/catalogue?limit=nope'), ...Array<string>(3).fill('/collection'), '/me', '/me'];
      for (const path of paths) await (await api(key, path)).arrayBuffer();
      await reloadUntil(page, /Page 1 of 3/);
      const main = page.locator('main');
      const logRows = page.getByRole('region', { name: 'Request log table' }).locator('tbody tr');
      assert.equal(await page.locator('svg[role="img"]').count(), 1, 'one chart');
      assert.equal(await page.locator('h2', { hasText: /rejected/i }).count(), 0, 'no second log');
      const keyHeight = (await page.evaluate('document.documentElement.scrollHeight')) as number;
      await shoot(shotsDir, page, 'settings-key-details.png');

      // The range picker: plain links; the chart and the by-endpoint table follow it.
      await page.getByRole('navigation', { name: 'Range' }).getByRole('link', { name: '7 days' }).click();
      await page.waitForURL(/\?range=7d#usage-heading$/);
      assert.equal(await page.getByRole('link', { name: '7 days' }).getAttribute('aria-current'), 'page');
      const week = await main.innerText();
      assert.match(week, /43 requests last 7 days, per day/, 'the outcomes leave /me out');
      assert.match(week, /45 requests: every request, also those the chart leaves out: \/me \(it counts toward the burst limit, not the monthly quota\)/);

      // The filter: rejected only, the range kept.
      await page.getByLabel('Show', { exact: true }).selectOption({ label: 'Rejected only (4xx, 5xx)' });
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/range=7d&outcome=rejected#request-log-heading$/);
      assert.equal(await logRows.count(), 7);
      for (const row of await logRows.allInnerTexts()) assert.match(row, /\s(400|403)\s/);
      await assertNoAxeViolation(page, 'key details, rejected only');
      await assertNarrowFits(page, 'key details, rejected only');

      // Pages of 20, newest first, the filter kept from page to page.
      await page.getByLabel('Show', { exact: true }).selectOption({ label: 'Counted' });
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/outcome=counted#request-log-heading$/);
      assert.equal(await logRows.count(), 20);
      await page.getByRole('navigation', { name: 'Pages of the request log' }).getByRole('link', { name: 'Older →' }).click();
      await page.waitForURL(/outcome=counted&page=2#request-log-heading$/);
      assert.equal(await logRows.count(), 16);
      for (const row of await logRows.allInnerTexts()) assert.match(row, /GET \/developer\/v1\/catalogue\/1\s+200\s/);
      assert.match(await main.innerText(), /Page 2 of 2/);
      await page.goto(`${detailsUrl}?page=3`);
      assert.equal(await logRows.count(), 5, 'the last page of all 45');

      await page.goto(`${origin}/settings/developer-api`);
      assert.equal(await page.locator('svg[role="img"]').count(), 1, 'one chart on the overview');
      const overviewHeight = (await page.evaluate('document.documentElement.scrollHeight')) as number;
      await assertNoAxeViolation(page, 'overview');
      t.diagnostic(`heights at 1280 px: key details ${keyHeight} px, overview ${overviewHeight} px`);
      assert.ok(keyHeight <= 2200, `key details: ${keyHeight} px tall at 1280 px`);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
