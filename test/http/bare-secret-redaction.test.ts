// Issue 40, item 1: a key's secret without its `<prefix>_live_` (the prefix is fixed and the checksum can be
// recomputed, so the secret alone is the key) is never shown back: not in an answer, not in the server's log,
// not on the owner's request log or last rejections, whether it is the path, a query value, a parameter's
// name, follows an underscore, is percent-encoded or is split by a control character. On the suite's store
// (SQLite, or PostgreSQL with the statistics in Redis written from their own thread).
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createTestContext, V1, type TestContext } from '../helpers/test-app.js';
import { decodeAll } from '../helpers/log-capture.js';
import { keyIdOf } from '../helpers/pipeline-helpers.js';
import { SettingsClient } from '../settings/settings-helpers.js';

/**
 * The text as a reader could rebuild it: percent-escapes decoded (again and again), JSON's escapes of control
 * characters and the control characters themselves taken out, so that a secret split by one reads whole.
 */
function rejoined(text: string): string {
  return decodeAll(text)
    .replace(/\\(?:[nrtbf]|u00[0-9A-Fa-f]{2})/g, '')
    .replace(/\p{Cc}/gu, '');
}

/** Fails when any 17 characters of the secret in a row can be read in the text: more than a cut echo shows. */
function assertNoSecret(text: string, secret: string, where: string): void {
  const readable = rejoined(text);
  for (let i = 0; i + 17 <= secret.length; i++) {
    assert.ok(!readable.includes(secret.slice(i, i + 17)), `${where}: the secret (from its character ${i}) can be read in ${JSON.stringify(text.slice(0, 600))}`);
  }
}

