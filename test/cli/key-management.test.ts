// Operator parity with the settings screen (docs/contract.md, "Keys"): keys roll, rename, set-scopes, set-allowed-ips and revoke, and
// accounts log, run as an operator runs them (a child process per command, on an SQLite file), checked
// against the real app over the same file and the owner's security log.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/database.js';
import {
  V1,
  apiOver,
  assertKeyForm,
  assertRefused,
  openSqliteStore,
  parseJsonOutput,
  runCli,
  tableCounts,
  tempDir,
  type ApiClient,
} from '../helpers/cli-helpers.js';

const tmp = tempDir();
const db = tmp.db('keys');
const env = { DATABASE_URL: db };
let store: Store;
let api: ApiClient;
let account: number;

before(async () => {
  store = await openSqliteStore(db);
  api = await apiOver(store);
  const created = parseJsonOutput(await runCli(['accounts', 'create', '--email', 'ops@example.com', '--plan', 'enthusiast', '--json'], env));
  account = (created as { id: number }).id;
});
after(async () => {
  await api.close();
  await store.close();
  tmp.cleanup();
});

async function createKey(name: string, scopes = 'catalogue:read,collection:read'): Promise<{ id: number; key: string }> {
  return parseJsonOutput(await runCli(['keys', 'create', '--account', String(account), '--scopes', scopes, '--name', name, '--json'], env)) as {
    id: number;
    key: string;
  };
}

interface ListedKey {
  id: number;
  name: string;
  scopes: string[];
  expiresAt: string | null;
  allowedAddresses: string[];
  status: { status: string; at: string | null };
}

async function listed(): Promise<ListedKey[]> {
  return parseJsonOutput(await runCli(['keys', 'list', '--account', String(account), '--json'], env)) as ListedKey[];
}

describe('keys roll', () => {
  it('--stop-old 1h: a new key (printed once) with the same name and scopes; the old one works and lists as retiring', async () => {
    const old = await createKey('nightly');
    const out = parseJsonOutput(await runCli(['keys', 'roll', String(old.id), '--stop-old', '1h', '--json'], env)) as {
      id: number;
      key: string;
      old: { id: number; stopsAt: string };
    };
    assert.deepEqual(Object.keys(out).sort(), ['expiresAt', 'id', 'key', 'old']);
    assertKeyForm(out.key, 'shelf');
    assert.equal(out.old.id, old.id);
    const stopsIn = Date.parse(out.old.stopsAt) - Date.now();
    assert.ok(stopsIn > 50 * 60_000 && stopsIn <= 3_600_000, `stops in about an hour: ${out.old.stopsAt}`);
    assert.equal((await api.get(`${V1}/catalogue`, old.key)).statusCode, 200, 'the old key works until its stop time');
    assert.equal((await api.get(`${V1}/catalogue`, out.key)).statusCode, 200);
    const keys = await listed();
    const oldRow = keys.find((k) => k.id === old.id);
    const newRow = keys.find((k) => k.id === out.id);
    assert.deepEqual(oldRow?.status, { status: 'retiring', at: out.old.stopsAt });
    assert.equal(newRow?.name, 'nightly');
    assert.deepEqual(newRow?.scopes, ['catalogue:read', 'collection:read']);
    const text = await runCli(['keys', 'list', '--account', String(account)], env);
    assert.match(text.stdout, new RegExp(`retiring, stops ${out.old.stopsAt.replace('T', ' ').slice(0, 16)}`));
  });

  it('default --stop-old now: the old key answers 401 on its next request (text output shows the new key once)', async () => {
    const old = await createKey('rolled now');
    const result = await runCli(['keys', 'roll', String(old.id)], env);
    assert.equal(result.code, 0, result.stderr);
    const newKey = /(shelf_live_\w+)/.exec(result.stdout)?.[1];
    assert.ok(newKey, result.stdout);
    assert.match(result.stdout, /stopped working now/);
    assert.equal((await api.get(`${V1}/me`, old.key)).statusCode, 401);
    assert.equal((await api.get(`${V1}/me`, newKey)).statusCode, 200);
  });

  it('--expires-at sets the new key\'s expiry (a plain date is the end of that day, UTC; never warns); a bad one is refused with nothing made', async () => {
    const old = await createKey('roll with a date');
    const day = new Date(Date.now() + 200 * 86_400_000).toISOString().slice(0, 10);
    const dated = parseJsonOutput(await runCli(['keys', 'roll', String(old.id), '--stop-old', '1h', '--expires-at', day, '--json'], env)) as { id: number; expiresAt: string | null };
    assert.equal(dated.expiresAt, `${day}T23:59:59.999Z`);
    assert.equal((await listed()).find((k) => k.id === dated.id)?.expiresAt, `${day}T23:59:59.999Z`);
    const never = await runCli(['keys', 'roll', String(dated.id), '--expires-at', 'never'], env);
    assert.equal(never.code, 0, never.stderr);
    assert.match(never.stdout, /never expires/);
    assert.match(never.stderr, /^shelfapi: warning: the new key never expires/);
    const before = await tableCounts(store);
    assertRefused(await runCli(['keys', 'roll', String(old.id), '--expires-at', '2099-01-31'], env), /at most a year away|a year/);
    assertRefused(await runCli(['keys', 'roll', String(old.id), '--expires-at', 'soon'], env), /Expiry must be one of/);
    assert.deepEqual(await tableCounts(store), before, 'nothing written');
  });

  it('refuses an unknown stop choice, a missing key, a revoked key: one line, nothing written', async () => {
    const key = await createKey('to refuse');
    await runCli(['keys', 'revoke', String(key.id)], env);
    const before = await tableCounts(store);
    assertRefused(await runCli(['keys', 'roll', String(key.id), '--stop-old', '2d'], env), /now, 1h, 24h, 7d/);
    assertRefused(await runCli(['keys', 'roll', '999'], env), /key 999 does not exist/);
    assertRefused(await runCli(['keys', 'roll', String(key.id)], env), /revoked/);
    assert.deepEqual(await tableCounts(store), before);
  });
});

