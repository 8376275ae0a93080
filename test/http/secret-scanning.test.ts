// POST /secret-scanning/github (src/http/secret-scanning): a report signed by a key of the document
// SECRET_SCANNING_PUBLIC_KEYS names (a P-256 pair made here) revokes each working key it names, on this
// server and another over the same store, and answers GitHub's feedback array; a report not signed by a
// published key, or not the documented array, or over 1 MB, changes nothing; the same report twice answers
// the same with one log line; 1,000 tokens are answered within seconds; a flood is refused by the
// endpoint's own limit while the API goes on. Runs on both stores.
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { Dataset } from '../../src/domain/dataset.js';
import { SCOPES } from '../../src/domain/scopes.js';
import { buildApp, type App } from '../../src/http/app.js';
import { openApiJson } from '../../src/http/api/openapi.js';
import { checksum } from '../../src/keys/api-key.js';
import { pendingNotices } from '../../src/services/notices.service.js';
import { listSecurityEvents } from '../../src/services/security-log.js';
import { openStore, type Store } from '../../src/store/database.js';
import { principalsHeldBy } from '../helpers/held-principals.js';
import { assertError, keyOf, url } from '../helpers/pipeline-helpers.js';
import { createTestContext, type TestContext } from '../helpers/test-app.js';

const PATH = '/secret-scanning/github';
const ACCOUNTS = ['leaky', 'twice', 'wrong', 'bulk1', 'bulk2', 'bulk3', 'bystander'] as const;
const DATASET: Dataset = {
  accounts: ACCOUNTS.map((ref) => ({ ref, email: `${ref}@example.com`, plan: 'enthusiast' })),
  keys: [
    ...ACCOUNTS.map((ref) => ({ ref, account: ref, name: ref, scopes: [...SCOPES] })),
    { ref: 'leaky-other', account: 'leaky', name: 'other', scopes: [...SCOPES] },
    { ref: 'revoked', account: 'bystander', name: 'revoked', scopes: [...SCOPES], revoked: true },
    { ref: 'expired', account: 'bystander', name: 'expired', scopes: [...SCOPES], expiresAt: '2026-01-01T00:00:00.000Z' },
  ],
  catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
};