describe("a key's secret without its prefix", () => {
  let ctx: TestContext;
  let secret: string;
  before(async () => {
    ctx = await createTestContext({ env: { PLAN_LIMITS: JSON.stringify({ enthusiast: { monthly: 100_000, perMinute: 1000 } }) } });
    const key = ctx.loaded.keys['alice-second']!;
    secret = key.slice(key.indexOf('_live_') + '_live_'.length);
    assert.equal(secret.length, 49, '43 characters of secret and 6 of checksum');
  });
  after(async () => ctx.close());

  it('appears in no answer, no log line, and not on the request log or the last rejections', async () => {
    ctx.clock.set('2026-11-20T12:00:00.000Z');
    const [head, tail] = [secret.slice(0, 20), secret.slice(20)];
    const encoded = [...secret].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('');
    const urls = [
      `${V1}/catalogue/${secret}`,
      `${V1}/catalogue/_${secret}`,
      `${V1}/catalogue/${encoded}`,
      `${V1}/catalogue/${head}%0A${tail}`,
      `${V1}/catalogue/${head}%250A${tail}`,
      `${V1}/${secret}`,
      `${V1}/catalogue?search=${secret}`,
      `${V1}/catalogue?search=${head}%0A${tail}`,
      `${V1}/catalogue?search=${head}%00${tail}`,
      `${V1}/catalogue?foo=_${secret}`,
      `${V1}/catalogue?foo=${head}%0A${tail}`,
      `${V1}/catalogue?limit=${secret}`,
      `${V1}/catalogue?limit=_${secret}`,
      `${V1}/catalogue?${secret}=1`,
      `${V1}/catalogue?x=1&${head}%0D${tail}=1`,
    ];
    const logged = ctx.logs.text().length;
    const answers = [];
    for (const url of urls) {
      ctx.clock.advance(1000);
      answers.push(await ctx.get(url, 'alice'));
    }
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      [400, 400, 400, 400, 400, 404, 200, 200, 400, 400, 400, 400, 400, 400, 400],
    );
    answers.forEach((answer, i) => assertNoSecret(answer.body, secret, `the answer to ${urls[i]!}`));
    assertNoSecret(ctx.logs.text().slice(logged), secret, 'the server log');

    await ctx.stats.flush();
    const alice = ctx.loaded.accounts.alice!;
    const keyId = await keyIdOf(ctx, 'alice');
    const log = await ctx.stats.requestLog(alice, keyId, '1970-01-01T00:00:00.000Z');
    assert.ok(log.length >= urls.length);
    assertNoSecret(JSON.stringify(log), secret, 'the request log');
    assert.ok(log.some((line) => line.path === `${V1}/catalogue/[redacted]`), JSON.stringify(log.map((line) => line.path)));
    assert.ok(log.some((line) => line.path === `${V1}/catalogue?search=[redacted]`));
    assert.ok(log.some((line) => line.path === `${V1}/catalogue?foo=_[redacted]`));
    const rejections = await ctx.stats.recentRejections(alice, keyId);
    assert.ok(rejections.length > 0);
    assertNoSecret(JSON.stringify(rejections), secret, 'the last rejections');

    const browser = new SettingsClient(ctx);
    await browser.signIn(alice);
    const page = await browser.get(`/settings/developer-api/keys/${keyId}`);
    assert.equal(page.statusCode, 200);
    assertNoSecret(page.body, secret, "the key's page");
    assertNoSecret((await browser.get('/settings/developer-api')).body, secret, 'the keys page');
  });

  it('is not quoted back as a method Node refuses (405), nor logged', async () => {
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    const address = ctx.app.server.address();
    assert.ok(address !== null && typeof address === 'object');
    const logged = ctx.logs.text().length;
    const socket = connect(address.port, '127.0.0.1');
    const answer = await new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
      socket.write(`${secret} ${V1}/me HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    });
    assert.match(answer, /^HTTP\/1\.1 405 /);
    assertNoSecret(answer, secret, 'the 405');
    assertNoSecret(ctx.logs.text().slice(logged), secret, 'the server log');
  });

  it('is not quoted whole in a message: a bad value is echoed cut short', async () => {
    const answer = await ctx.get(`${V1}/catalogue?limit=${'9'.repeat(40)}x`, 'alice');
    assert.equal(answer.statusCode, 400);
    const { message } = JSON.parse(answer.body) as { message: string };
    assert.ok(message.includes(`"${'9'.repeat(16)}…"`), message);
    assert.ok(!message.includes('9'.repeat(17)), message);
    const name = await ctx.get(`${V1}/catalogue?${'n'.repeat(40)}=1`, 'alice');
    assert.ok(!name.body.includes('n'.repeat(17)), name.body);
  });
});

describe("a key's secret without its prefix, on a server with a prefix of its own", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext({ env: { KEY_PREFIX: 'acme' } });
  });
  after(async () => ctx.close());

  it('is recognised by that prefix, in the request log its statistics thread writes too', async () => {
    const key = ctx.loaded.keys['alice-second']!;
    assert.match(key, /^acme_live_/);
    const secret = key.slice('acme_live_'.length);
    const logged = ctx.logs.text().length;
    const answers = [await ctx.get(`${V1}/catalogue/${secret}`, 'alice'), await ctx.get(`${V1}/catalogue?search=${secret}`, 'alice')];
    assert.deepEqual(answers.map((a) => a.statusCode), [400, 200]);
    for (const answer of answers) assertNoSecret(answer.body, secret, 'an answer');
    assertNoSecret(ctx.logs.text().slice(logged), secret, 'the server log');
    await ctx.stats.flush();
    const alice = ctx.loaded.accounts.alice!;
    const keyId = await keyIdOf(ctx, 'alice');
    const log = await ctx.stats.requestLog(alice, keyId, '1970-01-01T00:00:00.000Z');
    assert.deepEqual(log.map((line) => line.path).sort(), [`${V1}/catalogue/[redacted]`, `${V1}/catalogue?search=[redacted]`]);
    assertNoSecret(JSON.stringify(await ctx.stats.recentRejections(alice, keyId)), secret, 'the last rejections');
  });
});
