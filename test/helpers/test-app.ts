/**
 * Builds the real app (the same buildApp as production) over a fresh store, with a clock the test sets.
 * STORES lists the stores the suite runs against: SQLite always; PostgreSQL when TEST_POSTGRES_URL is set.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { ManualClock } from '../../src/clock.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { Dataset } from '../../src/domain/dataset.js';
import { buildApp, type App } from '../../src/http/app.js';
import { SqliteMeter } from '../../src/metering/sqlite-meter.js';
import type { Meter } from '../../src/metering/meter.js';
import { migrateToLatest, openStore, type Store } from '../../src/store/database.js';
import { loadDataset, type LoadResult } from '../../src/store/load/load-dataset.js';
import { FIXTURE_NOW, fixture } from './fixture.js';

export interface TestContext {
  app: App;
  store: Store;
  meter: Meter;
  clock: ManualClock;
  config: Readonly<Config>;
  loaded: LoadResult;
  /** GET (or another method) with a key from the fixture by ref, or a raw header set. */
  get(url: string, key?: string | null, options?: { method?: string; headers?: Record<string, string> }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface ContextOptions {
  env?: Record<string, string>;
  dataset?: Dataset;
  now?: string;
}

export async function createTestContext(options: ContextOptions = {}): Promise<TestContext> {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-test-'));
  const config = loadConfig({ DATABASE_URL: join(dir, 'test.sqlite'), ...options.env });
  const store = openStore(config.database);
  await migrateToLatest(store);
  const clock = new ManualClock(Date.parse(options.now ?? FIXTURE_NOW));
  const loaded = await loadDataset(store, options.dataset ?? fixture(), { keyPrefix: config.keyPrefix, now: clock.now() });
  const meter = new SqliteMeter(store.sqlite!);
  const app = await buildApp({ config, store, meter, clock, logger: false });
  await app.ready();
  return {
    app,
    store,
    meter,
    clock,
    config,
    loaded,
    get(url, key = 'alice', opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (key !== null) {
        const full = loaded.keys[key];
        if (full === undefined) throw new Error(`no fixture key ${key}`);
        headers['x-api-key'] = full;
      }
      return app.inject({ method: (opts.method ?? 'GET') as 'GET', url, headers });
    },
    async close() {
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const V1 = '/developer/v1';
