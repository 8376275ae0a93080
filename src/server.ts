/**
 * Runs the API: migrates, picks the meter, listens on HOST:PORT, and serves /healthz, /readyz and the
 * Prometheus /metrics on OPS_PORT (never on the API port). SIGTERM or SIGINT: stop accepting, finish requests in flight, close
 * the pools, exit 0.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { systemClock } from './clock.js';
import type { Config } from './config.js';
import { buildApp, type App } from './http/app.js';
import { createMeter } from './metering/create-meter.js';
import type { Meter } from './metering/meter.js';
import { createUsageStats } from './metering/create-usage-stats.js';
import type { UsageStats } from './metering/usage-stats.js';
import { migrateToLatest, openStore, warmPool, type Store } from './store/database.js';
import { sql } from 'kysely';
import { serverLogDestination } from './observability/log-destination.js';
import { Metrics } from './observability/metrics.js';

export interface RunningServer {
  app: App;
  ops: FastifyInstance;
  store: Store;
  meter: Meter;
  stats: UsageStats;
  close(): Promise<void>;
}

async function storeReachable(store: Store): Promise<boolean> {
  try {
    await sql`select 1`.execute(store.db);
    return true;
  } catch {
    return false;
  }
}

export async function startServer(config: Readonly<Config>, options: { store?: Store } = {}): Promise<RunningServer> {
  const store = options.store ?? openStore(config.database);
  await migrateToLatest(store);
  await warmPool(store);
  const meter = await createMeter(config, store);
  const stats = await createUsageStats(config, store);
  const metrics = new Metrics({ processMetrics: true });
  // Standard output with a bound on the log waiting to be written (a slow reader must not grow the heap);
  // readable lines instead of JSON when it is a terminal.
  const logStream = serverLogDestination({ onDrop: () => metrics.logLinesDropped.inc() });
  const app = await buildApp({ config, store, meter, clock: systemClock, metrics, stats, logStream });
  const ops = Fastify({ logger: false });
  ops.get('/metrics', async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  ops.get('/healthz', async () => ({ status: 'ok' }));
  ops.get('/readyz', async (_request, reply) => {
    const [storeOk, meterOk] = await Promise.all([storeReachable(store), meter.ping()]);
    reply.code(storeOk && meterOk ? 200 : 503);
    return { store: storeOk ? 'ok' : 'unavailable', meter: meterOk ? 'ok' : 'unavailable' };
  });
  await app.listen({ host: config.host, port: config.port });
  await ops.listen({ host: config.host, port: config.opsPort });
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      await Promise.all([app.close(), ops.close()]);
      // The owners' statistics of the last requests are still in memory: write them before the store closes.
      await stats.close().catch((err: unknown) => app.log.error({ err }, 'could not write the last per-key statistics'));
      await meter.close();
      await store.close();
    })());
  return { app, ops, store, meter, stats, close };
}

/** Closes the server on SIGTERM/SIGINT and resolves when it is closed; a second signal exits at once. */
export function closeOnSignals(server: RunningServer): Promise<void> {
  return new Promise((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) process.exit(1);
      received = true;
      server.app.log.info({ signal }, 'shutting down: finishing requests in flight');
      // Requests in flight get at most 10 seconds.
      const timer = setTimeout(() => process.exit(1), 10_000);
      timer.unref();
      void server.close().then(resolve, () => process.exit(1));
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
}
