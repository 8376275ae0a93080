// Key details' request log and usage in depth (issue 19, items 3 and 2), through the real pipeline and the
// settings screen, on the suite's store (SQLite with the statistics in the database, or PostgreSQL with
// them in Redis): a request shows up with the request id the client got, its key redacted, its status,
// error and server time; the outcome filter; 101 requests keep the last 100; 7 days; another account's
// key is a 404; the ranges (a bad one is a 400 page); p95; the CSV's numbers.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { keyIdOf } from '../helpers/pipeline-helpers.js';
import { SettingsClient, textOf } from './settings-helpers.js';
import { API_ENDPOINTS } from '../../src/http/settings/usage-depth-data.js';
import { buildOpenApiDocument } from '../../src/cli/openapi-document.js';
import { key } from './pages-helpers.js';

/** The request log's rows of a page, as text, newest first. */
function logRows(html: string): string[] {
  const section = html.slice(html.indexOf('id="request-log-heading"'));
  const body = section.slice(section.indexOf('<tbody>'), section.indexOf('</tbody>'));
  return body.split('</tr>').slice(0, -1).map((row) => textOf(row).trim());
}

/** A CSV's rows, cells split (no quoted cells in these). */
const csvRows = (text: string) => text.trimEnd().split('\r\n').map((line) => line.split(','));

test('usage in depth names exactly the API\'s 12 endpoints (its OpenAPI paths)', async () => {
  const paths = Object.keys((JSON.parse(await buildOpenApiDocument()) as { paths: Record<string, unknown> }).paths).map((p) => p.replace('/developer/v1', '').replace(/\{([A-Za-z]+)\}/g, ':$1'));
  assert.deepEqual([...API_ENDPOINTS].sort(), paths.sort());
});