describe('keys rename and set-scopes', () => {
  it('rename: trimmed, unique among live keys; effective at once', async () => {
    const key = await createKey('old name');
    const out = parseJsonOutput(await runCli(['keys', 'rename', String(key.id), '  new name  ', '--json'], env)) as { name: string };
    assert.equal(out.name, 'new name');
    assert.equal((await listed()).find((k) => k.id === key.id)?.name, 'new name');
    await createKey('taken');
    assertRefused(await runCli(['keys', 'rename', String(key.id), 'taken'], env), /already named "taken"/);
    assertRefused(await runCli(['keys', 'rename', String(key.id), 'x'.repeat(65)], env), /at most 64 characters/);
    const text = await runCli(['keys', 'rename', String(key.id), 'third name'], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /now named "third name"/);
  });

  it('set-scopes: effective on the next request; no scope or an unknown one refused', async () => {
    const key = await createKey('rescoped');
    assert.equal((await api.get(`${V1}/collection`, key.key)).statusCode, 200);
    const out = parseJsonOutput(await runCli(['keys', 'set-scopes', String(key.id), 'catalogue:read', '--json'], env)) as { scopes: string[] };
    assert.deepEqual(out.scopes, ['catalogue:read']);
    assert.equal((await api.get(`${V1}/collection`, key.key)).statusCode, 403);
    assertRefused(await runCli(['keys', 'set-scopes', String(key.id), ''], env), /at least one scope/);
    assertRefused(await runCli(['keys', 'set-scopes', String(key.id), 'catalogue:write'], env), /catalogue:write/);
  });

  it('set-allowed-ips: effective on the next request of a running server; "any" lifts it; bad input refused, nothing written', async () => {
    const key = await createKey('limited');
    const out = parseJsonOutput(await runCli(['keys', 'set-allowed-ips', String(key.id), '127.0.0.2,10.1.2.3/8', '--json'], env)) as { allowedAddresses: string[] };
    assert.deepEqual(out.allowedAddresses, ['127.0.0.2', '10.0.0.0/8']);
    const refused = await api.get(`${V1}/me`, key.key);
    assert.equal(refused.statusCode, 401);
    assert.equal(JSON.parse(refused.body).message, 'This key may not be used from 127.0.0.1.');
    const text = await runCli(['keys', 'set-allowed-ips', String(key.id), '127.0.0.0/8'], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Key \d+ \(…\w{4}\) may be used only from 127\.0\.0\.0\/8\.\n$/);
    assert.equal((await api.get(`${V1}/me`, key.key)).statusCode, 200);
    const before = await tableCounts(store);
    assertRefused(await runCli(['keys', 'set-allowed-ips', String(key.id), '127.0.0.1,10.0.0.300'], env), /"10\.0\.0\.300" is not an IP address or a CIDR range/);
    const many = Array.from({ length: 51 }, (_, i) => `10.0.${i}.1`).join(',');
    assertRefused(await runCli(['keys', 'set-allowed-ips', String(key.id), many], env), /at most 50 addresses or ranges \(got 51\)/);
    assertRefused(await runCli(['keys', 'set-allowed-ips', String(key.id), ''], env), /or "any"/);
    assertRefused(await runCli(['keys', 'set-allowed-ips', '999', 'any'], env), /key 999 does not exist/);
    assert.deepEqual(await tableCounts(store), before);
    assert.deepEqual((await listed()).find((k) => k.id === key.id)?.allowedAddresses, ['127.0.0.0/8'], 'a refused list changed nothing');
    const any = await runCli(['keys', 'set-allowed-ips', String(key.id), 'ANY'], env);
    assert.equal(any.code, 0, any.stderr);
    assert.match(any.stdout, /may be used from any address\./);
    assert.deepEqual((await listed()).find((k) => k.id === key.id)?.allowedAddresses, []);
  });

  it('revoke twice: the second is refused with a message', async () => {
    const key = await createKey('revoke twice');
    assert.equal((await runCli(['keys', 'revoke', String(key.id)], env)).code, 0);
    assertRefused(await runCli(['keys', 'revoke', String(key.id)], env), /already revoked/);
  });
});

