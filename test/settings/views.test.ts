// Pure pieces of the settings screen, tested with data and no server: the chart, formatting, the same-site
// rule, escaping, and the configuration the screen reads.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openNewKey, sealNewKey } from '../../src/services/settings-auth/reveal.js';
import { renderDocument } from '../../src/http/settings/render.js';
import { checkSameSite } from '../../src/http/settings/site.js';
import { BarChart, niceCeiling } from '../../src/http/settings/views/bar-chart.js';
import { formatCount, formatRelative, formatUtc, percent } from '../../src/http/settings/views/format.js';
import { MessagePage } from '../../src/http/settings/views/message-page.js';
import { percentileText } from '../../src/http/settings/views/usage-depth.js';
import { SignedOutPage } from '../../src/http/settings/views/signed-out.js';

const DAYS = ['2026-06-13', '2026-06-14', '2026-06-15'];

describe('bar chart', () => {
  test('per hour: labels, description and table name hours (UTC)', () => {
    const html = renderDocument(
      BarChart({ id: 'h', title: 'Per hour', unit: 'hour', days: ['2026-06-14T22', '2026-06-14T23', '2026-06-15T00'], series: [{ name: 'Counted', tone: 'counted', values: [1, 2, 3] }] }),
    );
    assert.match(html, /<desc id="h-desc">6 requests over 3 hours, from Jun 14 22:00 to Jun 15 00:00; busiest hour 3\.<\/desc>/);
    assert.match(html, /<th scope="col">Hour \(UTC\)<\/th>/);
    assert.match(html, /<th scope="row">2026-06-14 23:00<\/th><td>2<\/td>/);
  });

  test('server-time percentiles: to 2 figures; an old period\'s as its bucket bound; past the last bound', () => {
    const about = (ms: number) => percentileText({ ms, kind: 'about' });
    assert.deepEqual([percentileText(null), about(0.4234), about(4.234), about(42.34), about(423.4), about(4234)], ['–', '0.42 ms', '4.2 ms', '42 ms', '420 ms', '4.2 s']);
    assert.deepEqual([percentileText({ ms: 7.5, kind: 'at_most' }), percentileText({ ms: 5000, kind: 'over' }), percentileText({ ms: 65_536, kind: 'over' })], ['≤ 7.5 ms', '> 5,000 ms', '> 65 s']);
  });

  test('a round top for the axis', () => {
    assert.deepEqual([0, 1, 3, 7, 10, 11, 99, 101, 4999].map(niceCeiling), [1, 1, 5, 10, 10, 20, 100, 200, 5000]);
  });

  test('one bar per day with a value, scaled to the top; title, description and a table of the same numbers', () => {
    const html = renderDocument(BarChart({ id: 'c', title: 'Requests <per> day', days: DAYS, series: [{ name: 'Counted', tone: 'counted', values: [0, 5, 10] }] }));
    assert.equal(html.match(/<rect /g)?.length, 2, 'no bar for a day with none');
    assert.match(html, /<title id="c-title">Requests &lt;per> day<\/title>/);
    assert.match(html, /<desc id="c-desc">15 requests over 3 days, from Jun 13 to Jun 15; busiest day 10\.<\/desc>/);
    assert.match(html, /aria-labelledby="c-title c-desc"/);
    const heights = [...html.matchAll(/<rect [^>]*height="([0-9.]+)"/g)].map((m) => Number(m[1]));
    assert.ok(Math.abs(heights[1]! - 2 * heights[0]!) < 1e-9, 'the bar of 10 is twice the bar of 5');
    assert.match(html, /<th scope="row">2026-06-14<\/th><td>5<\/td>/);
    assert.doesNotMatch(html, /<figcaption>/, 'no legend for one series');
  });

  test('stacked series: one rect per non-zero value, a legend, a total column', () => {
    const html = renderDocument(
      BarChart({
        id: 's',
        title: 'By outcome',
        days: DAYS,
        series: [
          { name: 'Counted', tone: 'counted', values: [1, 0, 2] },
          { name: 'Rate limited (429)', tone: 'rate_limited', values: [1, 3, 0] },
        ],
      }),
    );
    assert.equal(html.match(/<rect /g)?.length, 4);
    assert.match(html, /<li><span class="swatch rate_limited" aria-hidden="true"><\/span>Rate limited \(429\)<\/li>/);
    assert.match(html, /<th scope="row">2026-06-13<\/th><td>1<\/td><td>1<\/td><td>2<\/td>/);
  });

  test('no requests at all: an empty chart, still labelled', () => {
    const html = renderDocument(BarChart({ id: 'e', title: 'Nothing', days: DAYS, series: [{ name: 'Counted', tone: 'counted', values: [0, 0, 0] }] }));
    assert.equal(html.match(/<rect /g), null);
    assert.match(html, /0 requests over 3 days/);
  });
});

