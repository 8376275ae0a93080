// `shelfapi accounts sign-in-link`: the same token the platform mints, signed with the store's generated
// secret when none is configured, so a link from the command line works on any server of that store.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../helpers/server-process.js';
import { createTestContext, TEST_REDIS_URL, testRedisPrefix, type TestContext } from '../helpers/test-app.js';
import { SettingsClient } from './settings-helpers.js';

describe('shelfapi accounts sign-in-link', () => {
  let ctx: TestContext;
  let env: Record<string, string>;

  before(async () => {
    ctx = await createTestContext();
    env = { DATABASE_URL: ctx.databaseUrl, ...(ctx.kind === 'postgres' ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: testRedisPrefix('cli') } : {}) };
  });
  after(async () => ctx.close());

  test('prints a link on PUBLIC_URL that signs the owner in once, on a server of the same store', async () => {
    const alice = ctx.loaded.accounts.alice!;
    const res = await runCli(['accounts', 'sign-in-link', String(alice), '--json', '--minutes', '5'], { ...env, PUBLIC_URL: 'https://api.example.com' });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout) as { accountId: number; url: string; expiresAt: string };
    assert.equal(out.accountId, alice);
    const url = new URL(out.url);
    assert.equal(url.origin, 'https://api.example.com');
    assert.equal(url.pathname, '/settings/sign-in');
    const token = url.searchParams.get('token')!;
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    assert.equal(payload.sub, String(alice));
    assert.equal(payload.aud, 'shelfapi-settings');
    assert.equal((payload.exp as number) - (payload.iat as number), 300);
    assert.equal(Date.parse(out.expiresAt), (payload.exp as number) * 1000);

    // The app was built before the command ran; both read the one secret the store keeps.
    ctx.clock.set((payload.iat as number) * 1000 + 1000);
    const browser = new SettingsClient(ctx);
    assert.equal((await browser.get(`/settings/sign-in?token=${token}`)).statusCode, 303);
    assert.equal((await new SettingsClient(ctx).get(`/settings/sign-in?token=${token}`)).statusCode, 401, 'once');

    const plain = await runCli(['accounts', 'sign-in-link', String(alice)], { ...env, PORT: '9999' });
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /^http:\/\/127\.0\.0\.1:9999\/settings\/sign-in\?token=[\w-]+\.[\w-]+\.[\w-]+\n$/);
  });

  test('refuses an unknown account and a lifetime over 15 minutes', async () => {
    const unknown = await runCli(['accounts', 'sign-in-link', '999999'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /account 999999 does not exist/);
    const long = await runCli(['accounts', 'sign-in-link', '1', '--minutes', '16'], env);
    assert.equal(long.code, 1);
    assert.match(long.stderr, /--minutes must be at most 15/);
  });
});