describe('accounts log', () => {
  interface Log {
    events: Array<{ kind: string; actor: string; address: string | null; key: { id: number; name: string; hint: string } | null; detail: string | null; at: string }>;
    total: number;
    page: number;
    pageSize: number;
  }

  it('every CLI change to keys and plans is in the log, done by an operator, newest first', async () => {
    const key = await createKey('logged');
    await runCli(['keys', 'rename', String(key.id), 'logged 2'], env);
    await runCli(['keys', 'set-scopes', String(key.id), 'export'], env);
    await runCli(['keys', 'roll', String(key.id), '--stop-old', '24h'], env);
    await runCli(['accounts', 'set-plan', String(account), '--plan', 'addon'], env);
    const log = parseJsonOutput(await runCli(['accounts', 'log', String(account), '--json'], env)) as Log;
    assert.deepEqual(
      log.events.slice(0, 5).map((e) => [e.kind, e.actor, e.address]),
      [
        ['plan_changed', 'operator', null],
        ['key_rolled', 'operator', null],
        ['key_scopes_changed', 'operator', null],
        ['key_renamed', 'operator', null],
        ['key_created', 'operator', null],
      ],
    );
    assert.ok(log.events.every((e) => e.actor === 'operator'));
    assert.deepEqual(log.events[1]!.key, { id: key.id, name: 'logged 2', hint: `shelf_live_…${key.key.slice(-4)}` });
    assert.equal(log.page, 1);
    assert.ok(log.total > 5);
    const times = log.events.map((e) => e.at);
    assert.deepEqual([...times].sort().reverse(), times, 'newest first');
  });

  it('a table by default, paged with --page; a missing account is refused', async () => {
    const first = parseJsonOutput(await runCli(['accounts', 'log', String(account), '--json'], env)) as Log;
    const text = await runCli(['accounts', 'log', String(account)], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^when \(UTC\)\s+who\s+from\s+what\s+key\s+detail/);
    assert.match(text.stdout, /operator\s+command line\s+plan changed/);
    const pages = Math.ceil(first.total / first.pageSize);
    assert.match(text.stdout, new RegExp(`Page 1 of ${pages}: ${first.total} events in the last 90 days\\.`));
    const page2 = parseJsonOutput(await runCli(['accounts', 'log', String(account), '--page', '2', '--json'], env)) as Log;
    assert.equal(page2.page, 2);
    assert.equal(page2.events.length, Math.max(0, Math.min(first.pageSize, first.total - first.pageSize)));
    assertRefused(await runCli(['accounts', 'log', '999'], env), /account 999 does not exist/);
    assertRefused(await runCli(['accounts', 'log', String(account), '--page', '0'], env), /--page/);
  });

  it('--kind and --key narrow the log, with the screen\'s rules: an unknown kind or another account\'s key is refused', async () => {
    const key = await createKey('filtered');
    await runCli(['keys', 'rename', String(key.id), 'filtered 2'], env);
    const ofKey = parseJsonOutput(await runCli(['accounts', 'log', String(account), '--key', String(key.id), '--json'], env)) as Log;
    assert.deepEqual(ofKey.events.map((e) => e.kind), ['key_renamed', 'key_created']);
    assert.ok(ofKey.events.every((e) => e.key?.id === key.id));
    const renames = parseJsonOutput(await runCli(['accounts', 'log', String(account), '--kind', 'key_renamed', '--json'], env)) as Log;
    assert.ok(renames.total >= 1 && renames.events.every((e) => e.kind === 'key_renamed'));
    const none = await runCli(['accounts', 'log', String(account), '--kind', 'signed_out'], env);
    assert.match(none.stdout, /no security events matching the filter in the last 90 days/);
    assertRefused(await runCli(['accounts', 'log', String(account), '--kind', 'key_deleted'], env), /unknown kind of event "key_deleted": one of key_created/);
    const other = parseJsonOutput(await runCli(['accounts', 'create', '--email', 'other-log@example.com', '--plan', 'enthusiast', '--json'], env)) as { id: number };
    assertRefused(await runCli(['accounts', 'log', String(other.id), '--key', String(key.id)], env), new RegExp(`key ${key.id} does not exist`));
    assertRefused(await runCli(['accounts', 'log', String(account), '--key', 'x'], env), /--key/);
  });
});
