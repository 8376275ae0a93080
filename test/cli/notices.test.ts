// `shelfapi notices`: what the platform should mail owners, each thing once, until acknowledged; run as an
// operator's cron job runs it (a child process per command, on an SQLite file, the real clock), with the
// requests that fill a quota sent through the real app over the same file.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/database.js';
import { V1, apiOver, assertRefused, openSqliteStore, parseJsonOutput, runCli, tempDir, type ApiClient } from '../helpers/cli-helpers.js';

interface Notice {
  id: number;
  kind: string;
  account: { id: number; email: string };
  key: { id: number; name: string; hint: string } | null;
  at: string;
  detail: string;
  createdAt: string;
}

const tmp = tempDir();
const db = tmp.db('notices');
// A small monthly quota, so that 80% and 100% are a few requests away.
const env = { DATABASE_URL: db, PLAN_LIMITS: JSON.stringify({ addon: { monthly: 10, perMinute: 100 } }) };
let store: Store;
let api: ApiClient;

const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

async function account(email: string, plan = 'enthusiast'): Promise<number> {
  return (parseJsonOutput(await runCli(['accounts', 'create', '--email', email, '--plan', plan, '--json'], env)) as { id: number }).id;
}
async function key(accountId: number, name: string, expiresAt?: string): Promise<{ id: number; key: string }> {
  const args = ['keys', 'create', '--account', String(accountId), '--scopes', 'catalogue:read', '--name', name, '--json'];
  return parseJsonOutput(await runCli(expiresAt === undefined ? args : [...args, '--expires-at', expiresAt], env)) as { id: number; key: string };
}
async function notices(): Promise<Notice[]> {
  return (parseJsonOutput(await runCli(['notices', '--json'], env)) as { notices: Notice[] }).notices;
}

before(async () => {
  store = await openSqliteStore(db);
  api = await apiOver(store, { PLAN_LIMITS: env.PLAN_LIMITS });
});
after(async () => {
  await api.close();
  await store.close();
  tmp.cleanup();
});

describe('shelfapi notices', () => {
  it('a key expiring in 3 days is listed once, with its account and key, until --ack; never found again after', async () => {
    const owner = await account('expiring@example.com');
    const soon = await key(owner, 'nightly sync', iso(Date.now() + 3 * DAY));
    await key(owner, 'far away', iso(Date.now() + 60 * DAY));
    const first = await notices();
    const mine = first.filter((n) => n.account.id === owner);
    assert.equal(mine.length, 1, JSON.stringify(first));
    const notice = mine[0]!;
    assert.equal(notice.kind, 'key_expiring_7d');
    assert.deepEqual(notice.account, { id: owner, email: 'expiring@example.com' });
    assert.deepEqual(notice.key, { id: soon.id, name: 'nightly sync', hint: `shelf_live_…${soon.key.slice(-4)}` });
    assert.match(notice.detail, /^expires \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);

    // Run again (as cron does): the same notice, not a second one.
    assert.deepEqual((await notices()).filter((n) => n.account.id === owner), [notice]);

    const ack = await runCli(['notices', '--ack', String(notice.id)], env);
    assert.equal(ack.code, 0, ack.stderr);
    assert.match(ack.stdout, /Acknowledged 1 notice\./);
    assert.equal((await notices()).filter((n) => n.account.id === owner).length, 0, 'not listed after --ack, nor found again');
    const again = await runCli(['notices', '--ack', String(notice.id)], env);
    assert.match(again.stdout, new RegExp(`Acknowledged 0 notices; ${notice.id} had been already\\.`));
  });

  it('within a day, and expired: only the most pressing notice; revoked keys and old expiries are left alone', async () => {
    const owner = await account('urgent@example.com');
    const today = await key(owner, 'today', iso(Date.now() + 5 * 3_600_000));
    const revoked = await key(owner, 'revoked', iso(Date.now() + 2 * DAY));
    assert.equal((await runCli(['keys', 'revoke', String(revoked.id)], env)).code, 0);
    const expired = await key(owner, 'expired', iso(Date.now() + 3_600_000));
    await store.db.updateTable('api_keys').set({ expires_at: iso(Date.now() - DAY) }).where('id', '=', expired.id).execute();
    const ancient = await key(owner, 'ancient', iso(Date.now() + 3_600_000));
    await store.db.updateTable('api_keys').set({ expires_at: iso(Date.now() - 30 * DAY) }).where('id', '=', ancient.id).execute();
    const mine = (await notices()).filter((n) => n.account.id === owner).map((n) => [n.kind, n.key?.id]);
    assert.deepEqual(mine, [
      ['key_expiring_1d', today.id],
      ['key_expired', expired.id],
    ]);
  });

  it("80% and then 100% of the month's quota, once each per month, counted by the meter", async () => {
    const owner = await account('busy@example.com', 'addon');
    const k = await key(owner, 'busy');
    for (let i = 0; i < 8; i++) assert.equal((await api.get(`${V1}/catalogue`, k.key)).statusCode, 200);
    let mine = (await notices()).filter((n) => n.account.id === owner);
    assert.deepEqual(mine.map((n) => [n.kind, n.key, n.detail.replace(/\d{4}-\d{2}$/, 'MONTH')]), [['quota_80', null, '8 of 10 requests (80%) in MONTH']]);
    for (let i = 0; i < 2; i++) assert.equal((await api.get(`${V1}/catalogue`, k.key)).statusCode, 200);
    mine = (await notices()).filter((n) => n.account.id === owner);
    assert.deepEqual(mine.map((n) => n.kind), ['quota_80', 'quota_100']);
    assert.equal((await notices()).filter((n) => n.account.id === owner).length, 2, 'a third run finds nothing new');
  });

  it('a human table by default, with the --ack line to run next', async () => {
    const out = await runCli(['notices'], env);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /^id\s+what\s+account\s+email\s+key\s+detail/);
    assert.match(out.stdout, /month used up/);
    assert.match(out.stdout, /notices? to send; then: shelfapi notices --ack \d+/);
  });

  it('an unknown or malformed id acknowledges nothing, and says why', async () => {
    const pending = await notices();
    assert.ok(pending.length >= 2);
    assertRefused(await runCli(['notices', '--ack', String(pending[0]!.id), '999999'], env), /no notice 999999: nothing was acknowledged/);
    assertRefused(await runCli(['notices', '--ack', 'abc'], env), /--ack must be a whole number/);
    assertRefused(await runCli(['notices', '--ack', '0'], env), /--ack/);
    assert.deepEqual((await notices()).map((n) => n.id), pending.map((n) => n.id), 'still every one pending');
  });
});
