/**
 * A real `shelfapi serve` for the client's tests: a temp SQLite store filled through the CLI
 * (`shelfapi load --json`, the way operators make accounts and keys), tiny plan limits where a test must
 * reach one, and a fetch that records every attempt the client makes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Dataset } from '../../../src/domain/dataset.js';
import { SCOPES } from '../../../src/domain/scopes.js';
import { runCli, startServerProcess, type ServerProcess } from '../../../test/helpers/server-process.js';

export const PUBLISHED_IDS = Array.from({ length: 27 }, (_, i) => i + 1).filter((id) => id !== 5 && id !== 12);
/** Published items with a price record: every published one but 7 and 20. */
export const PRICED_IDS = PUBLISHED_IDS.filter((id) => id !== 7 && id !== 20);

/** A name the CSV must quote: comma, doubled quotes and a line break. */
export const TRICKY_NAME = 'Pokémon, "Gold" Edition\nLimited';

function itemName(id: number): string {
  return id === 3 ? TRICKY_NAME : `Item ${String(id).padStart(2, '0')}`;
}

export function dataset(): Dataset {
  return {
    accounts: [
      { ref: 'main', email: 'main@example.com', plan: 'enthusiast' },
      { ref: 'limited', email: 'limited@example.com', plan: 'addon' },
      { ref: 'lapsed', email: 'lapsed@example.com', plan: 'addon', planStatus: 'lapsed' },
    ],
    keys: [
      { ref: 'main', account: 'main', name: 'all scopes', scopes: [...SCOPES] },
      { ref: 'catalogue-only', account: 'main', name: 'catalogue only', scopes: ['catalogue:read'] },
      { ref: 'limited', account: 'limited', name: 'all scopes', scopes: [...SCOPES] },
      { ref: 'lapsed', account: 'lapsed', name: 'all scopes', scopes: [...SCOPES] },
    ],
    catalogue: Array.from({ length: 27 }, (_, i) => {
      const id = i + 1;
      return {
        masterItemId: id,
        name: itemName(id),
        slug: `item-${id}`,
        category: id % 3 === 0 ? 'console' : 'game',
        platform: id % 2 === 0 ? 'NES' : 'Nintendo 64',
        status: id === 5 ? ('DRAFT' as const) : id === 12 ? ('ARCHIVED' as const) : ('PUBLISHED' as const),
        releaseYear: id % 4 === 0 ? null : 1980 + id,
      };
    }),
    prices: [...PRICED_IDS, 5].map((id) => ({
      masterItemId: id,
      upc: String(100000000000 + id),
      loose: id + 0.5,
      cib: id % 2 === 0 ? null : id * 2,
      new: id * 10.25,
      scrapeDate: '2026-11-01T00:00:00.000Z',
    })),
    collection: [1, 2, 3, 4, 6].map((masterItemId, i) => ({
      id: i + 1,
      account: 'main',
      masterItemId,
      condition: 'CIB' as const,
      status: 'OWNED' as const,
      purchasePrice: 10,
      acquiredAt: '2025-01-01T00:00:00.000Z',
      location: 'shelf',
      isFavorite: false,
    })),
  };
}

export interface LiveServer {
  server: ServerProcess;
  /** The origin, e.g. http://127.0.0.1:41234, what a script passes as `baseUrl`. */
  origin: string;
  env: Record<string, string>;
  keys: Record<string, string>;
  accounts: Record<string, number>;
  stop(): Promise<void>;
}

/** Loads `data` into a fresh SQLite store through the CLI and starts a server over it. */
export async function startLiveServer(options: { env?: Record<string, string>; data?: Dataset } = {}): Promise<LiveServer> {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-client-'));
  const env = { DATABASE_URL: join(dir, 'store.sqlite'), ...options.env };
  const file = join(dir, 'dataset.json');
  writeFileSync(file, JSON.stringify(options.data ?? dataset()));
  const loaded = await runCli(['load', file, '--json'], env);
  assert.equal(loaded.code, 0, loaded.stderr);
  const { keys, accounts } = JSON.parse(loaded.stdout) as { keys: Record<string, string>; accounts: Record<string, number> };
  const server = await startServerProcess(env);
  return {
    server,
    origin: `http://127.0.0.1:${server.port}`,
    env,
    keys,
    accounts,
    async stop() {
      await server.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Attempt {
  url: string;
  status: number;
  requestId: string | null;
}

/** A `fetch` for `createShelfClient` that records every attempt, retries included. */
export function recordingFetch(): { attempts: Attempt[]; fetch: (request: Request) => Promise<Response> } {
  const attempts: Attempt[] = [];
  return {
    attempts,
    async fetch(request) {
      const response = await fetch(request);
      attempts.push({ url: request.url, status: response.status, requestId: response.headers.get('x-request-id') });
      return response;
    },
  };
}
