/** The OpenAPI document without a store: the app is built over an in-memory SQLite store, never listening. */
import { systemClock } from '../clock.js';
import { loadConfig } from '../config.js';
import { buildApp } from '../http/app.js';
import { openApiJson } from '../http/api/openapi.js';
import { SqliteMeter } from '../metering/sqlite-meter.js';
import { migrateToLatest, openStore } from '../store/database.js';

export async function buildOpenApiDocument(): Promise<string> {
  const config = loadConfig({});
  const store = openStore({ dialect: 'sqlite', path: ':memory:' });
  try {
    await migrateToLatest(store);
    const app = await buildApp({ config, store, meter: new SqliteMeter(store.sqlite!), clock: systemClock, logger: false });
    await app.ready();
    const json = openApiJson(app);
    await app.close();
    return json;
  } finally {
    await store.close();
  }
}
