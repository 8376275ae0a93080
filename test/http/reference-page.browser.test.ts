// The reference page in a real browser: Debian's Chromium, driven by playwright-core, against a real
// `shelfapi serve` process. Every request the page makes stays on the server's own origin, Swagger UI
// renders exactly the operations of openapi.json, "Try it out" works with a key, and a screenshot is
// taken (to docs/reference.png only with SHELFAPI_WRITE_SCREENSHOT=1, so that `npm test` changes no file).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { loadConfig } from '../../src/config.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { launchChromium } from '../helpers/chromium.js';
import { ROOT, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { openTestStore } from '../helpers/test-app.js';

const WRITE_SCREENSHOT = process.env.SHELFAPI_WRITE_SCREENSHOT === '1';
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
// Playwright's own default of 30 s is tight for a 1.7 MB bundle on a busy 2-CPU machine.
const WAIT_MS = 90_000;

/** Every operation of the committed document, as "METHOD /path". */
function documentedOperations(): string[] {
  const doc = JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(doc.paths)
    .flatMap(([path, item]) => Object.keys(item).filter((m) => HTTP_METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();
}

/** Records what a page does that it should not: requests, console errors, CSP violations, uncaught errors. */
interface Watch {
  requests: string[];
  errors: string[];
}

async function openPage(context: BrowserContext, url: string): Promise<{ page: Page; watch: Watch }> {
  const watch: Watch = { requests: [], errors: [] };
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('request', (request) => watch.requests.push(request.url()));
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') watch.errors.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => watch.errors.push(`page error: ${error.message}`));
  // Chromium also logs CSP refusals to the console; the event names the directive and the blocked URL.
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', function (e) {
      console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI);
    });`,
  });
  await page.goto(url);
  return { page, watch };
}

/** Waits until Swagger UI has rendered the document's operations (or shown why it could not). */
async function waitForOperations(page: Page, count: number): Promise<void> {
  // Polled from here with page.evaluate (the debugging protocol, which the page's CSP does not govern):
  // page.waitForFunction re-evaluates its predicate inside the page with eval, which this page's strict
  // script-src refuses once the first check comes back false.
  const ready = `document.querySelectorAll('#swagger-ui .opblock').length >= ${count} || /could not be loaded/.test(document.body.innerText)`;
  const until = Date.now() + WAIT_MS;
  while (!(await page.evaluate(ready))) {
    if (Date.now() > until) assert.fail(`Swagger UI did not render ${count} operations within ${WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const text = await page.locator('#swagger-ui').innerText();
  assert.doesNotMatch(text, /could not be loaded/, text.slice(0, 500));
}

async function renderedOperations(page: Page): Promise<string[]> {
  const blocks = page.locator('#swagger-ui .opblock');
  const operations: string[] = [];
  for (const block of await blocks.all()) {
    const method = (await block.locator('.opblock-summary-method').innerText()).trim().toUpperCase();
    const path = await block.locator('.opblock-summary-path').getAttribute('data-path');
    operations.push(`${method} ${path ?? '(no path)'}`);
  }
  return operations.sort();
}

function assertSameOrigin(watch: Watch, origin: string): void {
  assert.ok(watch.requests.length > 0, 'the page made requests');
  // data: URLs (Swagger UI's inline icons) are decoded in the page and reach no host at all.
  const offOrigin = watch.requests.filter((u) => !u.startsWith('data:') && new URL(u).origin !== origin);
  assert.deepEqual(offOrigin, [], `every request goes to ${origin}`);
}

describe('the reference page in Chromium', () => {
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  let closeStore: (() => Promise<void>) | undefined;
  let origin = '';
  let key = '';
  const operations = documentedOperations();

  before(async () => {
    const testStore = await openTestStore();
    closeStore = testStore.close;
    const loaded = await loadDataset(
      testStore.store,
      {
        accounts: [{ ref: 'reader', email: 'reader@example.com', plan: 'enthusiast' }],
        keys: [{ ref: 'reader', account: 'reader', name: 'reference page', scopes: [...SCOPES] }],
      },
      { keyPrefix: loadConfig({}).keyPrefix, now: Date.now() },
    );
    key = loaded.keys.reader!;
    server = await startServerProcess({ DATABASE_URL: testStore.databaseUrl });
    origin = `http://127.0.0.1:${server.port}`;
    // Fails, never skips: a missing browser must not pass as a green run (launchChromium asserts it).
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await closeStore?.();
  });

  test('renders every operation of openapi.json and no other, loading only from this server', async () => {
    assert.ok(operations.length >= 12, `the document has its operations: ${operations.length}`);
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    try {
      const { page, watch } = await openPage(context, `${origin}/developer/docs`);
      await waitForOperations(page, operations.length);
      assert.match(await page.locator('#swagger-ui .info .title').innerText(), /shelfapi Developer API/);
      assert.deepEqual(await renderedOperations(page), operations);
      // "Try it out" can only reach this server: it is the server offered first.
      assert.match(await page.locator('#swagger-ui .servers select').inputValue(), new RegExp(`^${origin}/?$`));

      await page.waitForLoadState('networkidle');
      const dir = WRITE_SCREENSHOT ? null : mkdtempSync(join(tmpdir(), 'shelfapi-reference-'));
      const path = dir === null ? join(ROOT, 'docs', 'reference.png') : join(dir, 'reference.png');
      try {
        await page.screenshot({ path, fullPage: true });
        const png = readFileSync(path);
        assert.ok(png.subarray(1, 4).toString('latin1') === 'PNG' && png.length > 10_000, `a screenshot at ${path}`);
      } finally {
        if (dir !== null) rmSync(dir, { recursive: true, force: true });
      }

      assertSameOrigin(watch, origin);
      assert.ok(watch.requests.includes(`${origin}/developer/docs/openapi.json`), 'the document came from this server');
      assert.deepEqual(watch.errors, [], 'no console error, CSP violation or page error');
    } finally {
      await context.close();
    }
  });

  test('"Order of checks" renders as ten list items, one step each', async () => {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    try {
      const { page } = await openPage(context, `${origin}/developer/docs`);
      await waitForOperations(page, operations.length);
      // The list that follows the heading in the rendered description (evaluated from here: the page's CSP).
      const items = (await page.evaluate(`(() => {
        const heading = [...document.querySelectorAll('#swagger-ui .info h2')].find((h) => h.textContent.trim() === 'Order of checks');
        let next = heading ? heading.nextElementSibling : null;
        while (next && next.tagName !== 'OL') next = next.nextElementSibling;
        return next ? [...next.children].map((li) => li.textContent.trim()) : null;
      })()`)) as string[] | null;
      assert.ok(items, 'a numbered list under "Order of checks"');
      assert.equal(items.length, 10, items.join('\n'));
      assert.deepEqual(
        items.map((item) => /^[A-Z][a-z]+/.exec(item)?.[0]),
        ['Method', 'Key', 'Address', 'Plan', 'Burst', 'Route', 'Scope', 'Parameters', 'Monthly', 'The'],
      );
    } finally {
      await context.close();
    }
  });

  test('"Try it out" with a key given to Authorize (X-API-Key) calls this server and gets 200', async () => {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    try {
      const { page, watch } = await openPage(context, `${origin}/developer/docs`);
      await waitForOperations(page, operations.length);

      await page.locator('#swagger-ui .auth-wrapper button.authorize').click();
      const scheme = page.locator('.auth-container').filter({ hasText: 'apiKeyHeader' });
      await scheme.locator('input').fill(key);
      await scheme.locator('button.authorize').click();
      await scheme.locator('button.btn-done').click();

      const me = page.locator('#swagger-ui .opblock').filter({ has: page.locator('.opblock-summary-path[data-path="/developer/v1/me"]') });
      await me.locator('.opblock-summary').first().click();
      await me.locator('button.try-out__btn').click();
      await me.locator('button.execute').click();
      const status = me.locator('.live-responses-table .response .response-col_status');
      await status.first().waitFor();
      assert.equal((await status.first().innerText()).trim(), '200', await me.locator('.live-responses-table').innerText());
      assert.equal((await me.locator('.request-url pre').innerText()).trim(), `${origin}/developer/v1/me`);
      assert.match(await me.locator('.live-responses-table .response .response-col_description').first().innerText(), /"usage"/);

      assertSameOrigin(watch, origin);
      assert.ok(watch.requests.includes(`${origin}/developer/v1/me`), 'the call went to this server');
      assert.deepEqual(watch.errors, [], 'no console error, CSP violation or page error');
    } finally {
      await context.close();
    }
  });
});
