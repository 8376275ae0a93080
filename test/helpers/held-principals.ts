/**
 * For tests of principals held per server on PostgreSQL + Redis (src/http/api/api-pipeline.ts,
 * src/store/version-listener.ts): whether an app holds them, waiting until it uses them, and what a test
 * does to Redis or PostgreSQL to show which path a request took.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { versionListenerOf, type App } from '../../src/http/app.js';
import { accessKeys } from '../../src/metering/redis-access-versions.js';
import { RedisMeter } from '../../src/metering/redis-meter.js';
import { LISTENER_APPLICATION_NAME } from '../../src/store/version-listener.js';
import type { TestContext } from './test-app.js';

/** Whether the app uses held principals checked by the meter (PostgreSQL + Redis). */
export function holdsPrincipals(app: App): boolean {
  return versionListenerOf(app) !== null;
}

/** Resolves once every app's LISTEN connection listens, so that held principals are used. */
export async function principalsHeldBy(...apps: App[]): Promise<void> {
  for (const app of apps) await versionListenerOf(app)?.listening();
}

/** Deletes the account's access version from the context's Redis: the next request must read PostgreSQL. */
export async function forgetAccessVersion(ctx: TestContext, accountId: number): Promise<void> {
  if (!(ctx.meter instanceof RedisMeter) || ctx.config.redisUrl === null) throw new Error('forgetAccessVersion: not a single Redis');
  const redis = new Redis(ctx.config.redisUrl);
  try {
    await redis.del(accessKeys(ctx.meter.prefix, accountId)[0]);
  } finally {
    redis.disconnect();
  }
}

/** Ends every LISTEN connection of the servers on `databaseUrl`'s database, as an operator or a failover would. */
export async function terminateListeners(databaseUrl: string): Promise<number> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    const { rowCount } = await admin.query(
      'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = $1',
      [LISTENER_APPLICATION_NAME],
    );
    return rowCount ?? 0;
  } finally {
    await admin.end();
  }
}

/** Polls `check` until it holds, and returns how long that took; fails past `timeoutMs`. */
export async function within(timeoutMs: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(10);
  }
}

/**
 * Resolves once the app serves the store's current data version: at once where it reads it on every request,
 * within a second on PostgreSQL + Redis (the NOTIFY of migration 0014). For tests that load or import and
 * then read through the API.
 */
export async function dataSeenBy(ctx: TestContext, app: App = ctx.app): Promise<void> {
  const listener = versionListenerOf(app);
  if (listener === null) return;
  const { version } = await ctx.store.db.selectFrom('data_version').select('version').where('id', '=', 1).executeTakeFirstOrThrow();
  await within(1000, 'the data version notified', async () => listener.dataVersion === Number(version));
}
