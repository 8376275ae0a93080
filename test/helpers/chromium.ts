/**
 * Debian's Chromium (`/usr/bin/chromium`) driven by playwright-core, headless, for the browser tests. A
 * missing browser fails the test, never skips it: a green run must have run it.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: install it with \`apt-get install -y chromium\` (.ci/run does)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A full-page screenshot of `page` into `dir`, checked to be a PNG of some size. */
export async function shoot(dir: string, page: Page, name: string): Promise<void> {
  const path = join(dir, name);
  await page.screenshot({ path, fullPage: true });
  const png = readFileSync(path);
  assert.ok(png.subarray(1, 4).toString('latin1') === 'PNG' && png.length > 5_000, `a screenshot at ${path}`);
}

/** Reloads until the page's text matches: per-key statistics and the request log are written within a second. */
export async function reloadUntil(page: Page, pattern: RegExp): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const text = await page.locator('main').innerText();
    if (pattern.test(text)) return text;
    if (Date.now() > deadline) assert.fail(`the page never showed ${pattern}: ${text.slice(0, 3000)}`);
    await new Promise((r) => setTimeout(r, 300));
    await page.reload();
  }
}