describe('views', () => {
  test('text is escaped by the renderer', () => {
    const html = renderDocument(MessagePage({ title: '<script>alert(1)</script>', shell: null, children: '"&<img src=x onerror=alert(1)>' }));
    assert.ok(!html.includes('<script>alert'));
    assert.ok(!html.includes('<img src=x'));
    assert.match(html, /&lt;script>alert\(1\)&lt;\/script>/);
    assert.ok(html.startsWith('<!DOCTYPE html>'));
  });

  test('counts are grouped as en-US Intl groups them, whole numbers or not', () => {
    const intl = new Intl.NumberFormat('en-US');
    const values = [0, -0, 7, -7, 999, 1000, -1000, 12_345, 100_000, 1_234_567, -9_876_543, Number.MAX_SAFE_INTEGER, 2 ** 60, 1.5, -1234.5678, NaN, Infinity];
    for (let digits = 1; digits <= 16; digits++) values.push(Number('9'.repeat(digits)), Number(`1${'0'.repeat(digits - 1)}`));
    for (const n of values) assert.equal(formatCount(n), intl.format(n), String(n));
    assert.equal(formatCount(1_234_567), '1,234,567');
  });

  test('times: exact UTC and relative', () => {
    const now = Date.parse('2026-06-15T12:00:00.000Z');
    assert.equal(formatUtc('2026-06-15T08:05:59.000Z'), '2026-06-15 08:05 UTC');
    assert.equal(formatRelative('2026-06-15T11:59:30.000Z', now), 'just now');
    assert.equal(formatRelative('2026-06-15T09:00:00.000Z', now), '3 hours ago');
    assert.equal(formatRelative('2026-06-17T12:00:00.000Z', now), 'in 2 days');
    assert.deepEqual([percent(0, 10), percent(8, 10), percent(11, 10), percent(1, 0)], [0, 80, 100, 100]);
  });

  test('a time to come counts whole units rounded up: a 30-day key reads "in 30 days" right after it is made', () => {
    const now = Date.parse('2026-06-15T12:00:00.000Z');
    const later = (ms: number) => new Date(now + ms).toISOString();
    const day = 86_400_000;
    // Made a moment ago (the page is drawn a few milliseconds after the key).
    assert.equal(formatRelative(later(30 * day - 5), now), 'in 30 days');
    assert.equal(formatRelative(later(7 * day - 5), now), 'in 7 days');
    assert.equal(formatRelative(later(29 * day + 3_600_000), now), 'in 30 days', 'a day begun counts');
    assert.equal(formatRelative(later(29 * day), now), 'in 29 days');
    assert.equal(formatRelative(later(24 * 3_600_000 - 5), now), 'in 24 hours');
    assert.equal(formatRelative(later(3_600_000 - 5), now), 'in 60 minutes');
    assert.equal(formatRelative(later(90 * day - 5), now), 'in 3 months');
    // Times past keep counting whole units done.
    assert.equal(formatRelative(new Date(now - (30 * day - 5)).toISOString(), now), '29 days ago');
  });
});

