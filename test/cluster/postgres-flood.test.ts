/**
 * Two `shelfapi serve` processes over one PostgreSQL database, metering in it (no REDIS_URL), one account
 * flooding both while another sends requests beside it: the flooding account gets exactly its quota over
 * both servers and 429 after it, nothing answers 503, and the other account is served in full. Its
 * latency is the bench's to measure (bench/flood.ts), not a loaded test machine's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SCOPES } from '../../src/domain/scopes.js';
import { migrateToLatest, openStore } from '../../src/store/database.js';
import { loadDataset } from '../../src/load/load-dataset.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { freshPostgresSchema } from '../helpers/test-app.js';

const QUOTA = 150;
const IN_FLIGHT = 40;
const SENT = 300;
const PLAN_LIMITS = JSON.stringify({ enthusiast: { monthly: QUOTA, perMinute: 1_000_000 }, addon: { monthly: 1_000_000, perMinute: 1_000_000 } });

describe('two servers, PostgreSQL metering: one account floods both', () => {
  let servers: ServerProcess[] = [];
  let keys: Record<string, string>;
  let dropSchema: () => Promise<void>;

  before(async () => {
    const pg = await freshPostgresSchema();
    dropSchema = pg.drop;
    const store = openStore({ dialect: 'postgres', url: pg.url });
    await migrateToLatest(store);
    const loaded = await loadDataset(
      store,
      {
        accounts: [
          { ref: 'flooder', email: 'flooder@example.com', plan: 'enthusiast' },
          { ref: 'other', email: 'other@example.com', plan: 'addon' },
        ],
        keys: ['flooder', 'other'].map((ref) => ({ ref, account: ref, name: ref, scopes: [...SCOPES] })),
        catalogue: [{ masterItemId: 1, name: 'Super Mario 64', slug: 'super-mario-64', category: 'game', platform: 'Nintendo 64', status: 'PUBLISHED' }],
      },
      { keyPrefix: 'shelf', now: Date.now() },
    );
    await store.close();
    keys = loaded.keys;
    const env = { DATABASE_URL: pg.url, PLAN_LIMITS };
    servers = await Promise.all([startServerProcess(env), startServerProcess(env)]);
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    await dropSchema();
  });

  const get = async (server: ServerProcess, account: string, path = '/catalogue/1'): Promise<string> => {
    const res = await fetch(server.base + path, { headers: { 'x-api-key': keys[account]! } });
    const body = (await res.json()) as { error?: string };
    return `${res.status}${body.error ? ` ${body.error}` : ''}`;
  };

  const tally = (list: string[]) => list.reduce<Record<string, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});

  test(`${IN_FLIGHT} in flight over both servers, ${SENT} sent on a quota of ${QUOTA}: exactly ${QUOTA} served, no 503, the other account all 200`, async (t) => {
    const flood: string[] = [];
    let sent = 0;
    const worker = async (w: number) => {
      while (sent < SENT) {
        sent++;
        flood.push(await get(servers[w % 2]!, 'flooder'));
      }
    };
    const beside: string[] = [];
    let flooding = true;
    const besideAccount = (async () => {
      for (let i = 0; flooding || i < 20; i++) {
        beside.push(await get(servers[i % 2]!, 'other'));
        await sleep(10);
      }
    })();
    await Promise.all(Array.from({ length: IN_FLIGHT }, (_, w) => worker(w)));
    flooding = false;
    await besideAccount;

    // On failure, why: the first warnings of a server that answered 503.
    if ([...flood, ...beside].some((s) => s.startsWith('503'))) {
      for (const server of servers) t.diagnostic(server.output().split('\n').filter((l) => /unavailable/.test(l)).slice(0, 2).join('\n').slice(0, 3000));
    }
    assert.deepEqual(tally(flood), { '200': QUOTA, '429 quota_exceeded': SENT - QUOTA });
    assert.deepEqual(tally(beside), { '200': beside.length }, 'the other account is served in full');
    for (const server of servers) {
      const res = await fetch(server.base + '/me', { headers: { 'x-api-key': keys.flooder! } });
      const me = (await res.json()) as { usage: { used: number; remaining: number } };
      assert.deepEqual([me.usage.used, me.usage.remaining], [QUOTA, 0], "the flooding account's count is its 200s, on either server");
    }
  });
});
