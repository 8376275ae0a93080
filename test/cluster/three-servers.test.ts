/**
 * Three `shelfapi serve` processes over one PostgreSQL database and one Redis, as operators run them
 * behind a load balancer: limits hold exactly across all of them, a killed server loses no counted
 * request, and a revoke or lapse is refused at once everywhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SCOPES } from '../../src/domain/scopes.js';
import { migrateToLatest, openStore } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { freshPostgresSchema, TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-app.js';

const PLAN_LIMITS = JSON.stringify({ addon: { perMinute: 60, monthly: 100_000 }, enthusiast: { perMinute: 100_000, monthly: 100 } });
const accounts = ['burst', 'quota', 'kill', 'revoke', 'lapse'];

describe('three servers over one PostgreSQL and one Redis', () => {
  let servers: ServerProcess[] = [];
  let env: Record<string, string>;
  let keys: Record<string, string>;
  let accountIds: Record<string, number>;
  let dropSchema: () => Promise<void>;

  before(async () => {
    const pg = await freshPostgresSchema();
    dropSchema = pg.drop;
    env = { DATABASE_URL: pg.url, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: testRedisPrefix('cluster'), PLAN_LIMITS };
    const store = openStore({ dialect: 'postgres', url: pg.url });
    await migrateToLatest(store);
    const loaded = await loadDataset(
      store,
      {
        accounts: accounts.map((ref) => ({ ref, email: `${ref}@example.com`, plan: ref === 'burst' ? 'addon' : 'enthusiast' })),
        keys: accounts.map((ref) => ({ ref, account: ref, name: ref, scopes: [...SCOPES] })),
        catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
      },
      { keyPrefix: 'shelf', now: Date.now() },
    );
    await store.close();
    keys = loaded.keys;
    accountIds = loaded.accounts;
    servers = await Promise.all([startServerProcess(env), startServerProcess(env), startServerProcess(env)]);
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    await dropSchema();
  });

  const get = (server: ServerProcess, account: string, path = '/catalogue/1') =>
    fetch(server.base + path, { headers: { 'x-api-key': keys[account]! } });

  async function statuses(account: string, count: number, targets: ServerProcess[]): Promise<Map<string, number>> {
    const results = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const res = await get(targets[i % targets.length]!, account);
        const body = (await res.json()) as { error?: string };
        return `${res.status}${body.error ? ` ${body.error}` : ''}`;
      }),
    );
    const counts = new Map<string, number>();
    for (const r of results) counts.set(r, (counts.get(r) ?? 0) + 1);
    return counts;
  }

  test('perMinute 60: 300 concurrent requests over three servers give exactly 60 successes', async () => {
    const counts = await statuses('burst', 300, servers);
    console.log('burst across servers:', Object.fromEntries(counts));
    assert.equal(counts.get('200'), 60);
    assert.equal(counts.get('429 rate_limited'), 240);
  });

  test('monthly 100: exactly 100 metered requests succeed over all servers', async () => {
    const counts = await statuses('quota', 160, servers);
    console.log('quota across servers:', Object.fromEntries(counts));
    assert.equal(counts.get('200'), 100);
    assert.equal(counts.get('429 quota_exceeded'), 60);
    for (const server of servers) {
      const me = (await (await get(server, 'quota', '/me')).json()) as { usage: { used: number; remaining: number } };
      assert.equal(me.usage.used, 100);
      assert.equal(me.usage.remaining, 0);
    }
  });

  test('a server killed with SIGKILL under load loses no counted request', async () => {
    let ok = 0;
    let cutOff = 0;
    let sent = 0;
    let killed = false;
    const victim = servers[1]!;
    const worker = async () => {
      while (sent < 90) {
        // After the kill, the load balancer sends only to the servers still alive.
        const alive = killed ? servers.filter((s) => s !== victim) : servers;
        const target = alive[sent % alive.length]!;
        sent++;
        try {
          const res = await get(target, 'kill');
          await res.arrayBuffer();
          if (res.status === 200) ok++;
        } catch {
          cutOff++; // in flight on the killed server when it died: the connection was cut
        }
        if (sent === 30 && !killed) {
          killed = true;
          victim.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 10 }, worker));
    await victim.exited;
    const me = (await (await get(servers[0]!, 'kill', '/me')).json()) as { usage: { used: number } };
    console.log(`killed one server: ${ok} metered 200s seen, ${cutOff} cut off in flight, usage.used ${me.usage.used}`);
    assert.ok(me.usage.used >= ok, `used ${me.usage.used} < ${ok} successes seen`);
    assert.ok(me.usage.used <= ok + cutOff, `used ${me.usage.used} > ${ok} + ${cutOff} in flight`);
    servers[1] = await startServerProcess(env);
  });

  test('a key revoked and a plan lapsed through the command line are refused on the next request to every server', async () => {
    for (const server of servers) assert.equal((await get(server, 'revoke')).status, 200);
    const list = await runCli(['keys', 'list', '--account', String(accountIds.revoke), '--json'], env);
    const [key] = JSON.parse(list.stdout) as Array<{ id: number }>;
    const revoked = await runCli(['keys', 'revoke', String(key!.id)], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    for (const server of servers) assert.equal((await get(server, 'revoke')).status, 401);

    for (const server of servers) assert.equal((await get(server, 'lapse')).status, 200);
    const lapsed = await runCli(['accounts', 'set-plan', String(accountIds.lapse), '--plan', 'enthusiast', '--plan-status', 'lapsed'], env);
    assert.equal(lapsed.code, 0, lapsed.stderr);
    for (const server of servers) {
      const res = await get(server, 'lapse');
      assert.equal(res.status, 403);
      assert.equal(((await res.json()) as { error: string }).error, 'forbidden');
    }
  });
});