describe('request log and usage in depth', () => {
  let ctx: TestContext;
  let browser: SettingsClient;
  let alice: number;

  before(async () => {
    ctx = await createTestContext({ env: { PLAN_LIMITS: JSON.stringify({ enthusiast: { monthly: 100_000, perMinute: 1000 } }) } });
    alice = ctx.loaded.accounts.alice!;
  });
  after(async () => ctx.close());
  beforeEach(async () => {
    ctx.clock.set('2026-11-20T12:00:00.000Z');
    browser = new SettingsClient(ctx);
    await browser.signIn(alice);
  });

  test('a request shows up with the request id the client got, its path and query with any key redacted, status, error, server time, address', async () => {
    const id = await keyIdOf(ctx, 'alice');
    const leaked = ctx.loaded.keys['alice-second']!;
    const bare = leaked.slice(leaked.indexOf('live_'));
    const ok = await ctx.get(`${V1}/catalogue/1`, 'alice');
    assert.equal(ok.statusCode, 200);
    ctx.clock.advance(1000);
    const bad = await ctx.get(`${V1}/catalogue?search=${leaked}&again=${encodeURIComponent(bare)}`, 'alice');
    assert.equal(bad.statusCode, 400);
    await ctx.stats.flush();
    const page = await browser.get(key(id));
    assert.equal(page.statusCode, 200, page.body);
    assert.ok(!page.body.includes(bare.slice(5, 30)), 'no key on the page, with or without its prefix');
    const [newest, older] = logRows(page.body);
    assert.match(newest!, /^just now GET \/developer\/v1\/catalogue\?search=\[redacted\]&again=\[redacted\] 400 bad_request [0-9.]+ ms 127\.0\.0\.1 /);
    const [rejected] = logRows((await browser.get(key(id, '?outcome=rejected'))).body);
    assert.match(rejected!, /400 bad_request Unknown query parameter 'again'[^]*? [0-9.]+ ms 127\.0\.0\.1 /, 'rejected only: the message the client got, beside its error code');
    assert.ok(newest!.endsWith(String(bad.headers['x-request-id'])), 'the request id the client got');
    assert.match(page.body, /<time datetime="2026-11-20T12:00:01.000Z" title="2026-11-20 12:00 UTC">just now<\/time>/, 'the exact time in its title and datetime');
    assert.match(older!, /GET \/developer\/v1\/catalogue\/1 200 – [0-9.]+ ms 127\.0\.0\.1 /);
    assert.ok(older!.endsWith(String(ok.headers['x-request-id'])));
  });

  test('the outcome filter shows only that outcome (a GET form); an outcome no form sends is a 400 page', async () => {
    const id = await keyIdOf(ctx, 'alice-noscope');
    await ctx.get(`${V1}/me`, 'alice-noscope');
    await ctx.get(`${V1}/catalogue`, 'alice-noscope');
    await ctx.get(`${V1}/prices`, 'alice-noscope');
    await ctx.stats.flush();
    const all = await browser.get(key(id));
    assert.equal(logRows(all.body).length, 3);
    assert.match(all.body, /<form method="get" action="\/settings\/developer-api\/keys\/[0-9]+#request-log-heading"/);
    const scope = await browser.get(key(id, '?outcome=insufficient_scope'));
    assert.equal(scope.statusCode, 200);
    const rows = logRows(scope.body);
    assert.equal(rows.length, 2);
    for (const row of rows) assert.match(row, / 403 insufficient_scope /);
    assert.match(scope.body, /<option value="insufficient_scope" selected>/);
    const me = logRows((await browser.get(key(id, '?outcome=not_counted'))).body);
    assert.equal(me.length, 1);
    assert.match(me[0]!, /GET \/developer\/v1\/me 200/);
    assert.match(textOf((await browser.get(key(id, '?outcome=quota_exceeded'))).body), /No request with this outcome among the last requests/);
    assert.equal((await browser.get(key(id, '?outcome=all'))).statusCode, 200);
    assert.equal((await browser.get(key(id, '?outcome=teapot'))).statusCode, 400);
    assert.equal((await browser.get(key(id, '?outcome=counted&outcome=bad_request'))).statusCode, 400);
  });

  test('101 requests keep the last 100, 20 a page, newest first; lines older than 7 days are not shown', async () => {
    const id = await keyIdOf(ctx, 'alice-second');
    for (let i = 1; i <= 101; i++) {
      ctx.clock.advance(10);
      await ctx.get(`${V1}/catalogue/${i}`, 'alice-second');
      if (i === 60) await ctx.stats.flush();
    }
    await ctx.stats.flush();
    const first = await browser.get(key(id));
    const rows = logRows(first.body);
    assert.equal(rows.length, 20);
    assert.match(rows[0]!, /GET \/developer\/v1\/catalogue\/101 /);
    assert.match(textOf(first.body), /Page 1 of 5 Older →/);
    const last = await browser.get(key(id, '?page=5'));
    assert.match(logRows(last.body)[19]!, /GET \/developer\/v1\/catalogue\/2 /);
    assert.match(last.body, /href="\/settings\/developer-api\/keys\/[0-9]+\?page=4#request-log-heading">← Newer/);
    assert.equal((await browser.get(key(id, '?page=6'))).statusCode, 404, 'past the last page');
    assert.equal((await browser.get(key(id, '?page=0'))).statusCode, 404);
    const counted = await browser.get(key(id, '?outcome=counted&page=2'));
    assert.match(counted.body, /href="\/settings\/developer-api\/keys\/[0-9]+\?outcome=counted&amp;page=3#request-log-heading">Older/, 'the filter kept across pages');
    assert.match(logRows(counted.body)[0]!, /GET \/developer\/v1\/catalogue\/81 /);
    const stored = await ctx.stats.requestLog(alice, id, '1970-01-01T00:00:00.000Z');
    assert.equal(stored.length, 100);
    ctx.clock.advance(7 * 86_400_000 + 1000);
    await browser.signIn(alice);
    assert.match(textOf((await browser.get(key(id))).body), /No requests in the last 7 days/);
  });

  test("another account's key, or no key: 404 for the page and its CSV", async () => {
    const bobs = await keyIdOf(ctx, 'bob');
    assert.equal((await browser.get(key(bobs))).statusCode, 404);
    assert.equal((await browser.get(key(bobs, '/usage.csv'))).statusCode, 404);
    assert.equal((await browser.get(key(987_654, '/usage.csv'))).statusCode, 404);
    assert.equal((await browser.get(key(bobs, '?outcome=teapot'))).statusCode, 400, 'the query is refused before the key is looked up');
  });

  test('ranges: 30 days by default, 24 hours, 7/90 days; a range no link sends is a 400 page; p95 shown', async () => {
    const id = await keyIdOf(ctx, 'alice-expiring');
    await ctx.get(`${V1}/catalogue/1`, 'alice-expiring');
    await ctx.get(`${V1}/catalogue/2`, 'alice-expiring');
    await ctx.stats.flush();
    const page = await browser.get(key(id));
    const text = textOf(page.body);
    assert.match(text, /Usage in depth .*2 requests last 30 days, per day/);
    assert.match(text, /p50 [0-9.,]+ ms p95 [0-9.,]+ ms p99 [0-9.,]+ ms/);
    assert.match(text, /\/catalogue\/:id 2 /);
    assert.match(page.body, /aria-current="page">30 days</);
    assert.match(textOf((await browser.get(key(id, '?range=24h'))).body), /2 requests last 24 hours, per hour/);
    for (const range of ['7d', '30d', '90d']) {
      const other = await browser.get(key(id, `?range=${range}`));
      assert.equal(other.statusCode, 200);
      assert.match(textOf(other.body), new RegExp(`2 requests last ${range.slice(0, -1)} days, per day`));
    }
    for (const bad of ['1y', '24H', '']) {
      const res = await browser.get(key(id, `?range=${bad}`));
      assert.equal(res.statusCode, bad === '' ? 200 : 400, `range=${bad}`);
    }
    assert.equal((await browser.get(`/settings/developer-api?range=forever`)).statusCode, 400);
    assert.match(textOf((await browser.get('/settings/developer-api?range=7d')).body), /Usage in depth/);
  });

  test('server times of 5 ms and 200 ms on one key: p50 and p99 differ, each within 25% of the time taken', async () => {
    // A key no other test here sends requests with (its times would mix in), revoked since: its page still shows them.
    const id = await keyIdOf(ctx, 'alice-revoked');
    const at = ctx.clock.now();
    // Records fed to the statistics as the pipeline leaves them, with the server times measured.
    for (let i = 0; i < 100; i++) {
      const durationMs = i < 90 ? 4.8 + (i % 5) * 0.1 : 195 + i - 90;
      const call = { method: 'GET', url: `${V1}/catalogue/${i}`, status: 200, error: null, durationMs, address: '192.0.2.9', requestId: `t-${i}`, endpoint: '/catalogue/:id' };
      ctx.stats.record({ accountId: alice, keyId: id, at: at + i, outcome: 'counted', address: '192.0.2.9', used: true, rejection: null, call });
    }
    await ctx.stats.flush();
    for (const range of ['24h', '30d']) {
      const text = textOf((await browser.get(key(id, `?range=${range}`))).body);
      const [, p50, p95, p99] = /p50 ([0-9.]+) ms p95 ([0-9.]+) ms p99 ([0-9.]+) ms/.exec(text) ?? [];
      assert.ok(Math.abs(Number(p50) - 5) <= 1.25, `p50 ${p50} ms for 5 ms (${range})`);
      assert.ok(Math.abs(Number(p95) - 200) <= 50, `p95 ${p95} ms for ~200 ms (${range})`);
      assert.ok(Math.abs(Number(p99) - 200) <= 50, `p99 ${p99} ms for ~200 ms (${range})`);
    }
    const total = csvRows((await browser.get(key(id, '/usage.csv?range=24h'))).body).at(-1)!;
    assert.equal(total[0], 'total');
    assert.ok(Math.abs(Number(total.at(-3)) - 5) <= 1.25 && Math.abs(Number(total.at(-1)) - 200) <= 50, `the CSV's p50 and p99: ${total.slice(-3).join(' ')}`);
  });

  test('the CSV: text/csv, an attachment, the numbers per hour and for the range', async () => {
    const id = await keyIdOf(ctx, 'alice-expiring');
    ctx.clock.set('2026-11-21T09:30:00.000Z');
    await ctx.get(`${V1}/catalogue/1`, 'alice-expiring');
    await ctx.get(`${V1}/catalogue?limit=nope`, 'alice-expiring');
    await ctx.get(`${V1}/me`, 'alice-expiring');
    ctx.clock.set('2026-11-21T10:05:00.000Z');
    await ctx.get(`${V1}/prices/1`, 'alice-expiring');
    await ctx.get(`${V1}/prices/1`, 'alice-expiring', { method: 'OPTIONS' });
    await ctx.get(`${V1}/no/such/path`, 'alice-expiring');
    await ctx.stats.flush();
    await browser.signIn(alice);
    const res = await browser.get(key(id, '/usage.csv?range=24h'));
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
    assert.match(String(res.headers['content-disposition']), /^attachment; filename="key-[0-9]+-usage-24h-2026-11-21\.csv"$/);
    const rows = csvRows(res.body);
    const header = rows[0]!;
    const col = (name: string) => {
      const i = header.indexOf(name);
      assert.ok(i >= 0, `column ${name}`);
      return i;
    };
    assert.equal(header[0], 'hour_utc');
    assert.equal(rows.length, 1 + 24 + 1);
    const at = (label: string) => rows.find((r) => r[0] === label) ?? assert.fail(`row ${label}`);
    const nine = at('2026-11-21T09:00Z');
    assert.equal(nine[col('counted')], '1');
    assert.equal(nine[col('bad_request')], '1');
    assert.equal(nine[col('outcomes_total')], '2');
    assert.equal(nine[col('/catalogue/:id')], '1');
    assert.equal(nine[col('/catalogue')], '1');
    assert.equal(nine[col('/me')], '1');
    assert.match(nine[col('p95_ms')]!, /^[0-9.]+\+?$/);
    const ten = at('2026-11-21T10:00Z');
    assert.equal(ten[col('/prices/:masterItemId')], '2', 'a GET and an OPTIONS');
    assert.equal(ten[col('other_paths')], '1');
    // The range reaches back to 11:00 yesterday: the 2 requests of the test before are in it.
    const total = at('total');
    assert.equal(total[col('counted')], '4');
    assert.equal(total[col('/catalogue/:id')], '3');
    assert.equal(total[col('/me')], '1');
    assert.equal(total[col('other_paths')], '1');
    // Days: counted from the meter; the whole account's CSV as well.
    const days = csvRows((await browser.get(key(id, '/usage.csv?range=7d'))).body);
    assert.equal(days[0]![0], 'day_utc');
    assert.equal(days.length, 1 + 7 + 1);
    assert.equal(days.find((r) => r[0] === '2026-11-21')![col('counted')], '2');
    const account = await browser.get('/settings/developer-api/usage.csv?range=90d');
    assert.equal(account.statusCode, 200);
    assert.equal(account.headers['content-type'], 'text/csv; charset=utf-8');
    assert.equal(csvRows(account.body).length, 1 + 90 + 1);
    assert.equal((await browser.get(key(id, '/usage.csv?range=week'))).statusCode, 400);
  });
});