function keyPair(): { privateKey: KeyObject; pem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, pem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

const github = keyPair();
const rotated = keyPair();
const dir = mkdtempSync(join(tmpdir(), 'shelfapi-scanning-'));
const keysFile = join(dir, 'public-keys.json');
function writeKeys(entries: Array<{ id: string; pem: string }>): void {
  writeFileSync(keysFile, JSON.stringify({ public_keys: entries.map((e, i) => ({ key_identifier: e.id, key: e.pem, is_current: i === 0 })) }));
}

let ctx: TestContext;
/** A second server: its own app and store connection over the same database (and meter). */
let storeB: Store;
let appB: App;

before(async () => {
  writeKeys([{ id: 'current', pem: github.pem }]);
  ctx = await createTestContext({ dataset: DATASET, env: { SECRET_SCANNING_PUBLIC_KEYS: keysFile } });
  storeB = openStore(ctx.config.database);
  appB = await buildApp({ config: ctx.config, store: storeB, meter: ctx.meter, clock: ctx.clock, logger: false });
  await appB.ready();
  await principalsHeldBy(ctx.app, appB);
});
after(async () => {
  await appB.close();
  await storeB.close();
  await ctx.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Finding {
  token: string;
  type?: unknown;
  url?: unknown;
  source?: unknown;
}
const finding = (token: string): Finding => ({ token, type: 'shelfapi_api_key', url: 'https://github.com/someone/scripts/blob/main/prices.py', source: 'content' });

function post(body: string | Buffer, headers: Record<string, string> = {}) {
  return ctx.app.inject({ method: 'POST', url: PATH, payload: body, headers: { 'content-type': 'application/json', ...headers } });
}
function signed(body: string | Buffer, by: KeyObject = github.privateKey, identifier = 'current') {
  const signature = sign('sha256', Buffer.from(body), by).toString('base64');
  return post(body, { 'github-public-key-identifier': identifier, 'github-public-key-signature': signature });
}
const report = (findings: Finding[]) => JSON.stringify(findings);

const onA = (keyRef: string) => ctx.get(url('/me'), keyRef);
const onB = (keyRef: string) => appB.inject({ method: 'GET', url: url('/me'), headers: { 'x-api-key': keyOf(ctx, keyRef) } });

async function leakLines(accountRef: string) {
  const { events } = await listSecurityEvents(ctx.store, ctx.loaded.accounts[accountRef]!, { now: ctx.clock.now(), pageSize: 100 });
  return events.filter((e) => e.detail?.startsWith('revoked: found public') === true);
}

describe('POST /secret-scanning/github', () => {
  test('a signed report of a live key answers true_positive, and the key is 401 on both servers from its next request', async () => {
    for (const server of [onA, onB]) for (let i = 0; i < 2; i++) assert.equal((await server('leaky')).statusCode, 200);
    const res = await signed(report([finding(keyOf(ctx, 'leaky'))]));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['cache-control'], 'private, no-store');
    assert.deepEqual(JSON.parse(res.body), [{ token_raw: keyOf(ctx, 'leaky'), token_type: 'shelfapi_api_key', label: 'true_positive' }]);
    assertError(await onB('leaky'), 401, 'unauthorized');
    assertError(await onA('leaky'), 401, 'unauthorized');
    // The account's other key goes on working.
    assert.equal((await onB('leaky-other')).statusCode, 200);
    const lines = await leakLines('leaky');
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.detail, 'revoked: found public at https://github.com/someone/scripts/blob/main/prices.py; reported by GitHub secret scanning (content)');
    const notices = (await pendingNotices(ctx.store, ctx.config.keyPrefix)).filter((n) => n.kind === 'key_leaked' && n.account.email === 'leaky@example.com');
    assert.equal(notices.length, 1);
  });

  test('a wrong or missing signature answers 401 and the key still works', async () => {
    const body = report([finding(keyOf(ctx, 'wrong'))]);
    const other = keyPair();
    const refusals = [
      await signed(body, other.privateKey),
      await post(body, { 'github-public-key-identifier': 'current', 'github-public-key-signature': sign('sha256', Buffer.from(`${body} `), github.privateKey).toString('base64') }),
      await post(body, { 'github-public-key-identifier': 'current', 'github-public-key-signature': Buffer.alloc(70, 7).toString('base64') }),
      await post(body, { 'github-public-key-identifier': 'current' }),
      await post(body, { 'github-public-key-signature': sign('sha256', Buffer.from(body), github.privateKey).toString('base64') }),
      await post(body, { 'github-public-key-identifier': 'current', 'github-public-key-signature': 'not base64!' }),
      await post(body),
    ];
    for (const res of refusals) {
      assertError(res, 401, 'unauthorized');
      assert.ok(!res.body.includes(keyOf(ctx, 'wrong')));
    }
    assert.equal((await onA('wrong')).statusCode, 200);
    assert.equal((await leakLines('wrong')).length, 0);
  });

  test('an unknown key identifier answers 401 after the document is read again; a key added to it is used at once', async () => {
    const body = report([finding(keyOf(ctx, 'bystander'))]);
    assertError(await signed(body, rotated.privateKey, 'rotated'), 401, 'unauthorized');
    assert.equal((await onA('bystander')).statusCode, 200);
    writeKeys([{ id: 'current', pem: github.pem }, { id: 'rotated', pem: rotated.pem }]);
    // A report naming another key: the bystander's stays untouched.
    const res = await signed(report([finding(keyOf(ctx, 'expired'))]), rotated.privateKey, 'rotated');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(JSON.parse(res.body).map((a: { label: string }) => a.label), ['false_positive']);
    assert.equal((await onA('bystander')).statusCode, 200);
  });

  test('a signed body that is not the documented array answers 400 and revokes nothing', async () => {
    const key = keyOf(ctx, 'wrong');
    const bodies = [
      '',
      'not json',
      JSON.stringify({ token: key, type: 't' }),
      JSON.stringify([finding(key), 'a string']),
      JSON.stringify([finding(key), { type: 't', url: 'u', source: 's' }]),
      JSON.stringify([finding(key), { token: key, type: 3, url: 'u', source: 's' }]),
      JSON.stringify([finding(key), { token: key, type: 't', url: 3, source: 's' }]),
      Buffer.concat([Buffer.from(JSON.stringify([finding(key)]).slice(0, -1)), Buffer.from([0xff]), Buffer.from(']')]),
    ];
    for (const body of bodies) {
      const res = await signed(body);
      assertError(res, 400, 'bad_request');
      assert.ok(!res.body.includes(key), 'the refusal does not echo a token');
    }
    assert.equal((await onA('wrong')).statusCode, 200);
    assert.equal((await leakLines('wrong')).length, 0);
  });

  test('a report over 1 MB answers 413, signed or not, and revokes nothing', async () => {
    const findings = [finding(keyOf(ctx, 'wrong'))];
    while (JSON.stringify(findings).length <= 1024 * 1024) findings.push(finding('x'.repeat(1000)));
    const body = report(findings);
    for (const res of [await signed(body), await post(body)]) assertError(res, 413, 'payload_too_large');
    // Sent without a length (chunked): cut at the limit while read.
    const signature = sign('sha256', Buffer.from(body), github.privateKey).toString('base64');
    const chunked = await ctx.app.inject({
      method: 'POST',
      url: PATH,
      payload: Readable.from([Buffer.from(body)]),
      headers: { 'content-type': 'application/json', 'github-public-key-identifier': 'current', 'github-public-key-signature': signature },
    });
    assertError(chunked, 413, 'payload_too_large');
    assert.equal((await onA('wrong')).statusCode, 200);
  });

  test('the same report twice answers the same, with one log line and one notice', async () => {
    const body = report([finding(keyOf(ctx, 'twice')), finding(keyOf(ctx, 'revoked')), finding('shelf_live_nothing')]);
    const first = await signed(body);
    const second = await signed(body);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(second.body, first.body);
    assert.deepEqual(JSON.parse(first.body).map((a: { label: string }) => a.label), ['true_positive', 'false_positive', 'false_positive']);
    assert.equal((await leakLines('twice')).length, 1);
    const notices = (await pendingNotices(ctx.store, ctx.config.keyPrefix)).filter((n) => n.kind === 'key_leaked' && n.account.email === 'twice@example.com');
    assert.equal(notices.length, 1);
  });

  test('1,000 tokens are answered within a few seconds, each with its label', async () => {
    const live = ['bulk1', 'bulk2', 'bulk3'].map((ref) => keyOf(ctx, ref));
    const findings: Finding[] = [];
    for (let i = 0; findings.length < 997; i++) {
      // Well-formed keys of this service that do not exist (a lookup each), and some with a bad checksum.
      const body = `${ctx.config.keyPrefix}_live_${String(i).padStart(43, 'Q')}`;
      findings.push(finding(i % 10 === 0 ? `${body}000000` : body + checksum(body)));
    }
    findings.splice(100, 0, finding(live[0]!));
    findings.splice(500, 0, finding(live[1]!));
    findings.push(finding(live[2]!));
    const started = Date.now();
    const res = await signed(report(findings));
    const took = Date.now() - started;
    assert.equal(res.statusCode, 200, res.body);
    assert.ok(took < 5000, `answered in ${took} ms`);
    const answers = JSON.parse(res.body) as Array<{ token_raw: string; label: string }>;
    assert.equal(answers.length, 1000);
    assert.deepEqual(answers.map((a) => a.token_raw), findings.map((f) => f.token));
    const positives = answers.flatMap((a, i) => (a.label === 'true_positive' ? [i] : []));
    assert.deepEqual(positives, [100, 500, 999]);
    for (const ref of ['bulk1', 'bulk2', 'bulk3']) assertError(await onB(ref), 401, 'unauthorized');
  });

  test('the OpenAPI document does not list the endpoint', () => {
    assert.ok(!openApiJson(ctx.app).includes('secret-scanning'));
  });

  test('a flood of unsigned posts is refused by the endpoint\'s own limit; the API goes on', async () => {
    const body = report([finding(keyOf(ctx, 'wrong'))]);
    const statuses = await Promise.all(Array.from({ length: 80 }, () => post(body).then((r) => r.statusCode)));
    assert.ok(statuses.filter((s) => s === 429).length >= 20, `429s: ${statuses.join(',')}`);
    assert.ok(statuses.every((s) => s === 429 || s === 401));
    const limited = await signed(report([finding(keyOf(ctx, 'wrong'))]));
    assertError(limited, 429, 'rate_limited');
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    assert.equal((await onA('wrong')).statusCode, 200);
  });
});

describe('POST /secret-scanning/github without GitHub\'s keys', () => {
  test('answers 503 (GitHub retries), with nothing revoked, when the keys cannot be read', async () => {
    const other = await createTestContext({ dataset: DATASET, env: { SECRET_SCANNING_PUBLIC_KEYS: join(dir, 'missing.json') } });
    try {
      const body = report([finding(keyOf(other, 'bystander'))]);
      const res = await other.app.inject({
        method: 'POST',
        url: PATH,
        payload: body,
        headers: { 'content-type': 'application/json', 'github-public-key-identifier': 'current', 'github-public-key-signature': sign('sha256', Buffer.from(body), github.privateKey).toString('base64') },
      });
      assertError(res, 503, 'service_unavailable');
      assert.ok(Number(res.headers['retry-after']) >= 1);
      assert.equal((await other.get(url('/me'), 'bystander')).statusCode, 200);
    } finally {
      await other.close();
    }
  });
});