describe('signed out, and the way back', () => {
  const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

  test('the signed-out page says how to get a new sign-in link: from the platform, or from the operator\'s command', () => {
    const page = text(renderDocument(SignedOutPage()));
    assert.match(page, /Settings → Developer API on the platform/);
    assert.match(page, /new sign-in link/);
    assert.match(page, /shelfapi accounts sign-in-link ACCOUNT_ID/);
    assert.match(page, /once, within 15 minutes/);
  });

  test('"Settings" in the breadcrumb is a link; "Developer API" links to the overview', () => {
    const html = renderDocument(MessagePage({ title: 'x', shell: null, children: '' }));
    const crumbs = /<nav aria-label="Breadcrumb"[^>]*>(.*?)<\/nav>/s.exec(html)?.[1] ?? '';
    assert.match(crumbs, /<a [^>]*href="\/settings"[^>]*>Settings<\/a>/);
    assert.match(crumbs, /<a [^>]*href="\/settings\/developer-api"[^>]*>Developer API<\/a>/);
  });
});

describe('same-site rule for POSTs', () => {
  const site = 'https://api.example.com';
  test('Origin decides when present; else Sec-Fetch-Site; neither is refused', () => {
    assert.deepEqual(checkSameSite({ origin: site }, site), { ok: true });
    assert.equal(checkSameSite({ origin: 'https://api.example.com.evil.example' }, site).ok, false);
    assert.equal(checkSameSite({ origin: 'http://api.example.com' }, site).ok, false);
    assert.equal(checkSameSite({ origin: site, 'sec-fetch-site': 'cross-site' }, site).ok, true, 'Origin is the stronger signal');
    assert.equal(checkSameSite({ 'sec-fetch-site': 'same-origin' }, site).ok, true);
    assert.equal(checkSameSite({ 'sec-fetch-site': 'same-site' }, site).ok, false);
    assert.equal(checkSameSite({}, site).ok, false);
    // Our pages are Referrer-Policy: no-referrer, so Chromium posts their forms with Origin: null.
    assert.equal(checkSameSite({ origin: 'null', 'sec-fetch-site': 'same-origin' }, site).ok, true);
    assert.equal(checkSameSite({ origin: 'null', 'sec-fetch-site': 'cross-site' }, site).ok, false);
    assert.equal(checkSameSite({ origin: 'null' }, site).ok, false);
  });
});

describe('new key slot sealing', () => {
  test('opens only with the cookie it was sealed with', () => {
    const sealed = sealNewKey('cookie-a', 'shelf_live_secret');
    assert.equal(openNewKey('cookie-a', sealed), 'shelf_live_secret');
    assert.equal(openNewKey('cookie-b', sealed), null);
    assert.equal(openNewKey('cookie-a', `${sealed.slice(0, -2)}AA`), null);
    assert.ok(!sealed.includes('secret'));
  });
});

describe('settings configuration', () => {
  test('PUBLIC_URL, SETTINGS_HANDOVER_SECRET, SETTINGS_REAUTH_MINUTES', () => {
    const config = loadConfig({ PUBLIC_URL: 'https://api.example.com/', SETTINGS_HANDOVER_SECRET: 'x'.repeat(32), SETTINGS_REAUTH_MINUTES: '15' });
    assert.equal(config.publicUrl, 'https://api.example.com');
    assert.equal(config.settingsHandoverSecret, 'x'.repeat(32));
    assert.equal(config.settingsReauthMinutes, 15);
    const defaults = loadConfig({});
    assert.equal(defaults.publicUrl, null);
    assert.equal(defaults.settingsHandoverSecret, null);
    assert.equal(defaults.settingsReauthMinutes, 60);
    assert.throws(() => loadConfig({ SETTINGS_HANDOVER_SECRET: 'short' }), (e: unknown) => e instanceof ConfigError && /SETTINGS_HANDOVER_SECRET: expected at least 32 bytes/.test(e.message));
    assert.throws(() => loadConfig({ PUBLIC_URL: 'ftp://x' }), /PUBLIC_URL/);
    assert.throws(() => loadConfig({ PUBLIC_URL: 'https://x.example/app' }), /PUBLIC_URL: expected an origin only/);
    assert.throws(() => loadConfig({ SETTINGS_REAUTH_MINUTES: '0' }), /SETTINGS_REAUTH_MINUTES/);
  });
});
